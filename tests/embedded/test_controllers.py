"""The controllers of the embedded cluster, driven by a scheduler with fixed decisions: binder,
fake kubelet, evictor and status, each checked for what it writes and for settling."""

from __future__ import annotations

from pathlib import Path

from pykai.embedded.cluster import EmbeddedCluster
from pykai.embedded.sqlite import Store
from pykai.engine.decisions import Bind, CycleResult, Evict, QueueStatus, Reason
from pykai.engine.jobs import TaskStatus
from pykai.engine.state import ClusterState
from pykai.model.builders import node, pod, podgroup, queue
from pykai.model.meta import Obj, format_time
from pykai.model.queue_status import queue_figures
from pykai.model.resources import Resources

from .conftest import ScriptedScheduler, dump, scripted

# the fields of KAI's Queue status (its CRD prunes any other)
KAI_QUEUE_STATUS = {
    "childQueues",
    "allocated",
    "allocatedNonPreemptible",
    "requested",
    "conditions",
}


def stored(cluster: EmbeddedCluster, kind: str, name: str) -> Obj:
    obj = cluster.get(kind, name, "default")
    assert obj is not None, f"{kind} {name} is missing"
    return obj


def bind_of(cluster: EmbeddedCluster, name: str, node_name: str, *groups: str) -> Bind:
    uid = stored(cluster, "Pod", name)["metadata"]["uid"]
    return Bind("default", name, uid, node_name, groups, 0.5 if groups else 0.0)


def reasons(cluster: EmbeddedCluster, kind: str, name: str) -> list[tuple[str, str, int]]:
    return [(e["type"], e["reason"], e["count"]) for e in cluster.events_for(kind, name, "default")]


def test_binder_sets_node_gpu_groups_env_and_records_the_bind(tmp_path: Path) -> None:
    path = tmp_path / "c.db"
    scheduler = ScriptedScheduler()
    cluster = scripted(path, scheduler)
    shared = pod("shared", annotations={"gpu-fraction": "0.5"})
    shared["spec"]["containers"].insert(0, {"name": "sidecar", "image": "busybox"})
    shared["metadata"]["annotations"]["gpu-fraction-container-name"] = "main"
    cluster.apply([node("n1", gpus=2), shared])
    group = stored(cluster, "Pod", "shared")["metadata"]["annotations"]["pod-group-name"]
    started = cluster.now()
    scheduler.script.append(
        CycleResult(
            binds=[bind_of(cluster, "shared", "n1", "gpu-a", "gpu-b")],
            started={f"default/{group}": started},
        )
    )
    assert cluster.settle() == 2  # the bind and the kubelet, then a quiet round

    bound = stored(cluster, "Pod", "shared")
    assert bound["spec"]["nodeName"] == "n1"
    labels = bound["metadata"]["labels"]
    assert labels["runai-gpu-group"] == "gpu-a" and labels["runai-gpu-group/gpu-b"] == "gpu-b"
    annotations = bound["metadata"]["annotations"]
    assert annotations["pykai.io/gpu-portion"] == "0.50"
    assert annotations["pykai.io/visible-devices"] == "gpu-a,gpu-b"
    sidecar, main = bound["spec"]["containers"]
    assert "env" not in sidecar
    assert main["env"] == [
        {"name": "GPU_PORTION", "value": "0.50"},
        {"name": "NVIDIA_VISIBLE_DEVICES", "value": "gpu-a,gpu-b"},
    ]
    event = cluster.events_for("Pod", "shared", "default")[0]
    assert (event["reason"], event["message"]) == (
        "Scheduled",
        "Successfully assigned default/shared to n1",
    )
    podgroup_annotations = stored(cluster, "PodGroup", group)["metadata"]["annotations"]
    assert podgroup_annotations["kai.scheduler/last-start-timestamp"] == format_time(started)
    before = dump(path)
    assert cluster.settle() == 1
    assert dump(path) == before


def test_binder_leaves_pods_that_are_gone_or_already_bound(tmp_path: Path) -> None:
    scheduler = ScriptedScheduler()
    cluster = scripted(tmp_path / "c.db", scheduler)
    cluster.apply([node("n1"), node("n2"), pod("placed", node_name="n1")])
    placed = bind_of(cluster, "placed", "n2")
    ghost = Bind("default", "ghost", "no-uid", "n2")
    scheduler.script.append(CycleResult(binds=[placed, ghost]))
    assert cluster.settle() == 1
    assert stored(cluster, "Pod", "placed")["spec"]["nodeName"] == "n1"


