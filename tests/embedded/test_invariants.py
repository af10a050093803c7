"""hypothesis: random sequences of applies, deletes and clock advances on the embedded cluster
keep pykai's promises (issue 3): no non-preemptible pod is evicted, no gang runs below its
minimum past the grace period, no node or GPU is over-allocated, and no job is preempted twice
in a row by the same preemptor."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pykai.embedded.cluster import EmbeddedCluster
from pykai.engine.queue_sums import QueueUsage
from pykai.engine.state import ClusterState
from pykai.engine.whatif import load_state
from pykai.model import constants as c
from pykai.model.builders import node, pod, podgroup, queue
from pykai.model.quantity import count
from pykai.model.resources import Resources

PRIORITIES = ["train", "build-preemptible", "build", "inference"]
GRACE = 60.0

job_st = st.fixed_dictionaries(
    {
        "queue": st.sampled_from(["a", "b"]),
        "size": st.integers(1, 3),
        "min": st.integers(1, 3),
        "gpus": st.sampled_from([1, 2]),
        "priority": st.sampled_from(PRIORITIES),
    }
)
op_st = st.one_of(
    st.tuples(st.just("submit"), job_st),
    st.tuples(st.just("delete"), st.integers(0, 20)),
    st.tuples(st.just("advance"), st.sampled_from([10, 30, 61])),
)


def non_preemptible(cluster: EmbeddedCluster, group: str) -> bool:
    pg = cluster.get("PodGroup", group, "default")
    return pg is not None and pg["spec"]["priorityClassName"] in ("build", "inference")


def two_nodes_two_queues(path: str | None) -> EmbeddedCluster:
    """Two nodes of 4 GPUs and two queues of 4 GPUs each (in memory, or at ``path``)."""
    cluster = EmbeddedCluster.open(path)
    cluster.apply(
        [
            node("n1", gpus=4),
            node("n2", gpus=4),
            queue("a", gpu=(4, -1, 1)),
            queue("b", gpu=(4, -1, 1)),
        ]
    )
    return cluster


def run_op(cluster: EmbeddedCluster, op: str, arg: Any, name: str) -> None:
    """Submit job ``name``, delete a pod, or advance the clock."""
    if op == "submit":
        objs = [
            podgroup(
                name,
                queue=arg["queue"],
                min_member=min(arg["min"], arg["size"]),
                priority_class=arg["priority"],
            )
        ]
        objs += [
            pod(f"{name}-{i}", group=name, gpus=arg["gpus"], cpu="100m") for i in range(arg["size"])
        ]
        cluster.apply(objs)
    elif op == "delete":
        pods = cluster.list("Pod")
        if pods:
            target = pods[arg % len(pods)]["metadata"]["name"]
            cluster.delete("Pod", target, "default")
    else:
        cluster.advance(arg)


def group_evictions(cluster: EmbeddedCluster) -> list[tuple[str, str, str, str]]:
    """(PodGroup, KAI action, message, time) of every ``Evict`` event on a PodGroup (the
    message ends with "(action: <action>)")."""
    found = []
    for event in cluster.list("Event"):
        if event["reason"] == "Evict" and event["involvedObject"]["kind"] == "PodGroup":
            message = event["message"]
            action = message.rsplit("(action: ", 1)[1].rstrip(")")
            found.append(
                (event["involvedObject"]["name"], action, message, event["firstTimestamp"])
            )
    return found


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(op_st, min_size=1, max_size=12))
def test_promises_hold(ops: list[tuple[str, Any]]) -> None:
    cluster = two_nodes_two_queues(None)
    below_since: dict[str, float] = {}
    evictions: set[tuple[str, str, str]] = set()  # one per eviction of a job, not per pod
    for number, (op, arg) in enumerate(ops):
        run_op(cluster, op, arg, f"j{number}")
        now = cluster.now()
        for group, action, message, _ in group_evictions(cluster):
            assert not non_preemptible(cluster, group) or action == "stalegangeviction", message
        used: dict[str, float] = {}
        for p in cluster.list("Pod"):
            node_name = p["spec"].get("nodeName")
            if node_name:
                limits = p["spec"]["containers"][0]["resources"]["limits"]
                used[node_name] = used.get(node_name, 0.0) + count(
                    limits.get("nvidia.com/gpu", "0")
                )
        assert all(v <= 4 for v in used.values()), used
        for pg in cluster.list("PodGroup"):
            name = pg["metadata"]["name"]
            running = (pg.get("status") or {}).get("running", 0)
            if 0 < running < pg["spec"]["minMember"]:
                below_since.setdefault(name, now)
                assert now - below_since[name] <= GRACE, (
                    f"{name} below its minimum since {below_since[name]}"
                )
            else:
                below_since.pop(name, None)
        for victim, action, message, when in group_evictions(cluster):
            if action == "preempt":
                preemptor = message.split("Preempted by ")[-1].split(" ")[0]
                evictions.add((victim, preemptor, when))
        pairs = [f"{victim}>{preemptor}" for victim, preemptor, _ in evictions]
        assert len(pairs) == len(set(pairs)), (
            f"a job was preempted twice by the same preemptor: {pairs}"
        )


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(op_st, min_size=1, max_size=10))
def test_status_of_what_changed_is_the_full_status(ops: list[tuple[str, Any]]) -> None:
    """Each round writes status only for the jobs that changed (issue 12); a command opening
    the file afresh checks every object's status, and must find nothing left to write."""
    with tempfile.TemporaryDirectory() as folder:
        path = str(Path(folder) / "cluster.db")
        cluster = two_nodes_two_queues(path)
        for number, (op, arg) in enumerate(ops):
            run_op(cluster, op, arg, f"j{number}")
        fresh = EmbeddedCluster.open(path)
        fresh.settle()
        assert fresh.writes == 0


