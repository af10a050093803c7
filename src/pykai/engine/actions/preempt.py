"""preempt: inside one queue, a pending job evicts preemptible jobs of strictly lower priority.

A non-preemptible preemptor must still fit within its queue's quota (and every limit).
"""

from __future__ import annotations

from pykai.engine.actions.allocate import schedulable_jobs, tasks_to_allocate
from pykai.engine.actions.solver import solve, victim_units
from pykai.engine.capacity import over_capacity
from pykai.engine.jobs import Job
from pykai.engine.min_runtime import is_protected, preempt_min_runtime
from pykai.engine.ordering import job_order_key
from pykai.engine.session import Session
from pykai.model.resources import Resources


def preempt(session: Session) -> None:
    """Run the preempt action."""
    state = session.state
    for job in sorted(schedulable_jobs(session, note=False), key=job_order_key):
        tasks = tasks_to_allocate(job)
        if not tasks:
            continue
        request = sum((t.request for t in tasks), Resources.ZERO)
        if over_capacity(job, session.chain(job), request) is not None:
            continue
        victims = [v for v in state.running_in(job.queue, job.priority) if v.preemptible]
        if not victims:
            continue
        units = list(
            victim_units(
                victims, lambda v: is_protected(session, v, preempt_min_runtime(session, v))
            )
        )
        message = f"Preempted by {job.key} (priority {job.priority}) in queue {job.queue}"
        if solve(session, job, tasks, units, "Preempted", message):
            session.reasons.pop(job.key, None)


def _protected(session: Session, victim: Job) -> bool:
    return is_protected(session, victim, preempt_min_runtime(session, victim))
