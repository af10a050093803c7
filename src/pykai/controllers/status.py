"""The status controller (KAI's queue- and podgroup-controllers, and the scheduler's own status
writes): queue and PodGroup status computed from a cycle's result and written where it changed;
why a job is pending, said where kubectl users look when it changes (an ``Unschedulable`` or
``NotReady`` event on the PodGroup, an ``Unschedulable`` event and a ``PodScheduled=False``
condition on each of its pending pods); and the objects the engine could not take in."""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Callable
from typing import Any

from pykai.controllers.events import NORMAL, WARNING
from pykai.controllers.faults import INVALID, report_problems
from pykai.controllers.host import Host
from pykai.controllers.outcome import evictions_by_queue
from pykai.engine.decisions import CycleResult, Reason
from pykai.engine.jobs import HOLDS_NODE, Job, Task, TaskStatus
from pykai.engine.state import ClusterState
from pykai.model.conditions import Condition, condition_of, with_conditions
from pykai.model.meta import Obj, format_time, mapping
from pykai.model.partition import pool_of
from pykai.model.positions import NOT_READY
from pykai.model.problems import ObjectProblem
from pykai.model.queue_status import FAIR_SHARE_CONDITION, queue_figures
from pykai.model.resources import Resources, resource_list


def queue_statuses(
    queues: list[Obj],
    result: CycleResult,
    evictions: Callable[[str], int],
    requested: dict[str, Resources],
) -> dict[str, dict[str, Any]]:
    """Queue name -> status, in the fields of KAI's Queue status: childQueues, allocated,
    allocatedNonPreemptible, requested; and pykai's own figures (fair share, deserved, the
    eviction total), for which KAI's schema has no field, as a ``FairShare`` condition whose
    message is their JSON (KAI lets applications add conditions of their own). ``requested``
    (queue -> amount, ``requested_by_queue``) is what KAI's queue controller writes there, not
    the engine's figure."""
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
                    "requested": resource_list(requested.get(name, Resources.ZERO)),
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
    job: Job, reasons: list[Reason] | None, old: dict[str, Any], now: float, pool: str = "default"
) -> dict[str, Any]:
    """phase, counts, resourcesStatus and the UnschedulableOnNodePool condition on node pool
    ``pool`` (kept as it was while the job was not looked at, and while any of its pods holds
    a node: KAI updates it only for a job with none, default_status_updater.go
    markPodGroupUnschedulable; cleared when nothing is pending). A job that only waits for its
    pods to be created (``NotReady``) keeps it as it was too: KAI records the NotReady event
    and leaves the condition (default_status_updater.go, ``IsReadyForScheduling``). A job
    waiting on a pod pykai holds back as unreadable gets the condition, which says what to
    fix."""
    tasks = list(job.tasks.values())
    running = sum(1 for t in tasks if t.status in HOLDS_NODE)
    pending = sum(
        1
        for t in tasks
        if t.status == TaskStatus.PENDING or (t.problem and t.status == TaskStatus.GATED)
    )
    allocated = sum((t.request for t in tasks if t.status in HOLDS_NODE), Resources.ZERO)
    requested = job_requested(job)
    status: dict[str, Any] = {
        "phase": "Running" if running >= job.min_member else "Pending",
        "running": running,
        "pending": pending,
        "resourcesStatus": {
            "allocated": resource_list(allocated),
            "requested": resource_list(requested),
        },
    }
    waits_for_pods = bool(reasons) and all(r.reason == NOT_READY for r in reasons or ())
    if waits_for_pods and not any(t.problem for t in tasks):
        reasons = None
    if pending and reasons and not running:
        status["schedulingConditions"] = [_condition(reasons, old, now, pool)]
    elif pending and old.get("schedulingConditions"):
        status["schedulingConditions"] = old["schedulingConditions"]
    return status


def invalid_podgroup_status(
    problem: ObjectProblem, old: dict[str, Any], now: float, pool: str = "default"
) -> dict[str, Any]:
    """The status of a PodGroup the scheduler cannot read: what it had, with a condition that
    says why it is skipped."""
    return {
        **old,
        "schedulingConditions": [_condition([Reason(INVALID, problem.message)], old, now, pool)],
    }


