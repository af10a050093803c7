"""reclaim: a queue takes resources back from preemptible jobs of other queues.

KAI's rules (proportion plugin: reclaimable, reclaimable/strategies), judged between the two
queues just below the lowest common ancestor (LCA) of the reclaimer's and the victim's queue:
- the reclaimer's queue must stay within its fair share with the job (CanReclaimResources), and
  a non-preemptible job within its queue's quota;
- a victim's queue gives only if it is over its fair share before its last victim is taken
  (MaintainFairShare), or if the reclaimer's queue stays within its deserved quota with the job
  and the victim's queue is over its own quota before its last victim is taken
  (GuaranteeDeservedQuota);
- at every level, a reclaimer that ends above its fair share must stay less saturated
  (allocated / fair share, per resource) than each sibling it takes from;
- queue limits are checked when the reclaimer is placed, after its victims are evicted.

The saturation rule is also applied to candidates: a queue is no candidate when the
reclaimer's side would be at least as saturated as it even before anything is taken from it,
since taking only lowers its saturation (KAI would still try its jobs, as victims that end up
placed again; the search is then far shorter for queues over their fair share).

pykai goes beyond KAI (issue #1934): a queue is restored up to its fair share, not only to its
deserved quota; since the reclaimer never ends above its fair share, the reclaimee cannot
reclaim back, so there is no flapping.
"""

from __future__ import annotations

from functools import partial

from pykai.engine.actions.allocate import schedulable_jobs, tasks_to_allocate
from pykai.engine.actions.simulation import Outcome, request_of
from pykai.engine.actions.solver import Solver
from pykai.engine.jobs import Job
from pykai.engine.min_runtime import is_protected, reclaim_min_runtime
from pykai.engine.ordering import JobQueue
from pykai.engine.session import QueueInfo, Session
from pykai.model.resources import EPS, RESOURCE_NAMES, Resources

# whether a sibling may give to the reclaimer's side: by the two sides, the request and the
# sides' allocations
Verdicts = dict[tuple[str, str, Resources, Resources, Resources], bool]
# a reclaimer's queue -> the victim queues it was laid out for, each other one with the
# sibling it is judged by (its name), and those siblings with the reclaimer's side
Layouts = dict[str, tuple[list[str], list[tuple[str, str]], dict[str, tuple[QueueInfo, QueueInfo]]]]


def reclaim(session: Session) -> None:
    """Run the reclaim action."""
    requests: dict[str, Resources] = {}
    runtimes: dict[tuple[str, str], float] = {}  # (victim's queue, reclaimer's) -> min-runtime
    solver = Solver(session, "reclaim", "Reclaimed")
    verdicts: Verdicts = {}
    layouts: Layouts = {}

    def request_for(job: Job) -> Resources:
        if job.key not in requests:
            requests[job.key] = request_of(tasks_to_allocate(job))
        return requests[job.key]

    queue = JobQueue(session, schedulable_jobs(session, note=False), request_for, memo=solver.keys)
    while (job := queue.pop()) is not None:
        if solver.out_of_time:
            solver.stop([job, *queue.remaining()])
            return
        tasks = tasks_to_allocate(job)
        request = request_for(job)
        if not tasks or not can_reclaim(session, job, request):
            continue
        leaves = solver.until_commit(
            ("candidates", job.queue, request),
            partial(_candidates, session, solver, verdicts, layouts, job, request),
        )
        if not leaves:
            continue
        message = f"Reclaimed by queue {job.queue} for {job.key}"
        protected = partial(_protected, session, runtimes, job)
        validator = _Validator(session, solver, job, request)
        outcome = solver.solve(job, tasks, leaves, _any, protected, message, validator, shared=True)
        if outcome is not None:
            session.reasons.pop(job.key, None)


