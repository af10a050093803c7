"""reclaim: a queue below its fair share takes resources back from preemptible jobs of queues
above theirs.

KAI's rules (proportion plugin, reclaimable strategies), judged at the level just below the
lowest common ancestor (LCA) of the two queues:
- the reclaimer's queue must stay within its fair share with the job (CanReclaimResources);
- each reclaimee must be over its fair share before its last victim is taken
  (MaintainFairShare), or the reclaimer is within its deserved quota and the reclaimee over
  its own (GuaranteeDeservedQuota);
- at every level, a reclaimer that ends above its fair share must stay less saturated
  (allocated / fair share) than each sibling it takes from.

pykai goes beyond KAI (issue #1934): a queue is restored up to its fair share, not only to its
deserved quota; since the reclaimer never ends above its fair share, the reclaimee cannot
reclaim back, so there is no flapping.
"""

from __future__ import annotations

from functools import partial

from pykai.engine.actions.allocate import schedulable_jobs, tasks_to_allocate
from pykai.engine.actions.solver import VictimUnit, solve, victim_units
from pykai.engine.capacity import over_capacity
from pykai.engine.jobs import Job, TaskStatus
from pykai.engine.min_runtime import is_protected, reclaim_min_runtime
from pykai.engine.ordering import JobQueue
from pykai.engine.session import QueueInfo, Session
from pykai.model.resources import Resources

EPS = 1e-9


def reclaim(session: Session) -> None:
    """Run the reclaim action."""
    requests: dict[str, Resources] = {}

    def request_of(job: Job) -> Resources:
        if job.key not in requests:
            requests[job.key] = sum((t.request for t in tasks_to_allocate(job)), Resources.ZERO)
        return requests[job.key]

    queue = JobQueue(session, schedulable_jobs(session, note=False), request_of)
    while (job := queue.pop()) is not None:
        tasks = tasks_to_allocate(job)
        request = request_of(job)
        if not tasks or not can_reclaim(session, job, request):
            continue
        victims = _victims(session, job)
        if not victims:
            continue
        units = list(victim_units(victims, partial(_protected, session, reclaimer=job)))
        message = f"Reclaimed by queue {job.queue} for {job.key}"
        validator = _Validator(session, job)
        if solve(session, job, tasks, units, "Reclaimed", message, validator):
            session.reasons.pop(job.key, None)


def can_reclaim(session: Session, job: Job, request: Resources) -> bool:
    """The reclaimer stays within its fair share (and, if non-preemptible, its quota), and
    within every limit."""
    chain = session.chain(job)
    if not chain or over_capacity(job, chain, request) is not None:
        return False
    leaf = chain[0]
    if not (leaf.usage.allocated + request).fits_in(leaf.fair_share, eps=1e-6):
        return False
    return job.preemptible or (leaf.usage.allocated_non_preemptible + request).fits_in(
        leaf.deserved
    )


def _victims(session: Session, reclaimer: Job) -> list[Job]:
    """Preemptible jobs with running pods in other queues that are over their fair share,
    most saturated queue first."""
    chain = set(session.state.queue_chain(reclaimer.queue))
    found = []
    for queue in sorted(session.state.running_jobs):
        if queue == reclaimer.queue:
            continue
        level = _below_lca(session, queue, chain)
        if level is None or not _over_share(level):
            continue
        found += [v for v in session.state.running_in(queue) if v.preemptible]
    return found


def _below_lca(session: Session, queue: str, other_chain: set[str]) -> QueueInfo | None:
    """The queue on ``queue``'s path just below its lowest common ancestor with the other
    chain (the top-level queue when they share no ancestor)."""
    below = [q for q in session.state.queue_chain(queue) if q not in other_chain]
    if not below or below[-1] not in session.queues:
        return None
    return session.queues[below[-1]]


def _over_share(queue: QueueInfo) -> bool:
    return any(a > f + EPS for a, f in zip(queue.usage.allocated, queue.fair_share, strict=True))


def _protected(session: Session, victim: Job, reclaimer: Job) -> bool:
    return is_protected(session, victim, reclaim_min_runtime(session, victim, reclaimer.queue))


class _Validator:
    """KAI's reclaim scenario validator, run with the victims evicted and the reclaimer placed."""

    def __init__(self, session: Session, reclaimer: Job) -> None:
        self.session = session
        self.reclaimer = reclaimer
        self.chain = [session.queues[n] for n in session.state.queue_chain(reclaimer.queue)]
        self.chain_names = {q.name for q in self.chain}

    def __call__(self, units: list[VictimUnit]) -> bool:
        pipelined = Resources.ZERO
        for task in self.reclaimer.tasks.values():
            if task.status == TaskStatus.PIPELINED:
                pipelined += task.request
        involved = [
            n for n, v in zip(("cpu", "memory", "gpu"), pipelined, strict=True) if v > 0
        ] or ["gpu"]
        last_taken: dict[str, Resources] = {}
        for unit in units:
            level = _below_lca(self.session, unit.job.queue, self.chain_names)
            if level is None:
                return False
            last_taken[level.name] = sum((t.request for t in unit.tasks), Resources.ZERO)
        leaf = self.chain[0]
        within_deserved = (leaf.usage.allocated + pipelined).fits_in(leaf.deserved, eps=1e-6)
        for name, last in last_taken.items():
            reclaimee = self.session.queues[name]
            before_last = reclaimee.usage.allocated + last
            over_fair = any(
                before_last.get(r) > reclaimee.fair_share.get(r) + EPS for r in involved
            )
            over_deserved = any(
                before_last.get(r) > reclaimee.deserved.get(r) + EPS for r in involved
            )
            if not (over_fair or (within_deserved and over_deserved)):
                return False
        return self._not_oversaturated(pipelined, involved, set(last_taken))

    def _not_oversaturated(
        self, pipelined: Resources, involved: list[str], reclaimees: set[str]
    ) -> bool:
        """At each level, a reclaimer above its fair share must stay less saturated than the
        siblings it takes from."""
        for queue in self.chain:
            siblings = [
                self.session.queues[n]
                for n in reclaimees
                if self.session.queues[n].parent == queue.parent
            ]
            ratio = _saturation(queue.usage.allocated + pipelined, queue.fair_share, involved)
            if ratio <= 1 + EPS:
                continue
            multiplier = self.session.config.reclaimer_saturation_multiplier
            for sibling in siblings:
                if ratio * multiplier >= _saturation(
                    sibling.usage.allocated, sibling.fair_share, involved
                ):
                    return False
        return True


def _over(amount: Resources, bound: Resources, involved: list[str]) -> bool:
    return any(amount.get(r) > bound.get(r) + EPS for r in involved)


def _saturation(allocated: Resources, fair: Resources, involved: list[str]) -> float:
    ratios = [allocated.get(r) / fair.get(r) for r in involved if fair.get(r) > EPS]
    return max(ratios, default=0.0)