def test_kubelet_runs_bound_pods_on_nodes_that_exist(tmp_path: Path) -> None:
    cluster = scripted(tmp_path / "c.db", ScriptedScheduler())
    cluster.apply(
        [
            node("n1"),
            pod("here", node_name="n1"),
            pod("elsewhere", node_name="n2"),
            pod("foreign", node_name="n1", scheduler="default-scheduler"),
        ]
    )
    for name in ("here", "foreign"):
        status = stored(cluster, "Pod", name)["status"]
        assert status["phase"] == "Running" and status["startTime"] == format_time(cluster.now())
        conditions = {c["type"]: c["status"] for c in status["conditions"]}
        assert conditions["PodScheduled"] == conditions["Ready"] == "True"
    assert "status" not in stored(cluster, "Pod", "elsewhere")
    cluster.apply([node("n2")])
    assert stored(cluster, "Pod", "elsewhere")["status"]["phase"] == "Running"


def test_an_eviction_terminates_the_pod_over_its_grace_period_and_says_why(
    tmp_path: Path,
) -> None:
    scheduler = ScriptedScheduler()
    cluster = scripted(tmp_path / "c.db", scheduler)
    cluster.apply(
        [
            node("n1"),
            podgroup("g", queue="default-queue", min_member=1),
            pod("g-0", group="g", node_name="n1"),
            pod("g-1", group="g", node_name="n1"),
        ]
    )
    uid = stored(cluster, "Pod", "g-0")["metadata"]["uid"]
    message = "Preempted by default/serve in queue default-queue"
    scheduler.script.append(
        CycleResult(evictions=[Evict("default", "g-0", uid, "default/g", "Preempted", message)])
    )
    evicted_at = cluster.now()
    cluster.settle()
    terminating = stored(cluster, "Pod", "g-0")  # Kubernetes' default grace: 30 s
    assert terminating["metadata"]["deletionTimestamp"] == format_time(evicted_at + 30)
    task = cluster.state.task_by_key("default", "g-0")
    assert task is not None and task.status == TaskStatus.RELEASING  # still holds its node
    said = f"{message} (action: preempt)"
    assert reasons(cluster, "Pod", "g-0")[-1] == ("Normal", "Evict", 1)
    group_events = cluster.events_for("PodGroup", "g", "default")
    assert [(e["type"], e["reason"], e["message"]) for e in group_events] == [
        ("Normal", "Evict", f"pod g-0: {said}")
    ]
    assert queue_figures(stored(cluster, "Queue", "default-queue")["status"])["evictions"] == 1
    cluster.advance(29)
    assert cluster.get("Pod", "g-0", "default") is not None
    cluster.advance(1)
    assert cluster.get("Pod", "g-0", "default") is None
    assert cluster.state.task_by_key("default", "g-0") is None
    assert stored(cluster, "Pod", "g-1")["status"]["phase"] == "Running"
    assert queue_figures(stored(cluster, "Queue", "default-queue")["status"])["evictions"] == 1


def steady_result() -> CycleResult:
    figures = Resources(1500, 2**30, 0.5)
    queue = QueueStatus(figures, figures, figures, Resources(), figures)
    why = [Reason("OverLimit", "queue default-queue would exceed its gpu limit")]
    return CycleResult(queues={"default-queue": queue}, unschedulable={"default/g": why})


def test_status_is_written_once_and_settles(tmp_path: Path) -> None:
    path = tmp_path / "c.db"
    scheduler = ScriptedScheduler(steady=steady_result())
    cluster = scripted(path, scheduler)
    cluster.apply([podgroup("g", queue="default-queue", min_member=2)])
    cluster.apply([pod(f"g-{i}", group="g", gpus=1) for i in range(2)])

    queue = stored(cluster, "Queue", "default-queue")["status"]
    assert set(queue) <= KAI_QUEUE_STATUS  # what KAI's Queue schema keeps
    listed = {"cpu": "1500m", "memory": "1Gi", "nvidia.com/gpu": "500m"}
    figures = queue_figures(queue)
    assert queue["allocated"] == figures["fairShare"] == figures["deserved"] == listed
    assert queue["allocatedNonPreemptible"] == {"cpu": "0", "memory": "0", "nvidia.com/gpu": "0"}
    parent = stored(cluster, "Queue", "default-parent-queue")["status"]
    assert parent["childQueues"] == ["default-queue"]

    status = stored(cluster, "PodGroup", "g")["status"]
    assert (status["phase"], status["running"], status["pending"]) == ("Pending", 0, 2)
    assert status["resourcesStatus"]["requested"]["nvidia.com/gpu"] == "2"
    # a queue requests what its PodGroups request (KAI's queue controller), whatever the
    # engine's figure
    assert queue["requested"] == status["resourcesStatus"]["requested"]
    (condition,) = status["schedulingConditions"]
    assert condition["type"] == "UnschedulableOnNodePool" and condition["status"] == "True"
    assert condition["nodePool"] == "default" and condition["transitionID"]
    assert condition["reasons"] == [
        {"reason": "OverLimit", "message": "queue default-queue would exceed its gpu limit"}
    ]
    assert reasons(cluster, "Pod", "g-0") == [("Warning", "Unschedulable", 1)]
    assert reasons(cluster, "PodGroup", "g") == [("Normal", "Unschedulable", 1)]  # as KAI
    pod_condition = next(
        c
        for c in stored(cluster, "Pod", "g-0")["status"]["conditions"]
        if c["type"] == "PodScheduled"
    )
    assert (pod_condition["status"], pod_condition["reason"]) == ("False", "Unschedulable")
    assert "OverLimit" in pod_condition["message"]

    before = dump(path)
    assert cluster.settle() == 1
    assert dump(path) == before

    cluster.advance(30)  # still unschedulable, for the same reason: nothing new is said
    assert reasons(cluster, "Pod", "g-1") == [("Warning", "Unschedulable", 1)]
    assert stored(cluster, "PodGroup", "g")["status"]["schedulingConditions"] == [condition]


