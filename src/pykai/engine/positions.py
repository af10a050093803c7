"""Where each pending job stands: its place in its queue, its place in the order the next
allocate action will try jobs, and why it waited last cycle.

The order is the allocate action's own (``JobQueue`` over ``schedulable_jobs``): queue order
down the tree, job order inside a leaf. Every job ahead is taken to run, so its request counts
for its queues' allocation before the next pick (as it would if it fitted): the order
interleaves queues by fairness as the scheduler does, and says who would get resources first.
Jobs allocate does not try at all (missing queue, gang not ready) have no place, only their
reason. Nothing is changed: the state is read, and the session is thrown away.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from pykai.engine.actions.allocate import schedulable_jobs, tasks_to_allocate
from pykai.engine.jobs import Job
from pykai.engine.ordering import JobQueue
from pykai.engine.session import Session
from pykai.engine.settings import SchedulerConfig
from pykai.engine.state import ClusterState
from pykai.model.meta import Obj
from pykai.model.positions import Board, Position, Reason, job_key
from pykai.model.resources import Resources

Reasons = Mapping[str, Iterable[Reason]]  # job key -> why it waited last cycle


def pending_positions(
    state: ClusterState, now: float, reasons: Reasons | None = None
) -> list[Position]:
    """Every job with pending pods (except those Kueue admitted), those allocate would try
    first in the order it would try them, then the others by key. ``reasons`` (e.g. from the
    PodGroups' conditions, or the last cycle's result) fill in why each waited; a job that
    allocate will not try gets its blocker as its reason when none is given."""
    known = reasons or {}
    if not state.pending_jobs and not state.held_jobs:
        return []  # the usual case of a settled cluster with room: no session to open
    session = Session.open(state, SchedulerConfig(), now)
    tried = schedulable_jobs(session)  # notes the blockers of the others in session.reasons
    extra: dict[str, Resources] = {}

    def request_of(job: Job) -> Resources:
        total = Resources.ZERO
        for task in tasks_to_allocate(job):
            total += task.request
        return total

    def allocated(name: str) -> Resources:
        return session.queues[name].usage.allocated + extra.get(name, Resources.ZERO)

    order = JobQueue(session, tried, request_of, allocated=allocated)
    positions: list[Position] = []
    in_queue: dict[str, int] = {}
    while (job := order.pop()) is not None:
        request = request_of(job)
        for name in state.queue_chain(job.queue):
            extra[name] = extra.get(name, Resources.ZERO) + request
        place = in_queue.get(job.queue, 0)
        in_queue[job.queue] = place + 1
        why = tuple(known.get(job.key, ()))
        positions.append(Position(job.key, job.queue, job.priority, place, len(positions), why))
    placed = {p.job for p in positions}
    for key in sorted(state.pending_jobs.union(state.held_jobs) - placed):
        job = state.jobs[key]
        if job.kueue_admitted:
            continue
        why = tuple(known.get(key, ())) or tuple(session.reasons.get(key, ()))
        positions.append(Position(key, job.queue, job.priority, None, None, why))
    return positions


def board(state: ClusterState, now: float, reasons: Reasons | None = None) -> Board:
    """Every pending job's position (``pending_positions``) with the queue tree, as of ``now``."""
    positions = tuple(pending_positions(state, now, reasons))
    return Board(positions, {name: state.queue_chain(name) for name in state.queues}, now)


def reasons_of(podgroups: Iterable[Obj]) -> dict[str, list[Reason]]:
    """The reasons each PodGroup's status says it waited for, by job key."""
    return {job_key(group): recorded_reasons(group) for group in podgroups}


def recorded_reasons(podgroup: Obj) -> list[Reason]:
    """The reasons a PodGroup's status says it waited for (its scheduling conditions)."""
    status = podgroup.get("status")
    conditions = status.get("schedulingConditions") if isinstance(status, dict) else None
    found = []
    for condition in conditions if isinstance(conditions, list) else []:
        entries = condition.get("reasons") if isinstance(condition, dict) else None
        for entry in entries if isinstance(entries, list) else []:
            if isinstance(entry, dict) and entry.get("reason"):
                found.append(Reason(str(entry["reason"]), str(entry.get("message") or "")))
    return found
