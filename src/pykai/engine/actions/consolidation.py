"""consolidation: defragment so that a pending preemptible job fits.

For a pending preemptible job that fits in the cluster's total free resources but on no single
node, preemptible pods (at most ``max_consolidation_preemptees``) are moved: the victim solver
evicts them and places them again, and a scenario is kept only if the job fits and every
evicted pod has a place again (its own, or a new one where a reservation is pipelined), so no
running pod is lost. Beyond KAI: only pods that a controller recreates (with a controlling
ownerReference: ReplicaSet, Job, StatefulSet, RayCluster, ...) are moved; a job with a bare pod
never is, since nothing would bring the pod back (the Kubernetes descheduler's rule).
"""

from __future__ import annotations

from functools import partial

from pykai.engine.actions.allocate import schedulable_jobs, tasks_to_allocate
from pykai.engine.actions.simulation import Outcome, request_of
from pykai.engine.actions.solver import Solver
from pykai.engine.actions.victims import offers
from pykai.engine.capacity import over_capacity
from pykai.engine.jobs import Job
from pykai.engine.ordering import job_order_key
from pykai.engine.session import Session
from pykai.model.resources import Resources


def consolidation(session: Session) -> None:
    """Run the consolidation action (off when either placement strategy is spread)."""
    if not session.config.consolidation_enabled:
        return
    limit = session.config.max_consolidation_preemptees
    solver = Solver(session, "consolidation", "Consolidated", max_pods=limit, moves=True)
    jobs = sorted(schedulable_jobs(session, note=False), key=job_order_key)
    free = _total_free(session)
    for index, job in enumerate(jobs):
        if solver.out_of_time:
            solver.stop(jobs[index:])
            return
        if not job.preemptible or job.key in session.moved_jobs:
            continue
        tasks = tasks_to_allocate(job)
        request = request_of(tasks)
        if not tasks or over_capacity(job, session.chain(job), request) is not None:
            continue
        if free is None or not request.fits_in(free):
            continue
        message = f"moved to make room for {job.key}"
        leaves = solver.victim_queues()
        movable = partial(_movable, session, job)
        outcome = solver.solve(job, tasks, leaves, movable, _never, message, _all_placed_again)
        if outcome is not None:
            session.moved_jobs.update(t.job_key for t in outcome.moved)
            session.reasons.pop(job.key, None)
            free = _total_free(session)


def _total_free(session: Session) -> Resources | None:
    """The cluster's free and releasing resources together, whole devices and the spare
    portions of shared ones (KAI's IsEnoughGPUsAllocatableForJob checks a job against it);
    None without nodes. Only a consolidation changes it during the action."""
    nodes = session.state.nodes
    if not len(nodes):
        return None
    free = (nodes.alloc - nodes.used + nodes.releasing)[nodes.schedulable].sum(axis=0)
    spare = float(nodes.shared_spare[nodes.schedulable].sum())
    return Resources(float(free[0]), float(free[1]), float(free[2]) + spare)


def _movable(session: Session, preemptor: Job, victim: Job) -> bool:
    """A preemptible running job other than the preemptor, not moved yet this cycle, whose
    every pod a controller brings back."""
    return (
        victim is not preemptor
        and victim.key not in session.moved_jobs
        and all(any(o.controller for o in t.pod.meta.owners) for t in offers(victim))
    )


def _never(_: Job) -> bool:
    """Consolidation moves pods, so min-runtime protects none from it."""
    return False


def _all_placed_again(outcome: Outcome) -> bool:
    """KAI's consolidation validator: no victim is left without a place."""
    return not outcome.victims
