"""The embedded status controller: writes queue and PodGroup status where it changed, and
records "why pending" as Warning events on PodGroups and their pending pods."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pykai.controllers.status import podgroup_status, queue_statuses, reason_text
from pykai.embedded.events import record
from pykai.engine.decisions import CycleResult
from pykai.engine.jobs import TaskStatus
from pykai.model.meta import Obj

if TYPE_CHECKING:
    from pykai.embedded.cluster import EmbeddedCluster


def update_status(cluster: EmbeddedCluster, result: CycleResult) -> bool:
    """Write queue and PodGroup status where it changed; True if anything was written."""
    changed = False
    queues = cluster.store.select("Queue")
    statuses = queue_statuses(
        queues, result, lambda q: cluster.store.read_counter(f"evictions/{q}")
    )
    for queue in queues:
        changed |= _write_status(cluster, queue, statuses[queue["metadata"]["name"]])
    for podgroup in cluster.store.select("PodGroup"):
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
                    cluster.store.get("Pod", task.name, task.namespace)
                    if task.status == TaskStatus.PENDING
                    else None
                )
                if pod is not None:
                    changed |= record(cluster, pod, "Unschedulable", text, "Warning")
            changed |= record(cluster, podgroup, "Unschedulable", text, "Warning")
        changed |= _write_status(cluster, podgroup, status)
    return changed


def _write_status(cluster: EmbeddedCluster, obj: Obj, status: dict[str, Any]) -> bool:
    if obj.get("status") == status:
        return False
    obj["status"] = status
    cluster.update(obj)
    return True