def test_the_condition_clears_when_nothing_is_pending(tmp_path: Path) -> None:
    scheduler = ScriptedScheduler(steady=steady_result())
    cluster = scripted(tmp_path / "c.db", scheduler)
    cluster.apply([node("n1"), podgroup("g", queue="default-queue"), pod("g-0", group="g")])
    assert stored(cluster, "PodGroup", "g")["status"]["schedulingConditions"]
    scheduler.steady = CycleResult()
    scheduler.script.append(CycleResult(binds=[bind_of(cluster, "g-0", "n1")]))
    cluster.settle()
    status = stored(cluster, "PodGroup", "g")["status"]
    assert (status["phase"], status["running"], status["pending"]) == ("Running", 1, 0)
    assert "schedulingConditions" not in status


class Restless:
    """A scheduler that restarts a job on every cycle: the cluster never settles."""

    def __init__(self) -> None:
        self.cycles = 0

    def run_cycle(self, state: ClusterState, now: float) -> CycleResult:
        self.cycles += 1
        return CycleResult(started={"default/g": now + self.cycles})


def test_settle_gives_up_after_max_cycles_and_schedule_runs_exactly_n(tmp_path: Path) -> None:
    runner = Restless()
    cluster = EmbeddedCluster(Store(tmp_path / "c.db"), scheduler=runner)
    cluster.apply([podgroup("g", queue="default-queue")], max_cycles=5)
    assert runner.cycles == 5
    assert cluster.settle(max_cycles=3) == 3
    cluster.schedule(cycles=2)
    assert runner.cycles == 10


def test_a_spent_search_budget_is_a_warning_on_the_queues_left_untried(tmp_path: Path) -> None:
    """An action stopped by its search budget: a warning on each queue with jobs it did not
    try, saying how many; the same warning next cycle counts up; queues it tried get none."""
    untried = CycleResult(out_of_budget={"reclaim": 3}, untried={"reclaim": {"default-queue": 3}})
    scheduler = ScriptedScheduler()
    cluster = scripted(tmp_path / "c.db", scheduler)
    cluster.apply([node("n1"), queue("other")])
    scheduler.script.append(untried)
    cluster.schedule()
    cluster.advance(10)  # settles with nothing left untried: no warning
    scheduler.script.append(untried)
    cluster.schedule()
    events = cluster.events_for("Queue", "default-queue", "")
    assert [(e["type"], e["reason"], e["count"]) for e in events] == [
        ("Warning", "SearchBudgetSpent", 2)
    ]
    assert "reclaim spent its search budget" in events[0]["message"]
    assert "3 pending job(s) of this queue were not tried" in events[0]["message"]
    assert cluster.events_for("Queue", "other", "") == []


def test_a_pod_with_a_duration_succeeds_after_running_that_long_and_frees_its_gpus() -> None:
    cluster = EmbeddedCluster.open(None)
    first = pod("first", gpus=8, annotations={"pykai.io/duration": "1m"})
    cluster.apply([node("n1", gpus=8), first])
    assert stored(cluster, "Pod", "first")["status"]["phase"] == "Running"
    cluster.apply([pod("second", gpus=8)])  # waits: the node's GPUs are taken
    assert not stored(cluster, "Pod", "second")["spec"].get("nodeName")
    cluster.advance(59)
    assert stored(cluster, "Pod", "first")["status"]["phase"] == "Running"
    cluster.advance(1)
    assert stored(cluster, "Pod", "first")["status"]["phase"] == "Succeeded"
    assert stored(cluster, "Pod", "second")["status"]["phase"] == "Running"


def test_an_unreadable_duration_never_ends_the_pod() -> None:
    cluster = EmbeddedCluster.open(None)
    cluster.apply([node("n1"), pod("p", annotations={"pykai.io/duration": "soon"})])
    cluster.advance(3600)
    assert stored(cluster, "Pod", "p")["status"]["phase"] == "Running"
