"""The simulations of the victim solver (KAI's by-pod simulation in actions/common/action.go):
whether the preemptor runs if a scenario's victims are evicted, and who stays evicted.

A scenario is simulated in a statement: its victims are evicted, then the preemptor and the
victims' jobs are placed again in the order allocate would try them, and the preemptor must be
placed whole, within every queue limit counted after the evictions. A victim job that fits
again is no victim.

- Reclaim and preempt put a victim back only where it was (``in_place``), whole or not at
  all. A victim job is put back before the preemptor's turn when allocate would serve it
  first: in the preemptor's queue by job order, else when, just below the two queues' lowest
  common ancestor, the victim's side ranks first in queue order (judged with its allocation
  less these pods, and the job as its next), the preemptor's side being judged by its queue's
  first pending job (KAI's allocation order in TryToVirtuallyAllocate..., where a queue is
  judged by the job it would run next, taken pairwise). The others are put back after the
  preemptor is placed, in job order, if their room is still free.
- Consolidation places victims again as allocate would (``anywhere``): back where they were,
  or moved (evicted, with a reservation pipelined where they go), in KAI's full order of the
  jobs to place.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Protocol

from pykai.engine.actions.allocate import tasks_to_allocate
from pykai.engine.actions.capacity_bound import Capacity
from pykai.engine.actions.gang import place_gang
from pykai.engine.actions.victims import VictimUnit
from pykai.engine.capacity import over_capacity, over_limit
from pykai.engine.jobs import Job, Task, TaskStatus
from pykai.engine.ordering import JobKey, JobQueue, QueueKey, job_order_key
from pykai.engine.placement import find_node
from pykai.engine.queue_sums import QueueUsage
from pykai.engine.session import QueueInfo, Session, Statement
from pykai.model.resources import Resources


@dataclass(frozen=True, slots=True)
class Outcome:
    """What a simulated scenario evicts: the victims (each unit with the pods that stay
    evicted) and the victim pods moved elsewhere."""

    victims: list[VictimUnit]
    moved: list[Task]


def request_of(tasks: list[Task] | tuple[Task, ...]) -> Resources:
    """The sum of the tasks' requests."""
    total = Resources.ZERO
    for task in tasks:
        total += task.request
    return total


class Searches(Protocol):
    """The victim searches of one action, as a simulation reads them (the Solver of
    engine/actions/solver.py): its session, the action (KAI's name) and the reason its
    evictions give, and the structures it keeps between searches. Reading them changes nothing
    but those memos."""

    session: Session
    action: str
    reason: str
    moves: bool
    """Victims may be placed again elsewhere (consolidation), else only where they were."""

    def key(self, queue: QueueInfo, allocated: Resources, request: Resources) -> QueueKey:
        """Queue order's key for a queue with a given allocation and next job."""
        ...

    def sides_from(self, one: str) -> dict[str, tuple[QueueInfo, QueueInfo] | None]:
        """``ordering.sides`` from one queue to any other, by the other."""
        ...

    def within_limits(self, leaf: str) -> bool:
        """Whether a leaf queue and its ancestors are within their limits now."""
        ...

    def pending_before(self, leaf: str, limit: JobKey) -> list[Job]:
        """Pending jobs of a leaf queue that come before ``limit`` in job order."""
        ...

    def pending_request(self, job: Job) -> Resources:
        """What a pending job would ask for now."""
        ...


