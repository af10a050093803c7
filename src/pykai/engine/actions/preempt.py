"""preempt: inside one queue, a pending job evicts preemptible jobs of strictly lower priority.

As KAI's preempt (actions/preempt/preempt.go): only a non-preemptible preemptor's quota is
checked up front; queue limits are checked when the preemptor is placed in the solver's
simulation, on the usage left once its victims are evicted.
"""

from __future__ import annotations

from functools import partial

from pykai.engine.actions.allocate import schedulable_jobs, tasks_to_allocate
from pykai.engine.actions.simulation import request_of
from pykai.engine.actions.solver import Solver
from pykai.engine.capacity import over_quota
from pykai.engine.jobs import Job
from pykai.engine.min_runtime import is_protected, preempt_min_runtime
from pykai.engine.ordering import job_order_key
from pykai.engine.session import Session


def preempt(session: Session) -> None:
    """Run the preempt action."""
    state = session.state
    solver = Solver(session, "preempt", "Preempted")
    jobs = sorted(schedulable_jobs(session, note=False), key=job_order_key)
    for index, job in enumerate(jobs):
        if solver.out_of_time:
            solver.stop(jobs[index:])
            return
        tasks = tasks_to_allocate(job)
        if not tasks or over_quota(job, session.chain(job), request_of(tasks)) is not None:
            continue
        if not any(v.preemptible for v in state.running_in(job.queue, job.priority)):
            continue
        message = f"Preempted by {job.key} (priority {job.priority}) in queue {job.queue}"
        protected = partial(_protected, session)
        eligible = partial(_lower, job.priority)
        if solver.solve(job, tasks, [job.queue], eligible, protected, message) is not None:
            session.reasons.pop(job.key, None)


def _lower(priority: int, victim: Job) -> bool:
    return victim.priority < priority


def _protected(session: Session, victim: Job) -> bool:
    return is_protected(session, victim, preempt_min_runtime(session, victim))
