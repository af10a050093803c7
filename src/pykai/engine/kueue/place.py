"""Placing the pods of admitted Kueue Workloads: pykai's engine places them, KAI's queues do
not govern them. Their PodGroups name ``ADMITTED_QUEUE`` (``Job.kueue_admitted``), which is no
KAI Queue (a Queue's name cannot hold a slash): allocate, reclaim, preempt and consolidation
never try them and never take victims from them, KAI queues' fair share leaves out what they use
(like pods of other schedulers), and they still count on nodes. Kueue's quota already admitted
them, so they are placed first in a cycle, gang by gang, in job order; what does not fit waits
(no victims)."""

from __future__ import annotations

from pykai.engine.actions.allocate import tasks_to_allocate
from pykai.engine.actions.gang import place_gang
from pykai.engine.decisions import Reason
from pykai.engine.ordering import job_order_key
from pykai.engine.placement import explain
from pykai.engine.session import Session


def place_admitted(session: Session) -> None:
    """Place the pending pods of Kueue-managed jobs on free resources (never evicting)."""
    state = session.state
    jobs = sorted(
        (state.jobs[k] for k in state.pending_jobs if state.jobs[k].kueue_admitted),
        key=job_order_key,
    )
    for job in jobs:
        if not job.ready_for_scheduling():
            continue
        while tasks := tasks_to_allocate(job):
            statement = session.statement()
            failed = place_gang(session, statement, tasks, job.gang_satisfied())
            if failed is not None:
                session.note(job, Reason("Unschedulable", explain(state.nodes, tasks[failed])))
                break
            statement.commit()