class Simulation:
    """The simulations of one preemptor's scenarios, and what they keep between them."""

    def __init__(
        self,
        searches: Searches,
        preemptor: Job,
        tasks: list[Task],
        message: str,
        capacity: Capacity | None,
    ) -> None:
        """Simulate placing ``tasks`` of ``preemptor``; evictions carry ``message``;
        ``capacity``: the search's bound, checked again on the victims left out when some are
        put back (None: no bound)."""
        self.searches = searches
        self.session = searches.session
        self.preemptor = preemptor
        self.tasks = tasks
        self.request = request_of(tasks)
        self.message = message
        self.capacity = capacity
        self.satisfied = preemptor.gang_satisfied()
        self.order_key = job_order_key(preemptor)
        self._side_keys: dict[str, QueueKey] = {}
        self._before: dict[str, bool] = {}  # by the victims' side: ranked before the preemptor's
        self._sides = searches.sides_from(preemptor.queue)
        first = searches.pending_before(preemptor.queue, self.order_key)
        self.first_request = searches.pending_request(first[0]) if first else self.request

    def run(self, statement: Statement, scenario: list[VictimUnit]) -> Outcome | None:
        """Simulate ``scenario`` in ``statement``: what stays evicted and what moved, or None
        if the preemptor cannot run with these victims. It evicts, puts back, places and
        pipelines in ``statement`` only and never commits: the caller commits it to keep the
        outcome, or discards it (always after None: it may hold half a simulation)."""
        if self.searches.moves:
            return self._anywhere(statement, scenario)
        return self._in_place(statement, scenario)

    def _evict(self, statement: Statement, task: Task) -> None:
        """Evict a victim for this preemptor, as the searches' action."""
        reason, message, action = self.searches.reason, self.message, self.searches.action
        statement.evict(task, reason, message, action=action, preemptor=self.preemptor.key)

    # ---- reclaim and preempt: victims put back where they were ------------------------------

    def _in_place(self, statement: Statement, scenario: list[VictimUnit]) -> Outcome | None:
        """The scenario with victims put back only where they were; None if the preemptor
        cannot run."""
        session = self.session
        jobs = session.state.jobs
        evicted = _by_job(scenario)
        usage = self._usage_without(evicted)
        chain = session.chain(self.preemptor)
        if over_limit(chain, self.request, usage) is not None:
            return None  # putting victims back first only adds to the queues
        first = [key for key in evicted if self._precedes(jobs[key], evicted[key])]
        back = self._put_back_figures(first, evicted, usage)
        if over_capacity(self.preemptor, chain, self.request, usage) is not None:
            return None
        out = [unit for unit in scenario if unit.job.key not in back]
        # (with none put back, the bound held on these units before the simulation began)
        if back and self.capacity is not None and not self.capacity.could_hold_units(out):
            return None
        for unit in out:
            for task in unit.tasks:
                self._evict(statement, task)
        if place_gang(session, statement, self.tasks, self.satisfied) is not None:
            return None
        _add(usage, chain, self.request, self.preemptor.preemptible)
        later = sorted((key for key in evicted if key not in first), key=lambda k: _order(jobs[k]))
        for key in later:
            job = jobs[key]
            request = request_of(evicted[key])
            if over_capacity(job, session.chain(job), request, usage) is None and self._put_back(
                statement, evicted[key]
            ):
                _add(usage, session.chain(job), request, job.preemptible)
        return Outcome(_still_out(scenario), [])

    def _precedes(self, job: Job, tasks: list[Task]) -> bool:
        """Whether allocate would serve a victim job (with ``tasks`` evicted) before the
        preemptor."""
        if job.queue == self.preemptor.queue:
            return _order(job, len(tasks)) < self.order_key
        pair = self._sides[job.queue]
        if pair is None:
            return False
        mine, theirs = pair
        amount = request_of(tasks)
        key = self.searches.key(theirs, theirs.usage.allocated - amount, amount)
        return key < self._side_key(mine)

    def always_before(self, leaf: str) -> bool:
        """Whether every victim of a leaf queue is put back before the preemptor, however
        much of it is evicted, when victims go back only where they were: its side's key only
        falls as more is taken from it, and no limit can refuse it (its queues are within their
        limits now). Such a queue's victims never make room (the solver's bound leaves them
        out)."""
        if leaf == self.preemptor.queue:
            return False
        pair = self._sides[leaf]
        if pair is None or not self.searches.within_limits(leaf):
            return False
        mine, theirs = pair
        before = self._before.get(theirs.name)  # the same for every leaf below ``theirs``
        if before is None:
            key = self.searches.key(theirs, theirs.usage.allocated, Resources.ZERO)
            before = self._before[theirs.name] = key < self._side_key(mine)
        return before

    def _side_key(self, side: QueueInfo) -> QueueKey:
        """Queue order's key of the preemptor's side, judged by its queue's first pending
        job."""
        key = self._side_keys.get(side.name)
        if key is None:
            key = self.searches.key(side, side.usage.allocated, self.first_request)
            self._side_keys[side.name] = key
        return key

    def _put_back_figures(
        self, keys: list[str], evicted: dict[str, list[Task]], usage: dict[str, QueueUsage]
    ) -> set[str]:
        """Victim jobs put back before the preemptor (in job order), on the queue figures only:
        their room is untouched, so they always fit; a queue limit may still refuse them."""
        jobs = self.session.state.jobs
        back = set()
        for key in sorted(keys, key=lambda k: _order(jobs[k])):
            job = jobs[key]
            request = request_of(evicted[key])
            chain = self.session.chain(job)
            if over_capacity(job, chain, request, usage) is None:
                _add(usage, chain, request, job.preemptible)
                back.add(key)
        return back

    def _usage_without(self, evicted: dict[str, list[Task]]) -> dict[str, QueueUsage]:
        """The figures of the queues involved (the preemptor's and the victims' chains), with
        the victims taken out."""
        session = self.session
        usage: dict[str, QueueUsage] = {}
        jobs = session.state.jobs
        for job in [self.preemptor, *(jobs[key] for key in evicted)]:
            for queue in session.chain(job):
                if queue.name not in usage:
                    own = queue.usage
                    usage[queue.name] = QueueUsage(
                        own.allocated, own.allocated_non_preemptible, own.requested
                    )
        for key, tasks in evicted.items():
            job = jobs[key]
            _add(usage, session.chain(job), request_of(tasks), job.preemptible, -1.0)
        return usage

    def _put_back(self, statement: Statement, tasks: list[Task]) -> bool:
        """Evicted pods back where they were, all or none, if their room is still free.
        A pod that would overcommit its node fails the whole job as trying would, and is
        found without the accounting: the first pod on each node is judged before any is put
        back (the pods before it change other nodes only), each other pod before its turn."""
        state = self.session.state
        nodes = state.nodes

        def overcommits(task: Task) -> bool:
            groups = task.gpu_groups
            shared = (groups, state.portion(task, task.node)) if groups else None
            return nodes.overcommitted_back(task.node, task.request, shared)

        seen: set[str] = set()
        for task in tasks:
            if task.node not in seen:
                seen.add(task.node)
                if overcommits(task):
                    return False
        mark = statement.checkpoint()
        for task in tasks:
            if overcommits(task):
                statement.rollback(mark)
                return False
            statement.unevict(task)
            if nodes.overcommitted(task.node):
                statement.rollback(mark)
                return False
        return True

    # ---- consolidation: victims placed again as allocate would ------------------------------

    def _anywhere(self, statement: Statement, scenario: list[VictimUnit]) -> Outcome | None:
        """The scenario with victims placed again as allocate would place them (KAI's
        simulation): evict them all, then place the preemptor and the victims' jobs in
        queue and job order, the pending jobs of those leaf queues keeping their places;
        None if the preemptor cannot run."""
        session = self.session
        evicted: set[Task] = set()
        for unit in scenario:
            for task in unit.tasks:
                self._evict(statement, task)
                evicted.add(task)
        chain = session.chain(self.preemptor)
        if over_limit(chain, self.request) is not None:
            return None
        victim_jobs = {u.job.key: u.job for u in scenario}
        involved = {self.preemptor.key: self.preemptor, **victim_jobs}
        last: dict[str, JobKey] = {}
        for member in involved.values():
            key = job_order_key(member)
            if member.queue not in last or key > last[member.queue]:
                last[member.queue] = key
        others = [
            pending
            for leaf, limit in last.items()
            for pending in self.searches.pending_before(leaf, limit)
            if pending.key not in involved
        ]
        requests: dict[str, Resources] = {self.preemptor.key: self.request}

        def request_for(job: Job) -> Resources:
            if job.key not in requests:
                requests[job.key] = request_of(tasks_to_allocate(job, evicted))
            return requests[job.key]

        order = JobQueue(session, [*involved.values(), *others], request_for)
        moved: list[Task] = []
        placed = False
        left = set(victim_jobs)
        while (not placed or left) and (job := order.pop()) is not None:
            if job is self.preemptor:
                if over_capacity(job, chain, self.request) is not None:
                    return None
                if place_gang(session, statement, self.tasks, self.satisfied) is not None:
                    return None
                placed = True
            elif job.key in left:
                left.discard(job.key)
                self._place_anywhere(statement, job, evicted, moved)
        if not placed:
            return None
        units = [
            VictimUnit(u.job, tuple(t for t in u.tasks if t not in moved))
            for u in _still_out(scenario)
        ]
        return Outcome([u for u in units if u.tasks], moved)

    def _place_anywhere(
        self, statement: Statement, job: Job, evicted: set[Task], moved: list[Task]
    ) -> None:
        """A victim job placed again, all or nothing, as allocate would (pipelined only): an
        evicted pod placed back on its node and GPU groups is unevicted, placed elsewhere it
        is moved; pending pods are pipelined."""
        session = self.session
        tasks = tasks_to_allocate(job, evicted)
        if not tasks or over_capacity(job, session.chain(job), request_of(tasks)) is not None:
            return
        mark = statement.checkpoint()
        moving: list[Task] = []
        for task in tasks:
            was_evicted = task.status == TaskStatus.RELEASING
            target = _stand_in(task) if was_evicted else task
            placement = find_node(session.state.nodes, target, session.placement)
            if placement is None:
                statement.rollback(mark)
                return
            if (
                was_evicted
                and placement.node == task.node
                and (not task.gpu_groups or placement.gpu_groups == task.gpu_groups)
            ):
                statement.unevict(task)
                continue
            statement.pipeline(target, placement.node, placement.gpu_groups)
            if was_evicted:
                moving.append(task)
        moved += moving