def can_reclaim(session: Session, job: Job, request: Resources) -> bool:
    """The reclaimer's queue stays within its fair share, and a non-preemptible job within its
    queue's quota (KAI's CanReclaimResources)."""
    chain = session.chain(job)
    if not chain:
        return False
    leaf = chain[0]
    if not (leaf.usage.allocated + request).fits_in(leaf.fair_share, eps=1e-6):
        return False
    return job.preemptible or (leaf.usage.allocated_non_preemptible + request).fits_in(
        leaf.deserved
    )


def _candidates(
    session: Session,
    solver: Solver,
    verdicts: Verdicts,
    layouts: Layouts,
    reclaimer: Job,
    request: Resources,
) -> list[str]:
    """Queues with running preemptible jobs a reclaim strategy may take from (KAI's
    ReclaimVictimFilter). The verdict is the same for every leaf below the same sibling of the
    reclaimer's side, and depends only on the two sides' allocations: ``verdicts`` keeps it
    across commits, by those (the exhaustive search works every one out)."""
    seen: Verdicts = {} if solver.exhaustive else verdicts
    leaves, siblings = _layout(solver, layouts, reclaimer.queue)
    by_side: dict[str, bool] = {}  # this reclaimer's verdict, by the sibling it takes from
    for name, (mine, theirs) in siblings.items():
        key = (mine.name, name, request, mine.usage.allocated, theirs.usage.allocated)
        verdict = seen.get(key)
        if verdict is None:
            verdict = seen[key] = _may_give(mine, theirs, request) and not _saturated(
                mine, theirs, request, session.config.reclaimer_saturation_multiplier
            )
        by_side[name] = verdict
    return [queue for queue, name in leaves if by_side[name]]


def _layout(
    solver: Solver, layouts: Layouts, reclaimer: str
) -> tuple[list[tuple[str, str]], dict[str, tuple[QueueInfo, QueueInfo]]]:
    """The victim queues other than the reclaimer's, each with the sibling of the reclaimer's
    side it is judged by, and those siblings (with the reclaimer's side), in the order of
    ``Solver.victim_queues``; kept until that list changes."""
    queues = solver.victim_queues()
    kept = layouts.get(reclaimer)
    if kept is not None and kept[0] is queues:
        return kept[1], kept[2]
    pairs = solver.sides_from(reclaimer)
    leaves: list[tuple[str, str]] = []
    siblings: dict[str, tuple[QueueInfo, QueueInfo]] = {}
    for queue in queues:
        levels = pairs[queue] if queue != reclaimer else None
        if levels is not None:
            leaves.append((queue, levels[1].name))
            siblings.setdefault(levels[1].name, levels)
    layouts[reclaimer] = (queues, leaves, siblings)
    return leaves, siblings


def _any(_: Job) -> bool:
    return True


def _may_give(reclaimer: QueueInfo, reclaimee: QueueInfo, request: Resources) -> bool:
    """Whether a queue can be a reclaimee at all: over its fair share, or (the reclaimer
    staying within its deserved quota) over its own quota in a resource the job asks for."""
    if _over_anywhere(reclaimee.usage.allocated, reclaimee.fair_share):
        return True
    if not (reclaimer.usage.allocated + request).fits_in(reclaimer.deserved, eps=1e-6):
        return False
    under = False
    for asked, allocated, deserved in zip(
        request, reclaimee.usage.allocated, reclaimee.deserved, strict=True
    ):
        if asked <= 0 or deserved == float("inf"):
            continue
        if allocated > deserved + EPS:
            return True
        under = under or allocated < deserved - EPS
    return not under


def _saturated(
    reclaimer: QueueInfo, reclaimee: QueueInfo, request: Resources, multiplier: float
) -> bool:
    """Whether the reclaimer's side, with the job, is above its fair share and at least as
    saturated as the reclaimee before any victim is taken, in a resource the job asks for."""
    columns = zip(
        request,
        reclaimer.usage.allocated,
        reclaimer.fair_share,
        reclaimee.usage.allocated,
        reclaimee.fair_share,
        strict=True,
    )
    for asked, allocated, fair, their_allocated, their_fair in columns:
        if asked <= 0:
            continue
        mine = _ratio(allocated + asked, fair)
        if mine > 1 and their_fair > 0 and mine * multiplier >= _ratio(their_allocated, their_fair):
            return True
    return False


