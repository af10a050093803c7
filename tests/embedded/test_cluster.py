"""The embedded cluster with the real scheduler: seeding, apply and its validation, delete,
configuration, persistence and settling."""

from __future__ import annotations

from pathlib import Path

import pytest

from pykai.controllers.status import queue_figures
from pykai.dashboard.memory import from_event
from pykai.embedded.cluster import ApplyOutcome, EmbeddedCluster, NamespaceNotFound
from pykai.embedded.sqlite import Store
from pykai.engine.decisions import CycleResult
from pykai.engine.state import ClusterState
from pykai.model.builders import node, pod, podgroup, queue
from pykai.model.errors import ValidationError

from .conftest import ScriptedScheduler, dump


def test_a_fresh_cluster_looks_like_kai_installed(tmp_path: Path) -> None:
    cluster = EmbeddedCluster.open(tmp_path / "c.db")
    queues = {q["metadata"]["name"]: q["spec"] for q in cluster.list("Queue")}
    assert queues["default-queue"]["parentQueue"] == "default-parent-queue"
    assert "parentQueue" not in queues["default-parent-queue"]
    for spec in queues.values():
        for resource in ("cpu", "gpu", "memory"):
            assert spec["resources"][resource] == {"quota": 0, "limit": -1, "overQuotaWeight": 1}
    classes = {pc["metadata"]["name"]: pc["value"] for pc in cluster.list("PriorityClass")}
    assert classes == {"train": 50, "build-preemptible": 75, "build": 100, "inference": 125}
    namespaces = {n["metadata"]["name"] for n in cluster.list("Namespace")}
    assert namespaces == {
        "default",
        "kube-system",
        "kube-public",
        "kube-node-lease",
        "kai-scheduler",
    }


def test_apply_can_refuse_missing_namespaces_as_an_api_server(tmp_path: Path) -> None:
    cluster = EmbeddedCluster.open(tmp_path / "c.db")
    with pytest.raises(NamespaceNotFound, match='namespaces "a" not found') as refused:
        cluster.apply([pod("p", namespace="b"), pod("q", namespace="a")], create_namespaces=False)
    assert refused.value.names == ["a", "b"]
    assert cluster.list("Pod", None) == [] and cluster.get("Namespace", "a") is None


def test_apply_reports_outcomes_creates_namespaces_and_refuses_unknown_kinds(
    tmp_path: Path,
) -> None:
    cluster = EmbeddedCluster.open(tmp_path / "c.db")
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}}
    objects = [node("n1", gpus=4), pod("p", namespace="team"), secret]
    assert cluster.apply(objects) == [
        ApplyOutcome("Node", "", "n1", "created"),
        ApplyOutcome("Pod", "team", "p", "created"),
        ApplyOutcome("Secret", "default", "s", "created"),
    ]
    assert cluster.get("Namespace", "team") is not None
    assert cluster.get("Secret", "s") is not None
    assert [o.action for o in cluster.apply(objects)] == ["unchanged"] * 3
    widget = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}}
    with pytest.raises(ValidationError, match='no matches for kind "Widget"'):
        cluster.apply([widget])  # as the apiserver, which has no such kind
    assert cluster.get("Widget", "w") is None
    assert [o.action for o in cluster.apply([node("n1", gpus=8)])] == ["configured"]
    assert [p["metadata"]["name"] for p in cluster.list("Pod", "team")] == ["p"]
    assert cluster.list("Pod", "default") == []


def test_a_gang_runs_and_reapplying_it_changes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "c.db"
    cluster = EmbeddedCluster.open(path)
    objects = [node("n1", gpus=4), podgroup("g", queue="default-queue", min_member=2)]
    objects += [pod(f"g-{i}", group="g", gpus=1) for i in range(2)]
    cluster.apply(objects)
    group = cluster.get("PodGroup", "g", "default")
    assert group is not None and group["status"]["phase"] == "Running"
    assert group["metadata"]["annotations"]["kai.scheduler/last-start-timestamp"]
    before = dump(path)
    assert {o.action for o in cluster.apply(objects)} == {"unchanged"}
    assert cluster.settle() == 1
    assert dump(path) == before


def test_a_rejected_apply_writes_nothing_and_names_every_problem(tmp_path: Path) -> None:
    path = tmp_path / "c.db"
    cluster = EmbeddedCluster.open(path)
    cluster.apply([node("n1")])
    before = dump(path)
    with pytest.raises(ValidationError) as error:
        cluster.apply(
            [
                queue("ok"),
                queue("bad", parent="nowhere"),
                pod("x", annotations={"gpu-fraction": "2"}),
                {"apiVersion": "v1", "kind": "Pod", "metadata": {}},
                {"kind": "SchedulingShard", "metadata": {"name": "default"}},
            ]
        )
    text = str(error.value)
    assert len(error.value.problems) == 4, text
    assert 'Queue "bad"' in text and "nowhere" in text
    assert 'Pod "x"' in text and "gpu-fraction" in text
    assert "metadata.name: is required" in text and "apiVersion/kind" in text
    assert dump(path) == before