def _by_job(scenario: list[VictimUnit]) -> dict[str, list[Task]]:
    """The scenario's victim pods, by job."""
    found: dict[str, list[Task]] = {}
    for unit in scenario:
        found.setdefault(unit.job.key, []).extend(unit.tasks)
    return found


def _still_out(scenario: list[VictimUnit]) -> list[VictimUnit]:
    """The scenario's units, with only the pods still evicted (units left empty dropped)."""
    units = []
    for unit in scenario:
        stay = tuple(t for t in unit.tasks if t.status == TaskStatus.RELEASING)
        if stay:
            units.append(VictimUnit(unit.job, stay))
    return units


def _order(job: Job, evicted: int = 0) -> JobKey:
    """Job order, with a victim job's elastic state counted without its evicted pods."""
    active = job.active - evicted
    state = 0 if active < job.min_member else 1 if active == job.min_member else 2
    return (-job.priority, state, job.creation, job.tie)


def _add(
    usage: dict[str, QueueUsage],
    chain: list[QueueInfo],
    request: Resources,
    preemptible: bool,
    sign: float = 1.0,
) -> None:
    """Add (or take out) a job's pods from the simulation's queue figures."""
    amount = request.scaled(sign)
    for queue in chain:
        figures = usage[queue.name]
        figures.allocated += amount
        if not preemptible:
            figures.allocated_non_preemptible += amount


def _stand_in(task: Task) -> Task:
    """A reservation for an evicted pod placed elsewhere: its own pod is deleted and its
    controller makes a new one, which this holds room for (it counts for the job's queue
    while pipelined, and for nothing once the cycle ends)."""
    meta = dataclasses.replace(task.pod.meta, uid=f"{task.uid}/moved")  # fresh GPU group ids
    pod = dataclasses.replace(task.pod, meta=meta)
    return dataclasses.replace(task, pod=pod, status=TaskStatus.FAILED, node="", gpu_groups=())