def _rounded(amount: Resources) -> tuple[float, float, float]:
    return round(amount.cpu, 6), round(amount.memory), round(amount.gpu, 6)


def _queue_sums(usage: QueueUsage) -> tuple[tuple[float, float, float], ...]:
    return tuple(map(_rounded, (usage.allocated, usage.allocated_non_preemptible, usage.requested)))


def counted(state: ClusterState) -> dict[str, Any]:
    """Everything the engine counts: each node's use, each task's place, each job's counters,
    each queue's sums, the jobs with pending pods."""
    state.ensure_current()
    nodes = state.nodes
    return {
        "nodes": {
            name: (nodes.used[i].round(6).tolist(), nodes.releasing[i].round(6).tolist())
            for name, i in nodes.index.items()
        },
        "tasks": {
            uid: (t.status, t.node, t.gpu_groups, t.job_key, _rounded(t.request))
            for uid, t in state.tasks.items()
        },
        "jobs": {
            key: (
                job.running,
                job.active,
                job.alive,
                job.pending,
                _rounded(job.allocated),
                _rounded(job.pending_request),
                job.last_start,
                job.stale_since,
            )
            for key, job in state.jobs.items()
        },
        "queues": {  # a queue whose jobs are all gone may keep sums of zero
            name: sums for name, u in state.usage.items() if any(map(any, sums := _queue_sums(u)))
        },
        "pending": sorted(state.pending_jobs),
    }


def shared_gpu_job(name: str) -> list[Any]:
    """A job of two pods that each take half a GPU."""
    half = {c.GPU_FRACTION_ANNOTATION: "0.5"}
    return [podgroup(name, queue="a", min_member=2)] + [
        pod(f"{name}-{i}", group=name, annotations=half, cpu="100m") for i in range(2)
    ]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.one_of(op_st, st.tuples(st.just("evict"), st.integers(0, 20))), max_size=10))
def test_the_state_kept_by_writes_counts_as_one_loaded_from_the_objects(
    ops: list[tuple[str, Any]],
) -> None:
    """Every write is read back into the engine (a bind or a start without touching a sum):
    what it counts then is what a state built afresh from the stored objects counts."""
    cluster = two_nodes_two_queues(None)
    cluster.apply(shared_gpu_job("shared"))
    for number, (op, arg) in enumerate([("evict", 0), *ops]):
        if op == "evict":  # as an eviction does it: the pod terminates over its grace period
            if pods := cluster.list("Pod"):
                with cluster.batch():
                    cluster.host.delete(pods[arg % len(pods)])
                cluster.settle()
        else:
            run_op(cluster, op, arg, f"j{number}")
        stored = [
            obj
            for kind in ("PriorityClass", "Queue", "Node", "PodGroup", "Pod")
            for obj in cluster.list(kind)
        ]
        assert counted(cluster.state) == counted(load_state(stored)), f"after {op} {arg}"