def unschedulable_conditions(pod: Obj, message: str, now: float) -> list[dict[str, Any]] | None:
    """The status.conditions of a pending pod the scheduler cannot place (or holds back, as it
    cannot be read as written): ``PodScheduled`` False, reason ``Unschedulable``, as
    kube-scheduler marks it; None if the pod says so already."""
    current = condition_of(pod, "PodScheduled")
    if current.get("status") == "False" and current.get("message") == message:
        return None
    return with_conditions(pod, now, Condition("PodScheduled", "False", "Unschedulable", message))


def held_pods(state: ClusterState) -> list[tuple[Task, ObjectProblem]]:
    """Pending pods of pykai's held back because they cannot be read, with their problem."""
    held = []
    for problem in state.problems.values():
        if problem.kind == "Pod":
            task = state.task_by_key(problem.namespace, problem.name)
            if task is not None and task.problem and task.status == TaskStatus.GATED:
                held.append((task, problem))
    return held


def _condition(reasons: list[Reason], old: dict[str, Any], now: float, pool: str) -> dict[str, Any]:
    entries = [{"reason": r.reason, "message": r.message} for r in reasons]
    previous = (old.get("schedulingConditions") or [{}])[0]
    if previous.get("reasons") == entries:
        return dict(previous)
    return {
        "type": "UnschedulableOnNodePool",
        "nodePool": pool,
        "status": "True",
        "reasons": entries,
        "lastTransitionTime": format_time(now),
        "transitionID": hashlib.sha256(repr(entries).encode()).hexdigest()[:8],
    }


# ---- the controller ---------------------------------------------------------------------------

SCHEDULER_FIELDS = frozenset({"schedulingConditions"})  # the scheduler's part of PodGroup status
CONTROLLER_FIELDS = frozenset({"phase", "running", "pending", "resourcesStatus"})


def write_status(
    host: Host, result: CycleResult, components: frozenset[str], *, everything: bool = False
) -> None:
    """What the status-writing ``components`` own (scheduler, queuecontroller,
    podgroupcontroller), written where it changed: the PodGroups whose job changed since the
    last pass, or whose reasons this cycle gives (``everything``: all, to repair what a lost
    write left behind)."""
    now = host.now()
    report_problems(
        host.state.problems.values(),
        lambda p: host.get(p.kind, p.name, p.namespace),
        lambda obj, problem: host.record(obj, INVALID, problem.message, WARNING, once=True),
    )
    if "scheduler" in components:
        held = [
            (pod, problem.message)
            for task, problem in held_pods(host.state)
            if (pod := host.get("Pod", task.name, task.namespace)) is not None
        ]
        host.each("the scheduler", held, lambda item: _mark_unschedulable(host, *item, now))
    if "queuecontroller" in components:
        _queues(host, result)
    owned = SCHEDULER_FIELDS if "scheduler" in components else frozenset()
    owned |= CONTROLLER_FIELDS if "podgroupcontroller" in components else frozenset()
    changed = host.state.take_changed_jobs()
    if not owned:
        return
    if everything:
        groups = host.list("PodGroup")
    else:
        keys = changed | result.unschedulable.keys()
        keys |= {
            f"{p.namespace}/{p.name}" for p in host.state.problems.values() if p.kind == "PodGroup"
        }
        groups = [group for key in sorted(keys) if (group := _podgroup_of(host, key)) is not None]
    host.each(
        "the status controller", groups, lambda group: _podgroup(host, group, result, owned, now)
    )


def _podgroup_of(host: Host, key: str) -> Obj | None:
    namespace, _, name = key.partition("/")
    return host.get("PodGroup", name, namespace)


