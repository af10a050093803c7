"""The dashboard's page model: the engine's state (and what a backend remembers: reasons,
evictions, history) turned into plain data for the pages. No I/O; both backends call
``build_page`` with their own state, so the embedded cluster and ``pykai run`` show the same."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from pykai.controllers.status import reason_text
from pykai.engine.decisions import Reason
from pykai.engine.jobs import HOLDS_NODE, Job, Task, TaskStatus
from pykai.engine.positions import pending_positions
from pykai.engine.session import QueueInfo, Session
from pykai.engine.settings import SchedulerConfig
from pykai.engine.state import ClusterState
from pykai.model.positions import Position
from pykai.model.resources import Resources

RESOURCES = ("gpu", "cpu", "memory")  # in the order the pages show them
PENDING_SHOWN = 500  # pending jobs sent to the page (the total is always said)
SHARED_SHOWN = 500  # shared devices listed in words under the GPU map
_ON_DEVICE = HOLDS_NODE | {TaskStatus.RELEASING}  # pods that hold devices now


@dataclass(frozen=True, slots=True)
class Eviction:
    """One eviction as the dashboard lists it."""

    time: float
    namespace: str
    pod: str
    action: str  # KAI's action: preempt, reclaim, consolidation, stalegangeviction
    preemptor: str  # the job it made room for ("" for a stale gang)
    message: str


def build_page(
    state: ClusterState,
    config: SchedulerConfig,
    now: float,
    *,
    reasons: Mapping[str, Sequence[Reason]],
    evictions: Sequence[Eviction],
    history: Mapping[str, Any],
) -> dict[str, Any]:
    """Everything the pages show, as JSON-ready data: ``queues`` (the tree, with quota, limit,
    fair share, allocated and requested per resource), ``gpus`` (every node and device, and
    what each queue holds of it), ``pending`` (in the order the scheduler will try them, with
    positions and reasons; ``reasons`` maps a job key to why it waited last), ``evictions`` (newest
    first) and ``history`` (as the backend keeps it)."""
    session = Session.open(state, config, now)
    queue_names = sorted(state.queues)
    return {
        "time": now,
        "resources": list(RESOURCES),
        "queues": _queue_tree(session, state),
        "gpus": _gpu_map(state, queue_names),
        "pending": _pending(state, now, reasons),
        "evictions": [asdict(e) for e in sorted(evictions, key=lambda e: -e.time)],
        "history": dict(history),
    }


def allocated_gpus(state: ClusterState) -> dict[str, float]:
    """Each queue's allocated GPUs (its whole subtree's), for the history chart."""
    return {
        name: state.subtree[name].allocated.gpu for name in state.queues if name in state.subtree
    }


# ---- the queue tree ---------------------------------------------------------------------------


def _queue_tree(session: Session, state: ClusterState) -> list[dict[str, Any]]:
    """Queues depth first (children by name), each with its depth and figures."""
    rows: list[dict[str, Any]] = []

    def visit(info: QueueInfo, depth: int) -> None:
        rows.append(
            {
                "name": info.name,
                "parent": info.parent,
                "depth": depth,
                "priority": info.priority,
                "figures": {
                    resource: {
                        "quota": _amount(info.deserved, resource),
                        "limit": _amount(info.limit, resource),
                        "fairShare": _amount(info.fair_share, resource),
                        "allocated": _amount(info.usage.allocated, resource),
                        "requested": _amount(info.usage.requested, resource),
                    }
                    for resource in RESOURCES
                },
            }
        )
        for child in info.children:
            visit(session.queues[child], depth + 1)

    for info in sorted(session.queues.values(), key=lambda q: q.name):
        if not info.parent:
            visit(info, 0)
    for name in sorted(set(state.queues) - set(session.queues)):
        parent = state.queues[name].parent
        rows.append({"name": name, "parent": parent, "depth": 0, "orphan": True, "figures": {}})
    return rows


def _amount(amount: Resources, resource: str) -> float | None:
    """One resource in the pages' units (GPUs, cores, GiB); None for unlimited."""
    value = float(getattr(amount, resource))
    if math.isinf(value):
        return None
    if resource == "cpu":
        return value / 1000
    if resource == "memory":
        return value / 2**30
    return value


