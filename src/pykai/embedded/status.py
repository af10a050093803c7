"""The status controller: writes Queue and PodGroup status where it changed, and records why a
job is pending as Warning events on its PodGroup and pending pods."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pykai.controllers.status import podgroup_status, queue_statuses, reason_text
from pykai.embedded.events import WARNING, record
from pykai.embedded.evictor import evictions_counter
from pykai.engine.decisions import CycleResult
from pykai.engine.jobs import TaskStatus
from pykai.model.meta import Obj

if TYPE_CHECKING:
    from pykai.embedded.cluster import EmbeddedCluster


def update_status(cluster: EmbeddedCluster, result: CycleResult) -> bool:
    """Write queue and PodGroup status where it changed; True if anything was written."""
    store = cluster.store
    queues = store.list("Queue")
    statuses = queue_statuses(queues, result, lambda q: store.read_counter(evictions_counter(q)))
    changed = False
    for queue in queues:
        changed |= _write_status(cluster, queue, statuses[queue["metadata"]["name"]])
    for podgroup in store.list("PodGroup"):
        meta = podgroup["metadata"]
        key = f"{meta['namespace']}/{meta['name']}"
        job = cluster.state.jobs.get(key)
        if job is None:
            continue
        reasons = result.unschedulable.get(key)
        status = podgroup_status(job, reasons, podgroup.get("status") or {}, cluster.now())
        if reasons and status["pending"]:
            text = reason_text(reasons)
            for task in job.tasks.values():
                pod = (
                    store.get("Pod", task.name, task.namespace)
                    if task.status == TaskStatus.PENDING
                    else None
                )
                if pod is not None:
                    changed |= record(store, pod, "Unschedulable", text, WARNING)
            changed |= record(store, podgroup, "Unschedulable", text, WARNING)
        changed |= _write_status(cluster, podgroup, status)
    return changed


def _write_status(cluster: EmbeddedCluster, obj: Obj, status: dict[str, Any]) -> bool:
    if obj.get("status") == status:
        return False
    obj["status"] = status
    cluster.update(obj)
    return True