def requested_by_queue(queues: list[Obj], jobs: list[Job]) -> dict[str, Resources]:
    """Queue name -> what its jobs request, as KAI's queue controller sums it into a Queue's
    ``status.requested``: each PodGroup's ``resourcesStatus.requested`` (every pod not
    finished, gated pods and gangs still waiting for pods included; podgroup_status) into its
    queue, each child queue's sum into its parent (resource_updater.go). The engine's own
    figure leaves out the jobs allocate does not try."""
    parents = {
        q["metadata"]["name"]: mapping(q.get("spec")).get("parentQueue") or "" for q in queues
    }
    sums: dict[str, Resources] = {}
    for job in jobs:
        amount = job_requested(job)
        queue, seen = job.queue, set()
        while queue in parents and queue not in seen:  # a cycle is the validator's to report
            seen.add(queue)
            sums[queue] = sums.get(queue, Resources.ZERO) + amount
            queue = parents[queue]
    return sums


def job_requested(job: Job) -> Resources:
    """What a PodGroup's ``resourcesStatus.requested`` says: every pod not finished."""
    return sum(
        (t.request for t in job.tasks.values() if t.status != TaskStatus.SUCCEEDED),
        Resources.ZERO,
    )


def _queues(host: Host, result: CycleResult) -> None:
    queues = host.list("Queue")
    new = evictions_by_queue(host, result)

    def evictions(name: str) -> int:
        stored = next(
            (
                queue_figures(q.get("status")).get("evictions", 0)
                for q in queues
                if q["metadata"]["name"] == name
            ),
            0,
        )
        return (stored if isinstance(stored, int) and stored > 0 else 0) + new.get(name, 0)

    requested = requested_by_queue(queues, list(host.state.jobs.values()))
    statuses = queue_statuses(queues, result, evictions, requested)
    changed = [
        (q, statuses[q["metadata"]["name"]])
        for q in queues
        if (q.get("status") or {}) != statuses[q["metadata"]["name"]]
    ]
    host.each("the queue controller", changed, lambda item: replace_status(host, *item))


def _podgroup(
    host: Host, group: Obj, result: CycleResult, owned: frozenset[str], now: float
) -> None:
    meta = group["metadata"]
    key = f"{meta['namespace']}/{meta['name']}"
    job = host.state.jobs.get(key)
    old = group.get("status") or {}
    pool = pool_of(mapping(meta.get("labels")))
    if job is None:
        problem = host.state.problems.get(("PodGroup", meta["namespace"], meta["name"]))
        if problem is not None and "schedulingConditions" in owned:
            status = invalid_podgroup_status(problem, old, now, pool)
            if status != old:
                replace_status(host, group, status)
        return
    reasons = result.unschedulable.get(key)
    computed = podgroup_status(job, reasons, old, now, pool)
    status = {k: v for k, v in old.items() if k not in owned}
    status |= {k: v for k, v in computed.items() if k in owned}
    if status == old:
        return
    replace_status(host, group, status)
    condition = (status.get("schedulingConditions") or [None])[0]
    if reasons and condition != (old.get("schedulingConditions") or [None])[0]:
        _say_why(host, group, job, reasons, now)


def _say_why(host: Host, group: Obj, job: Job, reasons: list[Reason], now: float) -> None:
    """A job's reasons changed: the PodGroup's event (NotReady when it waits for pods, else
    Unschedulable), and each pending pod's event and condition."""
    text = reason_text(reasons)
    not_ready = all(r.reason == NOT_READY for r in reasons)
    host.record(group, NOT_READY if not_ready else "Unschedulable", text, NORMAL)
    if not_ready:
        return
    pending = [
        pod
        for task in job.tasks.values()
        if task.status == TaskStatus.PENDING
        and (pod := host.get("Pod", task.name, task.namespace)) is not None
    ]
    for pod in pending:
        host.record(pod, "Unschedulable", text, WARNING)
    host.each("the scheduler", pending, lambda pod: _mark_unschedulable(host, pod, text, now))


def _mark_unschedulable(host: Host, pod: Obj, message: str, now: float) -> None:
    conditions = unschedulable_conditions(pod, message, now)
    if conditions is not None:
        host.patch(pod, {"status": {"conditions": conditions}}, status=True)


def replace_status(host: Host, obj: Obj, status: dict[str, Any]) -> None:
    """Make ``status`` an object's whole status (keys it no longer has are removed)."""
    old = obj.get("status") or {}
    patch = {key: None for key in old if key not in status} | status
    host.patch(obj, {"status": patch}, status=True)