# ---- the GPU map ------------------------------------------------------------------------------


def _gpu_map(state: ClusterState, queue_names: list[str]) -> dict[str, Any]:
    """``queues`` (the colour index: queue names, then "" for pods in no queue) and ``nodes``:
    [name, [device, ...]] where a device is a list of [queue index, portion] (empty: idle).
    Shared devices (GPU groups) come first on a node, in group order, then whole devices in
    the order their pods were created. ``shared`` lists the shared devices in words."""
    index = {name: i for i, name in enumerate(queue_names)}
    no_queue = len(queue_names)
    whole: dict[str, list[tuple[int, int]]] = {}  # node -> (queue index, devices) per pod
    groups: dict[str, dict[str, dict[int, float]]] = {}  # node -> group -> queue -> portion
    for task in sorted(state.tasks.values(), key=lambda t: t.order_key):
        if task.status not in _ON_DEVICE or not task.node:
            continue
        queue = index.get(_queue_of(state, task), no_queue)
        gpu = task.pod.gpu
        if gpu.is_shared:
            portion = state.portion(task, task.node)
            for group in task.gpu_groups:
                held = groups.setdefault(task.node, {}).setdefault(group, {})
                held[queue] = held.get(queue, 0.0) + portion
        elif gpu.whole:
            whole.setdefault(task.node, []).append((queue, gpu.whole))
    nodes: list[list[Any]] = []
    shared: list[dict[str, Any]] = []
    names = [*queue_names, ""]
    for name in state.nodes.names:
        count = max(0, int(state.nodes.view(name).allocatable.gpu))
        devices: list[list[list[float]]] = []
        for group, held in sorted(groups.get(name, {}).items()):
            portions = sorted(held.items())
            devices.append([[q, round(p, 4)] for q, p in portions])
            shared.append(
                {
                    "node": name,
                    "device": len(devices) - 1,
                    "group": group,
                    "queues": [{"queue": names[q], "portion": round(p, 4)} for q, p in portions],
                }
            )
        for queue, amount in whole.get(name, []):
            devices.extend([[queue, 1.0]] for _ in range(amount))
        devices.extend([] for _ in range(count - len(devices)))
        nodes.append([name, devices])
    return {
        "queues": names,
        "nodes": nodes,
        "shared": shared[:SHARED_SHOWN],
        "sharedTotal": len(shared),
    }


def _queue_of(state: ClusterState, task: Task) -> str:
    job = state.jobs.get(task.job_key)
    return job.queue if job is not None else ""


# ---- pending jobs -----------------------------------------------------------------------------


def _pending(
    state: ClusterState, now: float, reasons: Mapping[str, Sequence[Reason]]
) -> dict[str, Any]:
    """Pending jobs in the order allocate would try them now (``position``, from 1) with
    their place in their own queue (``queuePosition``, from 1) and why they waited
    (engine/positions.py); then jobs allocate will not try (no queue, too few pods), without
    positions."""
    rows = [_pending_row(state.jobs[p.job], p) for p in pending_positions(state, now, reasons)]
    return {"total": len(rows), "jobs": rows[:PENDING_SHOWN]}


def _pending_row(job: Job, position: Position) -> dict[str, Any]:
    return {
        "job": job.key,
        "queue": job.queue,
        "position": None if position.in_cycle is None else position.in_cycle + 1,
        "queuePosition": None if position.in_queue is None else position.in_queue + 1,
        "pending": job.pending,
        "gpu": round(job.pending_request.gpu, 4),
        "priority": job.priority,
        "reason": reason_text(list(position.reasons))
        or "not judged yet: waiting for the next cycle",
    }