def _protected(
    session: Session, runtimes: dict[tuple[str, str], float], reclaimer: Job, victim: Job
) -> bool:
    if victim.last_start is None:  # never started: nothing to protect
        return False
    pair = (victim.queue, reclaimer.queue)
    if pair not in runtimes:
        runtimes[pair] = reclaim_min_runtime(session, victim, reclaimer.queue)
    return is_protected(session, victim, runtimes[pair])


class _Validator:
    """KAI's reclaim scenario validator (Reclaimable), run once the victims are evicted and the
    reclaimer is placed: every figure below is then the queues' live usage."""

    def __init__(
        self, session: Session, solver: Solver, reclaimer: Job, request: Resources
    ) -> None:
        self.session = session
        self.solver = solver
        self.reclaimer = reclaimer
        self.asked = _involved(request)
        self.chain = session.chain(reclaimer)

    def __call__(self, outcome: Outcome) -> bool:
        last: dict[str, tuple[QueueInfo, QueueInfo, Resources]] = {}
        involved: dict[str, set[str]] = {}
        for unit in outcome.victims:
            levels = self.solver.sides(self.reclaimer.queue, unit.job.queue)
            if levels is None:
                return False
            amount = request_of(list(unit.tasks))
            last[levels[1].name] = (*levels, amount)
            involved.setdefault(levels[1].name, set()).update(_involved(amount))
        for reclaimer, reclaimee, amount in last.values():
            before_last = reclaimee.usage.allocated + amount
            keeps_fair = _over(before_last, reclaimee.fair_share, self.asked)
            within_deserved = reclaimer.usage.allocated.fits_in(reclaimer.deserved, eps=1e-6)
            over_deserved = _over_anywhere(before_last, reclaimee.deserved)
            if not (keeps_fair or (within_deserved and over_deserved)):
                return False
        return self._not_oversaturated(involved)

    def _not_oversaturated(self, involved: dict[str, set[str]]) -> bool:
        """At each level, a reclaimer above its fair share in a resource must stay less
        saturated in it than each sibling it takes from; a non-preemptible reclaimer stays
        within every quota."""
        multiplier = self.session.config.reclaimer_saturation_multiplier
        for queue in self.chain:
            for name, resources in involved.items():
                sibling = self.session.queues[name]
                if sibling.parent != queue.parent or sibling.name == queue.name:
                    continue
                for resource in resources | self.asked:
                    mine = _ratio(
                        queue.usage.allocated.get(resource), queue.fair_share.get(resource)
                    )
                    theirs = _ratio(
                        sibling.usage.allocated.get(resource), sibling.fair_share.get(resource)
                    )
                    if (
                        mine > 1
                        and sibling.fair_share.get(resource) > 0
                        and mine * multiplier >= theirs
                    ):
                        return False
            if not self.reclaimer.preemptible and not queue.usage.allocated_non_preemptible.fits_in(
                queue.deserved
            ):
                return False
        return True


def _involved(amount: Resources) -> set[str]:
    return {name for name, value in zip(RESOURCE_NAMES, amount, strict=True) if value > 0}


def _over(amount: Resources, bound: Resources, resources: set[str]) -> bool:
    return any(amount.get(r) > bound.get(r) + EPS for r in resources)


def _over_anywhere(amount: Resources, bound: Resources) -> bool:
    """``_over`` in every resource, written out (it runs for every reclaimer and sibling)."""
    return (
        amount.cpu > bound.cpu + EPS
        or amount.memory > bound.memory + EPS
        or amount.gpu > bound.gpu + EPS
    )


def _ratio(allocated: float, fair: float) -> float:
    """Allocated / fair share; an unlimited fair share is never saturated, a zero one is
    infinitely so once anything is allocated."""
    if fair == float("inf"):
        return 0.0
    if fair <= 0:
        return float("inf") if allocated > 0 else 0.0
    return allocated / fair
