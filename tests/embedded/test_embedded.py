"""The embedded cluster on real SQLite files: store semantics, seeding, controllers, settling."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from pykai.embedded.cluster import EmbeddedCluster
from pykai.embedded.store import Store
from pykai.grouping.podgrouper import plan_for
from pykai.model.builders import node, pod, podgroup, queue
from pykai.model.errors import ValidationError


def dump(path: Path) -> list[tuple[str, str, str, str]]:
    with sqlite3.connect(path) as db:
        return sorted(db.execute("SELECT kind, namespace, name, body FROM objects"))


def test_store_create_update_delete_and_uid_order(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.db")
    a = store.create(pod("a"))
    b = store.create(pod("b"))
    assert a["metadata"]["namespace"] == "default"
    assert a["metadata"]["uid"] < b["metadata"]["uid"]  # uids sort in creation order
    a["spec"]["nodeName"] = "n1"
    updated = store.update(a)
    assert int(updated["metadata"]["resourceVersion"]) > int(a["metadata"]["resourceVersion"])
    assert store.get("Pod", "a", "default")["spec"]["nodeName"] == "n1"  # type: ignore[index]
    assert store.delete("Pod", "a", "default") is not None
    assert store.get("Pod", "a", "default") is None


def test_a_fresh_cluster_looks_like_kai_installed(tmp_path: Path) -> None:
    cluster = EmbeddedCluster.open(tmp_path / "c.db")
    names = {q["metadata"]["name"]: q["spec"].get("parentQueue") for q in cluster.list("Queue")}
    assert names == {"default-parent-queue": None, "default-queue": "default-parent-queue"}
    classes = {pc["metadata"]["name"]: pc["value"] for pc in cluster.list("PriorityClass")}
    assert classes == {"train": 50, "build-preemptible": 75, "build": 100, "inference": 125}


def test_state_persists_across_reopen(tmp_path: Path) -> None:
    path = tmp_path / "c.db"
    first = EmbeddedCluster.open(path)
    first.apply([node("n1", gpus=4), pod("p", gpus=2)])
    first.close()
    again = EmbeddedCluster.open(path)
    assert again.get("Pod", "p", "default")["spec"]["nodeName"] == "n1"  # type: ignore[index]
    again.apply([pod("q", gpus=2)])
    assert again.get("Pod", "q", "default")["spec"]["nodeName"] == "n1"  # type: ignore[index]
    again.apply([pod("r", gpus=2)])
    assert "nodeName" not in again.get("Pod", "r", "default")["spec"]  # type: ignore[index]


def test_rejected_apply_writes_nothing(tmp_path: Path) -> None:
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
            ]
        )
    assert len(error.value.problems) == 2
    assert dump(path) == before


def test_apply_is_idempotent_and_settles(tmp_path: Path) -> None:
    cluster = EmbeddedCluster.open(tmp_path / "c.db")
    objects = [node("n1", gpus=4), podgroup("g", queue="default-queue", min_member=2)]
    objects += [pod(f"g-{i}", group="g", gpus=1) for i in range(2)]
    first = cluster.apply(objects)
    assert {o.action for o in first} == {"created"}
    assert {o.action for o in cluster.apply(objects)} == {"unchanged"}
    assert cluster.settle() == 1  # nothing left to do
    group = cluster.get("PodGroup", "g", "default")
    assert group is not None and group["status"]["phase"] == "Running"
    assert group["metadata"]["annotations"]["kai.scheduler/last-start-timestamp"]


def test_bare_pod_grouping_rules() -> None:
    classes = frozenset({"train", "inference", "build"})
    plain = pod("p", uid="u1")
    plan = plan_for(plain, lambda *_: None, classes)
    assert (plan.name, plan.queue, plan.priority_class, plan.min_member) == (
        "pg-p-u1",
        "default-queue",
        "train",
        1,
    )
    labelled = pod(
        "p", uid="u1", labels={"kai.scheduler/queue": "team-a", "priorityClassName": "inference"}
    )
    plan = plan_for(labelled, lambda *_: None, classes)
    assert (plan.queue, plan.priority_class) == ("team-a", "inference")
    unknown_class = pod("p", uid="u1", labels={"priorityClassName": "nope", "project": "proj"})
    plan = plan_for(unknown_class, lambda *_: None, classes)
    assert (plan.queue, plan.priority_class) == ("proj", "train")


def test_binder_labels_shared_gpus_and_kubelet_runs_pods(tmp_path: Path) -> None:
    cluster = EmbeddedCluster.open(tmp_path / "c.db")
    cluster.apply([node("n1", gpus=1), pod("half", annotations={"gpu-fraction": "0.5"})])
    bound = cluster.get("Pod", "half", "default")
    assert bound is not None and bound["status"]["phase"] == "Running"
    group = bound["metadata"]["labels"]["runai-gpu-group"]
    env = {e["name"]: e["value"] for e in bound["spec"]["containers"][0]["env"]}
    assert env == {"GPU_PORTION": "0.50", "NVIDIA_VISIBLE_DEVICES": group}
    reasons = [e["reason"] for e in cluster.events_for("Pod", "half", "default")]
    assert reasons == ["Scheduled"]


def test_cascade_delete_and_queue_in_use(tmp_path: Path) -> None:
    cluster = EmbeddedCluster.open(tmp_path / "c.db")
    cluster.apply([node("n1"), queue("team"), pod("p", labels={"kai.scheduler/queue": "team"})])
    assert len(cluster.list("PodGroup")) == 1
    with pytest.raises(ValidationError, match="still used by podgroup"):
        cluster.delete("Queue", "team")
    cluster.delete("Pod", "p", "default")
    assert cluster.list("PodGroup") == []  # owned by the pod
    assert cluster.delete("Queue", "team")


def test_unschedulable_events_are_not_repeated(tmp_path: Path) -> None:
    cluster = EmbeddedCluster.open(tmp_path / "c.db")
    cluster.apply([node("n1", gpus=1), pod("big", gpus=4)])
    cluster.schedule(cycles=3)
    events = [
        e for e in cluster.events_for("Pod", "big", "default") if e["reason"] == "Unschedulable"
    ]
    assert len(events) == 1 and "needs 4" in events[0]["message"]


def test_evictions_are_counted_per_queue_and_recorded_on_pod_and_podgroup(tmp_path: Path) -> None:
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
    assert cluster.get("Pod", "s0", "default")["spec"]["nodeName"] == "n1"  # type: ignore[index]
    team = cluster.get("Queue", "team")
    assert team is not None and team["status"]["evictions"] == 2
    messages = [
        e["message"]
        for e in cluster.events_for("PodGroup", "train", "default")
        if e["reason"] == "Preempted"
    ]
    assert len(messages) == 2 and all(
        "Preempted by default/serve" in m and "in queue team" in m for m in messages
    )
