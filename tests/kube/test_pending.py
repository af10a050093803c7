"""Queue positions from ``pykai run``: ``/apis/pykai.io/v1/queues/NAME/pendingpodgroups`` on
the metrics address, shaped like Kueue's PendingWorkloadsSummary (0-based positions, ``limit``
and ``offset``), against the real apiserver. Within a queue, KAI's job order puts the higher
priority first; a parent queue lists its children's jobs."""

from __future__ import annotations

import threading

import httpx

from pykai.engine.state import ClusterState
from pykai.kube.api import connect
from pykai.kube.localcluster import LocalCluster, free_port
from pykai.kube.pending import PendingBoard, route
from pykai.model import builders
from pykai.model.kinds import BY_KIND
from pykai.model.meta import Obj
from pykai.model.priorityclass import builtin_priority_classes
from tests.kube.conftest import pykai_running, wait_for

NAMESPACE = "positions"


def waiting_job(name: str, queue: str, priority: str) -> list[Obj]:
    """A PodGroup of one pod asking 64 GPUs, more than any node of the tests has."""
    group = builders.podgroup(name, queue=queue, priority_class=priority, namespace=NAMESPACE)
    return [group, builders.pod(f"{name}-0", group=name, gpus=64, namespace=NAMESPACE)]


def test_run_serves_each_queues_pending_podgroups_in_order(local_cluster: LocalCluster) -> None:
    api = connect(local_cluster.kubeconfig)
    api.create_if_absent(
        BY_KIND["Namespace"], {"kind": "Namespace", "metadata": {"name": NAMESPACE}}
    )
    objects = [
        builders.queue("pos-dept"),
        builders.queue("pos-a", parent="pos-dept"),
        builders.queue("pos-b", parent="pos-dept"),
        *waiting_job("a-train", "pos-a", "train"),
        *waiting_job("a-urgent", "pos-a", "inference"),
        *waiting_job("a-build", "pos-a", "build"),
        *waiting_job("b-train", "pos-b", "train"),
    ]
    for obj in objects:
        api.create_if_absent(BY_KIND[obj["kind"]], obj)
    try:
        check_positions(local_cluster)
    finally:  # the cluster is shared: leave no pending pods or queues behind
        for obj in reversed(objects):
            api.delete(
                BY_KIND[obj["kind"]], obj["metadata"]["name"], obj["metadata"].get("namespace", "")
            )


def check_positions(local_cluster: LocalCluster) -> None:
    port = free_port()
    base = f"http://127.0.0.1:{port}/apis/pykai.io/v1/queues"
    with pykai_running(local_cluster, f"--metrics-address=127.0.0.1:{port}"):

        def listed(queue: str, query: str = "") -> list[Obj]:
            answer = httpx.get(f"{base}/{queue}/pendingpodgroups{query}", timeout=30)
            assert answer.status_code == 200, answer.text
            body = answer.json()
            assert (body["kind"], body["apiVersion"]) == ("PendingPodGroupsSummary", "pykai.io/v1")
            items: list[Obj] = body["items"]
            return items

        def reasons_recorded() -> bool:
            return all(item["reasons"] for item in listed("pos-dept"))

        assert wait_for(reasons_recorded, timeout=60), listed("pos-dept")
        mine = listed("pos-a")
        assert [i["metadata"]["name"] for i in mine] == ["a-urgent", "a-build", "a-train"]
        assert [i["positionInQueue"] for i in mine] == [0, 1, 2]
        assert [i["priority"] for i in mine] == [125, 100, 50]
        assert {i["metadata"]["namespace"] for i in mine} == {NAMESPACE}
        assert mine[0]["reasons"][0]["reason"] == "PodSchedulingErrors"
        everything = listed("pos-dept")
        assert {i["metadata"]["name"] for i in everything} == {
            "a-urgent", "a-build", "a-train", "b-train"
        }  # fmt: skip
        cycle = [i["positionInCycle"] for i in everything]
        assert cycle == sorted(cycle) and len(set(cycle)) == 4
        assert [i["metadata"]["name"] for i in listed("pos-a", "?offset=1&limit=1")] == ["a-build"]
        missing = httpx.get(f"{base}/no-such-queue/pendingpodgroups", timeout=30)
        assert missing.status_code == 404 and missing.json()["reason"] == "NotFound"
        bad = httpx.get(f"{base}/pos-a/pendingpodgroups?limit=x", timeout=30)
        assert bad.status_code == 400


def test_a_request_waits_for_the_loop_and_a_silent_loop_leaves_the_last_positions() -> None:
    state = ClusterState()
    for obj in [*builtin_priority_classes(), builders.queue("q"), builders.node("n", gpus=1)]:
        state.upsert(obj)
    for obj in waiting_job("j", "q", "train"):
        state.upsert(obj)
    board = PendingBoard(wait=30.0)
    assert not board.wanted()

    def loop() -> None:  # the run loop, between two cycles
        assert wait_for(board.wanted, timeout=30)
        board.publish(state, 0.0, {})

    thread = threading.Thread(target=loop)
    thread.start()
    answer = route(board, "/apis/pykai.io/v1/queues/q/pendingpodgroups", "")
    thread.join()
    assert answer is not None and answer[0] == 200
    assert [item["metadata"]["name"] for item in answer[1]["items"]] == ["j"]  # type: ignore[attr-defined]
    quiet = PendingBoard(wait=0.0)
    assert route(quiet, "/apis/pykai.io/v1/queues/q/pendingpodgroups", "") is not None
    assert route(quiet, "/metrics", "") is None
    code, body = route(quiet, "/apis/pykai.io/v1/queues/q/pendingpodgroups", "") or (0, {})
    assert (code, body["reason"]) == (503, "ServiceUnavailable")
