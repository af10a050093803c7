"""Positions of pending Workloads as Kueue's visibility API reports them
(kubernetes-sigs/kueue ``pkg/visibility/storage/``; ``site/.../pending_workloads_on_demand.md``):
a ClusterQueue's pending Workloads in its queue order (higher priority, then earlier creation,
then UID), 0-based positions in the ClusterQueue and within each LocalQueue; admitted,
finished and deactivated Workloads and those whose LocalQueue is missing are in no list."""

from __future__ import annotations

from pykai.engine.kueue.positions import in_local_queue, pending_workloads, summary
from pykai.kube.visibility import Visibility
from pykai.model.meta import Obj

API = "kueue.x-k8s.io/v1beta2"


def _lq(name: str, namespace: str, cq: str) -> Obj:
    meta = {"name": name, "namespace": namespace}
    return {"apiVersion": API, "kind": "LocalQueue", "metadata": meta, "spec": {"clusterQueue": cq}}


def _cq(name: str) -> Obj:
    return {"apiVersion": API, "kind": "ClusterQueue", "metadata": {"name": name}, "spec": {}}


def _wl(
    name: str, queue: str, created: str, *, namespace: str = "default", priority: int = 0,
    uid: str = "", conditions: tuple[tuple[str, str], ...] = (), active: bool = True,
) -> Obj:  # fmt: skip
    meta: Obj = {
        "name": name,
        "namespace": namespace,
        "uid": uid or f"uid-{name}",
        "creationTimestamp": f"2026-01-01T00:00:{created}Z",
        "ownerReferences": [
            {
                "apiVersion": "ray.io/v1",
                "kind": "RayJob",
                "name": f"job-{name}",
                "uid": "o",
                "controller": True,
            }
        ],
    }
    status = {"conditions": [{"type": t, "status": s} for t, s in conditions]}
    spec = {"queueName": queue, "priority": priority, "active": active, "podSets": []}
    return {"apiVersion": API, "kind": "Workload", "metadata": meta, "spec": spec, "status": status}


QUEUES = [_lq("a", "default", "cq"), _lq("b", "team", "cq"), _lq("lost", "default", "gone")]
WORKLOADS = [
    _wl("late", "a", "05", uid="b"),
    _wl("urgent", "b", "09", namespace="team", priority=100),
    _wl("early", "a", "01"),
    _wl("tie", "a", "05", uid="a"),  # same creation as "late": the smaller UID first
    _wl("running", "a", "00", conditions=(("QuotaReserved", "True"), ("Admitted", "True"))),
    _wl("done", "a", "00", conditions=(("Finished", "True"),)),
    _wl("paused", "a", "00", active=False),
    _wl("nowhere", "missing", "00"),
    _wl("orphan", "lost", "00"),
    _wl("refused", "a", "07", conditions=(("QuotaReserved", "False"),)),
]


def test_positions_follow_kueues_queue_order() -> None:
    pending = pending_workloads(WORKLOADS, QUEUES, [_cq("cq"), _cq("idle")])
    assert set(pending) == {"cq", "idle"} and pending["idle"] == []
    rows = [
        (w.obj["metadata"]["name"], w.position_in_cluster_queue, w.position_in_local_queue)
        for w in pending["cq"]
    ]
    assert rows == [
        ("urgent", 0, 0),  # the only one of LocalQueue team/b
        ("early", 1, 0),
        ("tie", 2, 1),
        ("late", 3, 2),
        ("refused", 4, 3),  # tried and refused: still pending, in order
    ]
    local = in_local_queue(pending, "team", "b")
    assert [(w.obj["metadata"]["name"], w.position_in_cluster_queue) for w in local] == [
        ("urgent", 0)
    ]


def test_summary_has_kueues_shape_limit_and_offset() -> None:
    pending = pending_workloads(WORKLOADS, QUEUES, [_cq("cq")])["cq"]
    body = summary(pending, "v1beta1", limit=2, offset=1)
    assert body["kind"] == "PendingWorkloadsSummary"
    assert body["apiVersion"] == "visibility.kueue.x-k8s.io/v1beta1"
    assert [i["metadata"]["name"] for i in body["items"]] == ["early", "tie"]
    assert body["items"][0] == {
        "metadata": {
            "name": "early",
            "namespace": "default",
            "creationTimestamp": "2026-01-01T00:00:01Z",
            "ownerReferences": [
                {"apiVersion": "ray.io/v1", "kind": "RayJob", "name": "job-early", "uid": "o"}
            ],
        },
        "priority": 0,
        "localQueueName": "a",
        "positionInClusterQueue": 1,
        "positionInLocalQueue": 0,
    }
    assert len(summary(pending, "v1beta2", limit=5000, offset=0)["items"]) == 5


def test_visibility_paths_answer_as_kueues_api() -> None:
    visibility = Visibility()
    base = "/apis/visibility.kueue.x-k8s.io/v1beta1"
    cq_path = f"{base}/clusterqueues/cq/pendingworkloads"
    assert (visibility.answer(cq_path) or (0, {}))[0] == 503  # no Kueue pass yet
    visibility.update(WORKLOADS, QUEUES, [_cq("cq")])
    code, body = visibility.answer(cq_path + "?limit=1&offset=1") or (0, {})
    assert code == 200 and [i["metadata"]["name"] for i in body["items"]] == ["early"]
    code, body = visibility.answer(f"{base}/namespaces/team/localqueues/b/pendingworkloads") or (
        0,
        {},
    )
    assert code == 200 and [i["positionInClusterQueue"] for i in body["items"]] == [0]
    code, body = visibility.answer(f"{base}/clusterqueues/nope/pendingworkloads") or (0, {})
    assert (code, body["reason"]) == (404, "NotFound")
    code, _ = visibility.answer(f"{base}/namespaces/team/localqueues/a/pendingworkloads") or (0, {})
    assert code == 404  # LocalQueue "a" lives in namespace default
    assert (visibility.answer(cq_path + "?limit=x") or (0, {}))[0] == 400
    assert visibility.answer("/metrics") is None