def test_a_bad_scheduler_config_is_rejected(tmp_path: Path) -> None:
    cluster = EmbeddedCluster.open(tmp_path / "c.db")
    shard = {
        "apiVersion": "kai.scheduler/v1",
        "kind": "SchedulingShard",
        "metadata": {"name": "default"},
        "spec": {"placementStrategy": {"gpu": "scatter"}},
    }
    with pytest.raises(ValidationError, match="SchedulingShard"):
        cluster.apply([shard])
    assert cluster.get("SchedulingShard", "default") is None


def test_the_scheduler_config_comes_from_the_default_shard(tmp_path: Path) -> None:
    cluster = EmbeddedCluster.open(tmp_path / "c.db")
    default = cluster.config
    assert default.placement.gpu == "binpack"
    shard = {
        "apiVersion": "kai.scheduler/v1",
        "kind": "SchedulingShard",
        "metadata": {"name": "default"},
        "spec": {"placementStrategy": {"gpu": "spread", "cpu": "spread"}},
    }
    cluster.apply([shard])
    configured = cluster.config
    assert configured.placement.gpu == "spread" and not configured.consolidation_enabled


def test_everything_survives_a_reopen(tmp_path: Path) -> None:
    path = tmp_path / "c.db"
    first = EmbeddedCluster.open(path)
    first.apply([node("n1", gpus=4), pod("p", gpus=2)])
    first.advance(60)
    clock = first.now()
    first.close()
    again = EmbeddedCluster.open(path)
    assert again.now() == clock
    assert len(again.list("Queue")) == 2  # not seeded twice
    bound = again.get("Pod", "p", "default")
    assert bound is not None and bound["spec"]["nodeName"] == "n1"
    again.apply([pod("q", gpus=2), pod("r", gpus=2)])
    placed = [(again.get("Pod", name, "default") or {})["spec"].get("nodeName") for name in "qr"]
    assert sorted(placed, key=str) == [None, "n1"]  # room for one more only


def test_deleting_a_queue_in_use_is_rejected_until_its_users_are_gone(tmp_path: Path) -> None:
    cluster = EmbeddedCluster.open(tmp_path / "c.db")
    cluster.apply(
        [
            node("n1"),
            queue("dept"),
            queue("team", parent="dept"),
            pod("p", labels={"kai.scheduler/queue": "team"}),
        ]
    )
    with pytest.raises(ValidationError, match='still used by queue "team"'):
        cluster.delete("Queue", "dept")
    with pytest.raises(ValidationError, match=r"still used by 1 PodGroup .*delete"):
        cluster.delete("Queue", "team")
    assert cluster.delete("Pod", "p", "default")
    assert cluster.list("PodGroup") == []
    assert cluster.delete("Queue", "team") and cluster.delete("Queue", "dept")
    assert not cluster.delete("Queue", "dept")


def test_pre_bound_pods_are_accepted_and_count_on_their_node(tmp_path: Path) -> None:
    cluster = EmbeddedCluster.open(tmp_path / "c.db")
    cluster.apply(
        [
            node("n1", gpus=4),
            pod("old", gpus=2, node_name="n1"),
            pod("foreign", gpus=1, node_name="n1", scheduler="default-scheduler"),
        ]
    )
    cluster.apply([pod("new", gpus=2)])
    new = cluster.get("Pod", "new", "default")
    assert new is not None and "nodeName" not in new["spec"]  # 1 GPU left
    events = cluster.events_for("Pod", "new", "default")
    assert [e["reason"] for e in events] == ["Unschedulable"]


def test_unschedulable_events_are_recorded_once_per_instant(tmp_path: Path) -> None:
    cluster = EmbeddedCluster.open(tmp_path / "c.db")
    cluster.apply([node("n1", gpus=1), pod("big", gpus=4)])
    cluster.schedule(cycles=3)
    (event,) = cluster.events_for("Pod", "big", "default")
    assert event["reason"] == "Unschedulable" and event["count"] == 1
    assert "needs 4" in event["message"]


def test_preemption_is_recorded_on_pods_podgroup_and_queue(tmp_path: Path) -> None:
    cluster = EmbeddedCluster.open(tmp_path / "c.db")
    cluster.apply([node("n1", gpus=2), queue("team", gpu=(2, -1, 1))])
    cluster.apply(
        [podgroup("train", queue="team", min_member=2)]
        + [pod(f"t{i}", group="train", gpus=1) for i in range(2)]
    )
    cluster.apply(
        [
            podgroup("serve", queue="team", priority_class="inference"),
            pod("s0", group="serve", gpus=2),
        ]
    )
    waiting = cluster.get("Pod", "s0", "default")
    assert waiting is not None and not waiting["spec"].get("nodeName")  # victims terminating
    for victim in ("t0", "t1"):
        terminating = cluster.get("Pod", victim, "default")
        assert terminating is not None and terminating["metadata"]["deletionTimestamp"]
    cluster.advance(30)  # the victims' grace period (terminationGracePeriodSeconds 30)
    served = cluster.get("Pod", "s0", "default")
    assert served is not None and served["spec"]["nodeName"] == "n1"
    assert cluster.get("Pod", "t0", "default") is None
    team = cluster.get("Queue", "team")
    assert team is not None and queue_figures(team["status"])["evictions"] == 2
    messages = [
        e["message"]
        for e in cluster.events_for("PodGroup", "train", "default")
        if e["reason"] == "Evict" and e["type"] == "Normal"
    ]
    assert len(messages) == 2
    assert all("Preempted by default/serve" in m and "in queue team" in m for m in messages)
    assert all("(action: preempt)" in m for m in messages)


