"""Desired status of queues and PodGroups (KAI's queue- and podgroup-controllers), computed from
a cycle's result; each backend writes them where they changed."""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Callable
from typing import Any

from pykai.controllers.faults import INVALID
from pykai.engine.decisions import CycleResult, Reason
from pykai.engine.jobs import HOLDS_NODE, Job, Task, TaskStatus
from pykai.engine.state import ClusterState
from pykai.model.meta import Obj, format_time, mapping
from pykai.model.problems import ObjectProblem
from pykai.model.resources import Resources, resource_list

FAIR_SHARE_CONDITION = "FairShare"


def queue_statuses(
    queues: list[Obj], result: CycleResult, evictions: Callable[[str], int]
) -> dict[str, dict[str, Any]]:
    """Queue name -> status, in the fields of KAI's Queue status: childQueues, allocated,
    allocatedNonPreemptible, requested; and pykai's own figures (fair share, deserved, the
    eviction total), for which KAI's schema has no field, as a ``FairShare`` condition whose
    message is their JSON (KAI lets applications add conditions of their own)."""
    children: dict[str, list[str]] = {}
    for queue in queues:
        parent = mapping(queue.get("spec")).get("parentQueue")
        if parent and isinstance(parent, str):
            children.setdefault(parent, []).append(queue["metadata"]["name"])
    statuses = {}
    for queue in queues:
        name = queue["metadata"]["name"]
        status: dict[str, Any] = {"childQueues": sorted(children.get(name, []))}
        own: dict[str, Any] = {}
        figures = result.queues.get(name)
        if figures is not None:
            status.update(
                {
                    "allocated": resource_list(figures.allocated),
                    "allocatedNonPreemptible": resource_list(figures.allocated_non_preemptible),
                    "requested": resource_list(figures.requested),
                }
            )
            own = {
                "fairShare": _figures(figures.fair_share),
                "deserved": _figures(figures.deserved),
            }
        count = evictions(name)
        if count:
            own["evictions"] = count
        if own:
            message = json.dumps(own, sort_keys=True, separators=(",", ":"))
            condition = {"type": FAIR_SHARE_CONDITION, "status": "True", "reason": "Computed"}
            status["conditions"] = [{**condition, "message": message}]
        statuses[name] = status
    return statuses


def queue_figures(status: object) -> dict[str, Any]:
    """pykai's figures in a queue status (``fairShare`` and ``deserved`` ResourceLists,
    ``evictions``), read from its FairShare condition; {} without one."""
    for condition in mapping(status).get("conditions") or []:
        if isinstance(condition, dict) and condition.get("type") == FAIR_SHARE_CONDITION:
            try:
                figures = json.loads(str(condition.get("message", "")))
            except ValueError:
                return {}
            return figures if isinstance(figures, dict) else {}
    return {}


def _figures(amount: Resources) -> dict[str, str]:
    """A ResourceList of canonical quantities where an unlimited amount says ``unlimited``."""
    finite = resource_list(Resources(*(0.0 if math.isinf(v) else v for v in amount)))
    return {
        key: "unlimited" if math.isinf(value) else written
        for (key, written), value in zip(finite.items(), amount, strict=True)
    }


def reason_text(reasons: list[Reason]) -> str:
    """Reasons as one line, for events."""
    return "; ".join(f"{r.reason}: {r.message}" for r in reasons)


def podgroup_status(
    job: Job, reasons: list[Reason] | None, old: dict[str, Any], now: float
) -> dict[str, Any]:
    """phase, counts, resourcesStatus and the UnschedulableOnNodePool condition (kept as it was
    while the job was not looked at; cleared when nothing is pending)."""
    tasks = list(job.tasks.values())
    running = sum(1 for t in tasks if t.status in HOLDS_NODE)
    pending = sum(
        1
        for t in tasks
        if t.status == TaskStatus.PENDING or (t.problem and t.status == TaskStatus.GATED)
    )
    allocated = sum((t.request for t in tasks if t.status in HOLDS_NODE), Resources.ZERO)
    requested = sum((t.request for t in tasks if t.status != TaskStatus.SUCCEEDED), Resources.ZERO)
    status: dict[str, Any] = {
        "phase": "Running" if running >= job.min_member else "Pending",
        "running": running,
        "pending": pending,
        "resourcesStatus": {
            "allocated": resource_list(allocated),
            "requested": resource_list(requested),
        },
    }
    if pending and reasons:
        status["schedulingConditions"] = [_condition(reasons, old, now)]
    elif pending and old.get("schedulingConditions"):
        status["schedulingConditions"] = old["schedulingConditions"]
    return status


def invalid_podgroup_status(
    problem: ObjectProblem, old: dict[str, Any], now: float
) -> dict[str, Any]:
    """The status of a PodGroup the scheduler cannot read: what it had, with a condition that
    says why it is skipped."""
    return {
        **old,
        "schedulingConditions": [_condition([Reason(INVALID, problem.message)], old, now)],
    }


def held_pod_conditions(pod: Obj, message: str, now: float) -> list[dict[str, Any]] | None:
    """The status.conditions of a pending pod the scheduler holds back (it cannot be read as
    written): ``PodScheduled`` False, reason ``Unschedulable``, as kube-scheduler marks a pod
    it cannot place; None if the pod says so already."""
    conditions = [
        c for c in mapping(pod.get("status")).get("conditions") or [] if isinstance(c, dict)
    ]
    current = next((c for c in conditions if c.get("type") == "PodScheduled"), None)
    if (
        current is not None
        and current.get("status") == "False"
        and current.get("message") == message
    ):
        return None
    condition = {
        "type": "PodScheduled",
        "status": "False",
        "reason": "Unschedulable",
        "message": message,
        "lastTransitionTime": format_time(now),
    }
    return [c for c in conditions if c.get("type") != "PodScheduled"] + [condition]


def held_pods(state: ClusterState) -> list[tuple[Task, ObjectProblem]]:
    """Pending pods of pykai's held back because they cannot be read, with their problem."""
    held = []
    for problem in state.problems.values():
        if problem.kind == "Pod":
            task = state.task_by_key(problem.namespace, problem.name)
            if task is not None and task.problem and task.status == TaskStatus.GATED:
                held.append((task, problem))
    return held


def _condition(reasons: list[Reason], old: dict[str, Any], now: float) -> dict[str, Any]:
    entries = [{"reason": r.reason, "message": r.message} for r in reasons]
    previous = (old.get("schedulingConditions") or [{}])[0]
    if previous.get("reasons") == entries:
        return dict(previous)
    return {
        "type": "UnschedulableOnNodePool",
        "nodePool": "default",
        "status": "True",
        "reasons": entries,
        "lastTransitionTime": format_time(now),
        "transitionID": hashlib.sha256(repr(entries).encode()).hexdigest()[:8],
    }
