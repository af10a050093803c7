"""Status of queues and PodGroups (KAI's queue- and podgroup-controllers), and the
"why pending" conditions and events on PodGroups and their pods."""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, Any

from pykai.embedded.events import record
from pykai.engine.decisions import CycleResult, Reason
from pykai.engine.jobs import HOLDS_NODE, TaskStatus
from pykai.model.meta import Obj, format_time
from pykai.model.resources import Resources, resource_list

if TYPE_CHECKING:
    from pykai.embedded.cluster import EmbeddedCluster


def update_status(cluster: EmbeddedCluster, result: CycleResult) -> bool:
    """Write queue and PodGroup status where it changed; True if anything was written."""
    changed = _queues(cluster, result)
    return _podgroups(cluster, result) or changed


def _write_status(cluster: EmbeddedCluster, obj: Obj, status: dict[str, Any]) -> bool:
    if obj.get("status") == status:
        return False
    obj["status"] = status
    cluster.update(obj)
    return True


def _queues(cluster: EmbeddedCluster, result: CycleResult) -> bool:
    queues = cluster.store.select("Queue")
    children: dict[str, list[str]] = {}
    for queue in queues:
        parent = (queue.get("spec") or {}).get("parentQueue")
        if parent:
            children.setdefault(parent, []).append(queue["metadata"]["name"])
    changed = False
    for queue in queues:
        name = queue["metadata"]["name"]
        status: dict[str, Any] = {"childQueues": sorted(children.get(name, []))}
        figures = result.queues.get(name)
        if figures is not None:
            status.update(
                {
                    "allocated": resource_list(figures.allocated),
                    "allocatedNonPreemptible": resource_list(figures.allocated_non_preemptible),
                    "requested": resource_list(figures.requested),
                    "fairShare": resource_list(figures.fair_share),
                    "deserved": resource_list(figures.deserved),
                }
            )
        evictions = cluster.store.read_counter(f"evictions/{name}")
        if evictions:
            status["evictions"] = evictions
        changed |= _write_status(cluster, queue, status)
    return changed


def _podgroups(cluster: EmbeddedCluster, result: CycleResult) -> bool:
    changed = False
    state = cluster.state
    for podgroup in cluster.store.select("PodGroup"):
        meta = podgroup["metadata"]
        key = f"{meta['namespace']}/{meta['name']}"
        job = state.jobs.get(key)
        if job is None:
            continue
        tasks = list(job.tasks.values())
        running = sum(1 for t in tasks if t.status in HOLDS_NODE)
        pending = sum(1 for t in tasks if t.status == TaskStatus.PENDING)
        allocated = sum((t.request for t in tasks if t.status in HOLDS_NODE), Resources.ZERO)
        requested = sum(
            (t.request for t in tasks if t.status != TaskStatus.SUCCEEDED), Resources.ZERO
        )
        old = podgroup.get("status") or {}
        status: dict[str, Any] = {
            "phase": "Running" if running >= job.min_member else "Pending",
            "running": running,
            "pending": pending,
            "resourcesStatus": {
                "allocated": resource_list(allocated),
                "requested": resource_list(requested),
            },
        }
        reasons = result.unschedulable.get(key) if pending else None
        if reasons:
            status["schedulingConditions"] = [_condition(cluster, reasons, old)]
            for task in tasks:
                if task.status == TaskStatus.PENDING:
                    pod = cluster.store.get("Pod", task.name, task.namespace)
                    if pod is not None:
                        changed |= record(cluster, pod, "Unschedulable", _text(reasons), "Warning")
            changed |= record(cluster, podgroup, "Unschedulable", _text(reasons), "Warning")
        elif pending and old.get("schedulingConditions"):
            status["schedulingConditions"] = old["schedulingConditions"]  # not looked at this cycle
        changed |= _write_status(cluster, podgroup, status)
    return changed


def _text(reasons: list[Reason]) -> str:
    return "; ".join(f"{r.reason}: {r.message}" for r in reasons)


def _condition(
    cluster: EmbeddedCluster, reasons: list[Reason], old: dict[str, Any]
) -> dict[str, Any]:
    entries = [{"reason": r.reason, "message": r.message} for r in reasons]
    previous = (old.get("schedulingConditions") or [{}])[0]
    if previous.get("reasons") == entries:
        return dict(previous)
    digest = hashlib.sha256(repr(entries).encode()).hexdigest()[:8]
    return {
        "type": "UnschedulableOnNodePool",
        "nodePool": "default",
        "status": "True",
        "reasons": entries,
        "lastTransitionTime": format_time(cluster.now()),
        "transitionID": digest,
    }
