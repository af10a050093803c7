"""Where each pending Workload stands in its ClusterQueue and its LocalQueue, as Kueue's
visibility API reports it (kubernetes-sigs/kueue ``pkg/visibility/storage/``, the
ClusterQueue's ``Snapshot``): a ClusterQueue's pending Workloads (the queue and the inadmissible
set together, so the same under StrictFIFO and BestEffortFIFO) in Kueue's queue order; positions
count from 0, in the ClusterQueue and among the Workloads of the same LocalQueue. Admitted,
reserving, finished and deactivated Workloads are in no list, nor is one whose LocalQueue or
ClusterQueue does not exist. Pure and light (no engine state): ``pykai describe`` uses it too."""

from __future__ import annotations

from dataclasses import dataclass

from pykai.model.conditions import is_true
from pykai.model.meta import Obj, mapping, objects, parse_time

API_GROUP = "visibility.kueue.x-k8s.io"
MAX_LIMIT = 1000
"""Kueue's default and largest ``limit`` of a pendingworkloads request."""


def queue_order(priority: int, creation: float, uid: str) -> tuple[int, float, str]:
    """Kueue's order in a ClusterQueue: higher priority, then earlier creation (the
    queue-order timestamp: a preempted Workload keeps its place), then UID."""
    return (-priority, creation, uid)


@dataclass(frozen=True, slots=True)
class _Queued:
    """What ordering reads of a Workload."""

    obj: Obj
    namespace: str
    queue_name: str
    priority: int
    order: tuple[int, float, str]


def _queued(obj: Obj) -> _Queued | None:
    """A Workload waiting for quota, or None (reserving, finished or deactivated)."""
    meta, spec = obj["metadata"], mapping(obj.get("spec"))
    if is_true(obj, "QuotaReserved") or is_true(obj, "Finished"):
        return None
    if spec.get("active") is False:
        return None
    priority = int(spec.get("priority") or 0)
    created = parse_time(meta["creationTimestamp"]) if meta.get("creationTimestamp") else 0.0
    return _Queued(
        obj,
        str(meta.get("namespace") or "default"),
        str(spec.get("queueName") or ""),
        priority,
        queue_order(priority, created, str(meta.get("uid") or "")),
    )


@dataclass(frozen=True, slots=True)
class PendingWorkload:
    """One pending Workload and where it stands."""

    obj: Obj
    priority: int
    local_queue: str
    position_in_cluster_queue: int
    position_in_local_queue: int

    @property
    def namespace(self) -> str:
        """The Workload's (and its LocalQueue's) namespace."""
        return str(self.obj["metadata"].get("namespace") or "default")

    def item(self) -> Obj:
        """As an item of Kueue's ``PendingWorkloadsSummary``."""
        meta = self.obj["metadata"]
        owners = [
            {key: ref[key] for key in ("apiVersion", "kind", "name", "uid") if key in ref}
            for ref in objects(meta.get("ownerReferences"))
        ]
        metadata: Obj = {
            "name": meta["name"],
            "namespace": self.namespace,
            "creationTimestamp": meta.get("creationTimestamp"),
        }
        if owners:
            metadata["ownerReferences"] = owners
        return {
            "metadata": metadata,
            "priority": self.priority,
            "localQueueName": self.local_queue,
            "positionInClusterQueue": self.position_in_cluster_queue,
            "positionInLocalQueue": self.position_in_local_queue,
        }


def pending_workloads(
    workloads: list[Obj], local_queues: list[Obj], cluster_queues: list[Obj]
) -> dict[str, list[PendingWorkload]]:
    """Per ClusterQueue name (every existing one, maybe with none), its pending Workloads in
    order."""
    targets = {
        (str(q["metadata"].get("namespace") or "default"), str(q["metadata"]["name"])): str(
            mapping(q.get("spec")).get("clusterQueue") or ""
        )
        for q in local_queues
    }
    queued: dict[str, list[_Queued]] = {str(q["metadata"]["name"]): [] for q in cluster_queues}
    waiting = (w for w in map(_queued, workloads) if w is not None)
    for view in sorted(waiting, key=lambda w: w.order):
        cluster_queue = targets.get((view.namespace, view.queue_name))
        if cluster_queue in queued:
            queued[cluster_queue].append(view)
    out: dict[str, list[PendingWorkload]] = {}
    for name, found in queued.items():
        in_local: dict[str, int] = {}
        out[name] = []
        for position, view in enumerate(found):
            local = view.namespace + "/" + view.queue_name
            place = in_local.get(local, 0)
            out[name].append(
                PendingWorkload(view.obj, view.priority, view.queue_name, position, place)
            )
            in_local[local] = place + 1
    return out


def in_local_queue(
    pending: dict[str, list[PendingWorkload]], namespace: str, name: str
) -> list[PendingWorkload]:
    """The pending Workloads of one LocalQueue (with their ClusterQueue positions)."""
    return [
        w
        for found in pending.values()
        for w in found
        if (w.namespace, w.local_queue) == (namespace, name)
    ]


def summary(items: list[PendingWorkload], version: str, limit: int, offset: int) -> Obj:
    """Kueue's ``PendingWorkloadsSummary``: ``limit`` items from ``offset``."""
    chosen = items[max(0, offset) : max(0, offset) + max(0, min(limit, MAX_LIMIT))]
    return {
        "kind": "PendingWorkloadsSummary",
        "apiVersion": f"{API_GROUP}/{version}",
        "metadata": {},
        "items": [w.item() for w in chosen],
    }
