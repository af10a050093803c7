"""consolidation: defragment so that a pending preemptible job fits.

For a pending preemptible job that fits in the cluster's total free resources but on no single
node, preemptible pods (at most ``max_consolidation_preemptees``) are moved: evicted and placed
again elsewhere. A scenario is kept only if the job fits and every moved pod is placed again,
so no running pod is lost. Beyond KAI: only pods that a controller recreates (with a
controlling ownerReference: ReplicaSet, Job, StatefulSet, RayCluster, ...) are moved; a bare
pod never is, since nothing would bring it back (the Kubernetes descheduler's rule).
"""

from __future__ import annotations

import dataclasses

from pykai.engine.actions.allocate import schedulable_jobs, tasks_to_allocate
from pykai.engine.actions.gang import place_gang
from pykai.engine.actions.solver import VictimUnit, victim_units
from pykai.engine.capacity import over_capacity
from pykai.engine.jobs import Job, Task, TaskStatus
from pykai.engine.ordering import job_order_key
from pykai.engine.placement import find_node
from pykai.engine.session import Session, Statement
from pykai.model.resources import Resources


def consolidation(session: Session) -> None:
    """Run the consolidation action (off when either placement strategy is spread)."""
    if not session.config.consolidation_enabled:
        return
    for job in sorted(schedulable_jobs(session, note=False), key=job_order_key):
        if not job.preemptible or job.key in session.moved_jobs:
            continue
        tasks = tasks_to_allocate(job)
        request = sum((t.request for t in tasks), Resources.ZERO)
        if not tasks or over_capacity(job, session.chain(job), request) is not None:
            continue
        if not _fits_in_total_free(session, request):
            continue
        units = [
            u for u in victim_units(_movable_jobs(session, job), lambda _: False) if _movable(u)
        ]
        if _consolidate(session, job, tasks, units):
            session.reasons.pop(job.key, None)


def _fits_in_total_free(session: Session, request: Resources) -> bool:
    nodes = session.state.nodes
    if not len(nodes):
        return False
    free = (nodes.alloc - nodes.used + nodes.releasing)[nodes.schedulable].sum(axis=0)
    return request.fits_in(Resources(float(free[0]), float(free[1]), float(free[2])))


def _movable_jobs(session: Session, preemptor: Job) -> list[Job]:
    state = session.state
    return [
        v
        for queue in sorted(state.running_jobs)
        for v in state.running_in(queue)
        if v.preemptible and v is not preemptor and v.key not in session.moved_jobs
    ]


def _movable(unit: VictimUnit) -> bool:
    """Only pods a controller brings back are moved."""
    return all(any(o.controller for o in t.pod.meta.owners) for t in unit.tasks)


def _consolidate(session: Session, job: Job, tasks: list[Task], units: list[VictimUnit]) -> bool:
    limit = session.config.max_consolidation_preemptees
    statement = session.statement()
    moved: list[Task] = []
    for unit in units:
        if len(moved) + len(unit.tasks) > limit:
            break
        for task in unit.tasks:
            statement.evict(task, "Consolidated", f"moved to make room for {job.key}")
        moved += unit.tasks
        mark = statement.checkpoint()
        if place_gang(session, statement, tasks, job.gang_satisfied()) is None and _place_again(
            session, statement, moved
        ):
            statement.commit()
            session.moved_jobs.update(u.job.key for u in units if u.tasks[0] in moved)
            return True
        statement.rollback(mark)
    statement.discard()
    return False


def _place_again(session: Session, statement: Statement, moved: list[Task]) -> bool:
    """Reserve a new place (pipelined) for every moved pod, away from the node it leaves."""
    for task in moved:
        shadow = dataclasses.replace(
            task, job_key="", status=TaskStatus.PENDING, node="", gpu_groups=()
        )
        placement = find_node(
            session.state.nodes, shadow, session.config.placement, avoid=task.node
        )
        if placement is None:
            return False
        statement.pipeline(shadow, placement.node, placement.gpu_groups)
    return True
