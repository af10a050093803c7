"""The status controller: writes Queue and PodGroup status where it changed, and records why a
job is pending as Warning events on its PodGroup and pending pods."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pykai.controllers.faults import report_problems
from pykai.controllers.status import (
    held_pod_conditions,
    held_pods,
    invalid_podgroup_status,
    podgroup_status,
    queue_statuses,
    reason_text,
)
from pykai.embedded.events import WARNING, record
from pykai.embedded.evictor import evictions_counter
from pykai.engine.decisions import CycleResult
from pykai.engine.jobs import TaskStatus
from pykai.model.meta import Obj

if TYPE_CHECKING:
    from pykai.embedded.cluster import EmbeddedCluster


def update_status(cluster: EmbeddedCluster, result: CycleResult) -> bool:
    """Write queue and PodGroup status where it changed, and report the objects the engine
    skipped; True if any status was written."""
    store = cluster.store
    isolation = cluster.isolation("the status controller")
    report_problems(
        cluster.state.problems.values(),
        lambda p: store.get(p.kind, p.name, p.namespace),
        isolation.report,
    )
    changed = False
    for task, problem in held_pods(cluster.state):
        pod = store.get("Pod", task.name, task.namespace)
        if pod is not None:
            with isolation.isolated(pod):
                conditions = held_pod_conditions(pod, problem.message, cluster.now())
                if conditions is not None:
                    changed |= _write_status(
                        cluster, pod, {**(pod.get("status") or {}), "conditions": conditions}
                    )
    queues = store.list("Queue")
    statuses = queue_statuses(queues, result, lambda q: store.read_counter(evictions_counter(q)))
    for queue in queues:
        with isolation.isolated(queue):
            changed |= _write_status(cluster, queue, statuses[queue["metadata"]["name"]])
    for podgroup in store.list("PodGroup"):
        with isolation.isolated(podgroup):
            changed |= _podgroup(cluster, podgroup, result)
    return changed


def _podgroup(cluster: EmbeddedCluster, podgroup: Obj, result: CycleResult) -> bool:
    """One PodGroup's status, and why-pending events on it and its pending pods."""
    store = cluster.store
    meta = podgroup["metadata"]
    key = f"{meta['namespace']}/{meta['name']}"
    job = cluster.state.jobs.get(key)
    changed = False
    if job is None:
        problem = cluster.state.problems.get(("PodGroup", meta["namespace"], meta["name"]))
        if problem is None:
            return False
        old = podgroup.get("status") or {}
        return _write_status(
            cluster, podgroup, invalid_podgroup_status(problem, old, cluster.now())
        )
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
    return _write_status(cluster, podgroup, status) or changed


def _write_status(cluster: EmbeddedCluster, obj: Obj, status: dict[str, Any]) -> bool:
    if obj.get("status") == status:
        return False
    obj["status"] = status
    cluster.update(obj)
    return True