def test_an_eviction_event_carries_its_action_and_preemptor_as_fields(tmp_path: Path) -> None:
    """As core/v1 Events can: ``action`` and ``related`` (the preemptor's PodGroup), on the
    pod's event and its PodGroup's; the dashboard takes them as they are."""
    cluster = EmbeddedCluster.open(tmp_path / "c.db")
    cluster.apply([node("n1", gpus=1), queue("team", gpu=(1, -1, 1))])
    cluster.apply([podgroup("train", queue="team"), pod("t0", group="train", gpus=1)])
    cluster.apply(
        [
            podgroup("serve", queue="team", priority_class="inference"),
            pod("s0", group="serve", gpus=1),
        ]
    )
    serve = cluster.get("PodGroup", "serve", "default")
    assert serve is not None
    related = {
        "apiVersion": serve["apiVersion"],
        "kind": "PodGroup",
        "name": "serve",
        "namespace": "default",
        "uid": serve["metadata"]["uid"],
    }
    events = [
        e
        for kind, name in (("Pod", "t0"), ("PodGroup", "train"))
        for e in cluster.events_for(kind, name, "default")
        if e["reason"] == "Evict"
    ]
    assert [(e["action"], e["related"]) for e in events] == [("preempt", related)] * 2
    seen = from_event(events[0])
    assert seen is not None
    assert (seen.pod, seen.action, seen.preemptor) == ("t0", "preempt", "default/serve")
    assert seen.message.startswith("Preempted by default/serve") and "action" not in seen.message


class Failing:
    """A scheduler that fails (a bug: objects cannot make a cycle fail)."""

    def run_cycle(self, state: ClusterState, now: float) -> CycleResult:
        raise RuntimeError("scheduler crashed")


def test_a_failed_cycle_decides_nothing_and_the_round_goes_on(tmp_path: Path) -> None:
    path = tmp_path / "c.db"
    cluster = EmbeddedCluster(Store(path), scheduler=Failing())
    cluster.apply([node("n1"), pod("p")])
    assert len(cluster.list("PodGroup")) == 1  # the grouper's write is kept
    stored = cluster.get("Pod", "p", "default")
    assert stored is not None and not stored["spec"].get("nodeName")
    reloaded = EmbeddedCluster(Store(path), scheduler=Failing()).state
    assert set(cluster.state.jobs) == set(reloaded.jobs)
    assert set(cluster.state.tasks) == set(reloaded.tasks)


def test_a_failed_round_leaves_store_and_engine_state_as_they_were(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def crash(*_: object, **__: object) -> None:
        raise RuntimeError("store crashed")

    path = tmp_path / "c.db"
    cluster = EmbeddedCluster(Store(path), scheduler=ScriptedScheduler())
    monkeypatch.setattr("pykai.round.steps.carry_out", crash)
    with pytest.raises(RuntimeError, match="store crashed"):
        cluster.apply([pod("p")])
    assert cluster.get("Pod", "p", "default") is not None  # the apply itself committed
    assert cluster.list("PodGroup") == []  # the grouper's write rolled back with the round
    assert cluster.state.jobs == {} and cluster.state.task_by_key("default", "p") is not None
    before = dump(path)
    monkeypatch.undo()
    healthy = EmbeddedCluster(Store(path), scheduler=ScriptedScheduler())
    assert dump(path) == before
    healthy.settle()
    assert len(healthy.list("PodGroup")) == 1


def test_a_partitioned_shard_is_refused_by_the_one_scheduler_cluster() -> None:
    """The embedded cluster has one scheduler over every node: a SchedulingShard naming a
    partition would be ignored there, so apply refuses it, naming the field, and stores
    nothing; a config given in code is refused the same way."""
    from pykai.engine.settings import SchedulerConfig
    from pykai.model.errors import ValidationError

    cluster = EmbeddedCluster.open(None)
    shard = {
        "apiVersion": "kai.scheduler/v1",
        "kind": "SchedulingShard",
        "metadata": {"name": "pool-a"},
        "spec": {"partitionLabelValue": "a"},
    }
    with pytest.raises(ValidationError, match=r"spec\.partitionLabelValue: is a partition"):
        cluster.apply([shard])
    assert cluster.list("SchedulingShard") == []
    shard["spec"] = {"partitionLabelValue": ""}
    cluster.apply([shard])  # the default shard's (empty) partition is fine
    with pytest.raises(ValidationError, match="partitionLabelValue"):
        EmbeddedCluster.open(None, config=SchedulerConfig(partitionLabelValue="a"))
