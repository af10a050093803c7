"""`pykai run` against a real kube-apiserver v1.34: a gang of pods applied with kubectl is
bound together; a gang that does not fit stays pending whole; a bare pod is grouped and run;
a missing queue is explained; components run in separate processes work together."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from pykai.kube.api import connect
from pykai.kube.localcluster import LocalCluster
from pykai.kube.nodes import create_ready_nodes, gpu_nodes
from pykai.model.builders import pod, podgroup
from tests.kube.conftest import (
    ROOT,
    apply,
    fresh_cluster,
    get_json,
    kubectl,
    pykai_cli,
    pykai_running,
    wait_for,
)


def placements(cluster: LocalCluster) -> dict[str, str]:
    items = get_json(cluster, "pods")["items"]
    return {p["metadata"]["name"]: p["spec"].get("nodeName", "") for p in items}


def phase(cluster: LocalCluster, name: str) -> str:
    return str(get_json(cluster, "pod", name)["status"].get("phase"))


@pytest.fixture(scope="module")
def running(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    """A cluster of its own: two nodes of 4 GPUs, the guides' queues, pykai run."""
    with fresh_cluster(tmp_path_factory.mktemp("run-cluster")) as cluster:
        kubectl(cluster, "apply", "-f", str(ROOT / "examples/queues-department-1-team-a.yaml"))
        create_ready_nodes(connect(cluster.kubeconfig), gpu_nodes(2, 4), time.time())
        with pykai_running(cluster):
            yield cluster


def test_gang_is_bound_together_and_too_big_gang_waits(
    running: LocalCluster, tmp_path: Path
) -> None:
    gang = [podgroup("train", queue="team-a", min_member=3)] + [
        pod(f"train-{i}", group="train", gpus=2) for i in range(3)
    ]
    apply(running, gang, tmp_path / "gang.yaml")
    assert wait_for(lambda: all(placements(running).get(f"train-{i}") for i in range(3)))
    big = [podgroup("big", queue="team-a", min_member=2)] + [
        pod(f"big-{i}", group="big", gpus=2) for i in range(2)
    ]
    apply(running, big, tmp_path / "big.yaml")
    bare = [pod("solo", gpus=2, labels={"kai.scheduler/queue": "team-a"})]
    apply(running, bare, tmp_path / "bare.yaml")
    assert wait_for(lambda: bool(placements(running).get("solo")))  # grouped, then run
    placed = placements(running)
    assert not placed["big-0"] and not placed["big-1"]  # 2 GPUs left: not enough for the gang
    status = get_json(running, "queue", "team-a")["status"]
    assert status["allocated"]["nvidia.com/gpu"] == "8"
    assert wait_for(lambda: phase(running, "train-0") == "Running")  # KWOK, the kubelet
    group = get_json(running, "podgroup", "train")
    assert "kai.scheduler/last-start-timestamp" in group["metadata"]["annotations"]


def test_missing_queue_is_explained(running: LocalCluster, tmp_path: Path) -> None:
    lost = [podgroup("lost", queue="no-such-queue"), pod("lost-0", group="lost", gpus=1)]
    apply(running, lost, tmp_path / "lost.yaml")

    def reasons() -> list[str]:
        status = get_json(running, "podgroup", "lost").get("status") or {}
        return [r["reason"] for c in status.get("schedulingConditions") or [] for r in c["reasons"]]

    assert wait_for(lambda: "QueueDoesNotExist" in reasons()), reasons()
    assert not placements(running)["lost-0"]
    events = kubectl(running, "get", "events", "--field-selector=involvedObject.name=lost")
    assert "Unschedulable" in events and "QueueDoesNotExist" in events


def test_unknown_component_is_a_clear_error(local_cluster: LocalCluster) -> None:
    result = pykai_cli("run", f"--kubeconfig={local_cluster.kubeconfig}", "--components=sched")
    assert result.returncode != 0
    assert "unknown component(s) sched" in result.stderr and "scheduler" in result.stderr


def pod_events(cluster: LocalCluster, name: str) -> list[tuple[str, str, str]]:
    """(type, reason, message) of the events on pod ``name``."""
    items = get_json(cluster, "events", f"--field-selector=involvedObject.name={name}")["items"]
    return [(e["type"], e["reason"], e["message"]) for e in items]


def test_why_pending_shows_where_kubectl_users_look(running: LocalCluster, tmp_path: Path) -> None:
    """semantics: kube-scheduler's places: a pending pod gets PodScheduled=False/Unschedulable
    and an Unschedulable Warning; a bound pod gets a Scheduled event."""
    workload = [podgroup("huge", queue="team-a"), pod("huge-0", group="huge", gpus=16)]
    workload += [podgroup("quick", queue="team-a"), pod("quick-0", group="quick", cpu="100m")]
    apply(running, workload, tmp_path / "why.yaml")

    def scheduled_condition() -> dict[str, str]:
        conditions = get_json(running, "pod", "huge-0")["status"].get("conditions") or []
        return next((c for c in conditions if c["type"] == "PodScheduled"), {})

    assert wait_for(lambda: scheduled_condition().get("status") == "False"), scheduled_condition()
    assert scheduled_condition()["reason"] == "Unschedulable"
    assert "16" in scheduled_condition()["message"]  # says what it asks for, or what is free
    assert wait_for(
        lambda: any(
            t == "Warning" and r == "Unschedulable" for t, r, _ in pod_events(running, "huge-0")
        )
    )
    described = kubectl(running, "describe", "pod", "huge-0")
    assert "PodScheduled" in described and "Unschedulable" in described
    assert wait_for(
        lambda: ("Normal", "Scheduled") in {(t, r) for t, r, _ in pod_events(running, "quick-0")}
    ), pod_events(running, "quick-0")
    node = get_json(running, "pod", "quick-0")["spec"]["nodeName"]
    scheduled = [m for t, r, m in pod_events(running, "quick-0") if r == "Scheduled"]
    assert scheduled[0].startswith(f"Successfully assigned default/quick-0 to {node}, chosen by")
