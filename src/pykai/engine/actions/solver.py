"""The victim solver shared by preempt, reclaim and consolidation (KAI's job solver, its two
scenario generators and its by-pod simulation: actions/common/solvers, plugins/nodelocalgreedy,
plugins/multinodegang, actions/common/action.go).

Victims come one unit at a time from a ``VictimQueue`` (KAI's victim order) and accumulate.
Scenarios (sets of victim units) are tried in KAI's order, each at most once:

1. node-local: after each new unit, for each node it runs on (by name), the units accumulated
   so far that run on that node;
2. multi-node, for a preemptor of several pods when no node-local scenario worked: the units
   accumulated so far, restricted to the K nodes with the least GPU capacity (idle, releasing
   and the victims' GPUs) that can hold a pending pod, from the smallest K that covers the
   demand, K growing by 1, 2, 4, ... up to every node with a victim.

A scenario is simulated in a statement: its victims are evicted, then the preemptor and the
victims' jobs are placed again in the order allocate would try them, and the preemptor must be
placed whole, within every queue limit counted after the evictions. A victim job that fits
again is no victim. The first scenario in which the preemptor runs and the action's validator
accepts the victims is committed; no victim is evicted for a preemptor that cannot run.

- Reclaim and preempt put a victim back only where it was (``_simulate_in_place``), whole or
  not at all. A victim job is put back before the preemptor's turn when allocate would serve
  it first: in the preemptor's queue by job order, else when, just below the two queues'
  lowest common ancestor, the victim's side ranks first in queue order (judged with its
  allocation less these pods, and the job as its next), the preemptor's side being judged by
  its queue's first pending job (KAI's allocation order in TryToVirtuallyAllocate..., where a
  queue is judged by the job it would run next, taken pairwise). The others are put back after
  the preemptor is placed, in job order, if their room is still free.
- Consolidation places victims again as allocate would (``_simulate_anywhere``): back where
  they were, or moved (evicted, with a reservation pipelined where they go), in KAI's full
  order of the jobs to place.

The search is exact but bounded (``exhaustive`` turns the bounds off, for tests and
benchmarks): a scenario whose victims still out at the preemptor's turn, with every idle and
releasing resource, could not hold the preemptor's pods is not simulated (``Capacity``), nor
is a search whose every candidate could not; a search that failed is not repeated for a job of
the same shape until something is committed; and a per-action time budget, when spent, stops
the action and is reported in the cycle's result.
"""

from __future__ import annotations

import bisect
import dataclasses
import math
import time
from collections.abc import Callable, Hashable, Iterator
from dataclasses import dataclass
from functools import partial
from typing import Any, TypeVar

from pykai.engine.actions.allocate import tasks_to_allocate
from pykai.engine.actions.capacity_bound import Capacity, Room, feasible_mask, spare
from pykai.engine.actions.gang import FitKey, fit_key, place_gang
from pykai.engine.actions.victims import Start, VictimQueue, VictimUnit, victim_key
from pykai.engine.capacity import over_capacity, over_limit
from pykai.engine.jobs import Job, Task, TaskStatus
from pykai.engine.ordering import (
    JobKey,
    JobQueue,
    KeyMemo,
    QueueKey,
    VictimKeys,
    job_order_key,
    queue_order_key,
    sides,
)
from pykai.engine.placement import find_node
from pykai.engine.queue_sums import QueueUsage
from pykai.engine.session import QueueInfo, Session, Statement
from pykai.model.resources import EPS, Resources

GPU = 2
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Outcome:
    """What a simulated scenario evicts: the victims (each unit with the pods that stay
    evicted) and the victim pods moved elsewhere."""

    victims: list[VictimUnit]
    moved: list[Task]


Validator = Callable[[Outcome], bool]
Shape = tuple[str, int, bool, bool, tuple[FitKey, ...]]


def request_of(tasks: list[Task] | tuple[Task, ...]) -> Resources:
    """The sum of the tasks' requests."""
    total = Resources.ZERO
    for task in tasks:
        total += task.request
    return total


class SidesFrom(dict[str, tuple[QueueInfo, QueueInfo] | None]):
    """``ordering.sides`` from one queue to others, by the other, each worked out once."""

    def __init__(self, session: Session, one: str) -> None:
        super().__init__()
        self._session = session
        self._one = one

    def __missing__(self, other: str) -> tuple[QueueInfo, QueueInfo] | None:
        pair = self[other] = sides(self._session, self._one, other)
        return pair


class Solver:
    """The victim searches of one action, and what they keep between them."""

    def __init__(
        self,
        session: Session,
        action: str,
        reason: str,
        *,
        max_pods: int | None = None,
        moves: bool = False,
        exhaustive: bool | None = None,
    ) -> None:
        self.session = session
        self.action = action
        self.reason = reason
        self.max_pods = max_pods  # evicted pods one scenario may hold at most
        self.moves = moves  # victims may be placed again elsewhere (else only where they were)
        self.exhaustive = session.config.exhaustive_search if exhaustive is None else exhaustive
        self.keys: KeyMemo = {}  # queue-order keys by queue, allocation and request
        self.victim_keys: dict[tuple[str, Resources], VictimKeys] = {}
        self._sides: dict[str, SidesFrom] = {}  # by the first queue
        self._limited: dict[str, list[QueueInfo]] = {}  # leaf -> its queues that have a limit
        self._starts: dict[tuple[str, ...], Start] = {}  # by leaves, for searches that share
        self.simulated = 0  # scenarios simulated (for benchmarks)
        self._failed: set[Shape] = set()
        self._victims: dict[str, list[tuple[JobKey, Job]]] = {}  # leaf -> running jobs
        self._victim_keys_of: dict[str, JobKey] = {}  # job -> its key in those lists
        self._pending: dict[str, list[Job]] | None = None  # leaf -> its pending jobs
        self._sorted: dict[str, list[tuple[JobKey, Job]]] = {}  # leaf -> them in job order
        self._requests: dict[str, Resources] = {}
        self._order_keys: dict[str, JobKey] = {}  # pending jobs' job order, until they change
        self._until_commit: dict[Hashable, Any] = {}
        self._gives: dict[str, bool] | None = None  # leaf -> whether it has running victims
        self._victim_queues: list[str] | None = None  # those that have, by name
        self._deadline = time.perf_counter() + session.config.action_search_budget

    @property
    def out_of_time(self) -> bool:
        """True once the action's search budget is spent (never for an exhaustive search)."""
        return not self.exhaustive and time.perf_counter() > self._deadline

    def stop(self, untried: list[Job]) -> None:
        """Note, for the cycle's result, that the action stops with ``untried`` jobs left
        because its budget is spent (how many, and how many of each queue)."""
        self.session.out_of_budget[self.action] = len(untried)
        by_queue = self.session.untried.setdefault(self.action, {})
        for job in untried:
            by_queue[job.queue] = by_queue.get(job.queue, 0) + 1

    def solve(
        self,
        preemptor: Job,
        tasks: list[Task],
        leaves: list[str],
        eligible: Callable[[Job], bool],
        protected: Callable[[Job], bool],
        message: str,
        validate: Validator | None = None,
        *,
        shared: bool = False,
    ) -> Outcome | None:
        """Evict the victims (running jobs of ``leaves`` that ``eligible`` accepts) that let
        ``tasks`` of ``preemptor`` run, commit, and say what was evicted and moved; or change
        nothing and return None. ``shared``: ``eligible`` is the same for every search of the
        action, so searches over the same leaves start from what earlier ones found."""
        # a failed search is not repeated for a job of the same shape until something is
        # committed; consolidation's order also depends on when the job was created (victims
        # may share its queue and priority), so there every job searches
        shape = None if self.exhaustive or self.moves else _shape(preemptor, tasks)
        if shape is not None and shape in self._failed:
            return None
        search = _Search(self, preemptor, tasks, message, validate)
        outcome = search.run(
            leaves, partial(self.victim_order, leaves, eligible, protected, shared)
        )
        if outcome is None:
            if shape is not None:
                self._failed.add(shape)
            return None
        self._failed.clear()  # the cluster changed: what failed may work now
        self._until_commit.clear()
        jobs = self.session.state.jobs
        changed = {t.job_key for unit in outcome.victims for t in unit.tasks}
        changed |= {t.job_key for t in outcome.moved}
        queues = set(self.session.state.queue_chain(preemptor.queue))
        for key in changed | {preemptor.key}:
            if key in jobs:
                self._reposition(jobs[key])
                queues.update(self.session.state.queue_chain(jobs[key].queue))
        for start in self._starts.values():
            start.forget(queues)
        self._recheck_victim_queues(queues)
        return outcome

    def victim_order(
        self,
        leaves: list[str],
        eligible: Callable[[Job], bool],
        protected: Callable[[Job], bool],
        shared: bool = False,
    ) -> VictimQueue:
        """The victims of ``leaves`` in KAI's victim order; ``shared`` as for ``solve`` (the
        exhaustive search starts afresh)."""
        reuse = shared and not self.exhaustive
        start = self._starts.setdefault(tuple(leaves), Start()) if reuse else None
        return VictimQueue(
            self.session, leaves, self.victims_in, eligible, protected, self.victim_keys, start
        )

    def key(self, queue: QueueInfo, allocated: Resources, request: Resources) -> QueueKey:
        """Queue order's key for a queue with a given allocation and next job."""
        memo = (queue.name, allocated, request)
        key = self.keys.get(memo)
        if key is None:
            key = self.keys[memo] = queue_order_key(queue, request, self.session.total, allocated)
        return key

    def sides(self, one: str, other: str) -> tuple[QueueInfo, QueueInfo] | None:
        """``ordering.sides``, kept for the action (the queue tree does not change)."""
        return self.sides_from(one)[other]

    def sides_from(self, one: str) -> SidesFrom:
        """``sides`` from one queue to any other, by the other (for loops over queues)."""
        found = self._sides.get(one)
        if found is None:
            found = self._sides[one] = SidesFrom(self.session, one)
        return found

    def within_limits(self, leaf: str) -> bool:
        """Whether a leaf queue and its ancestors are within their limits now."""
        limited = self._limited.get(leaf)
        if limited is None:
            chain = self.session.state.queue_chain(leaf)
            queues = self.session.queues
            limited = self._limited[leaf] = [
                queues[name] for name in chain if not all(map(math.isinf, queues[name].limit))
            ]
        return not limited or all(queue.usage.allocated.fits_in(queue.limit) for queue in limited)

    def until_commit(self, key: Hashable, compute: Callable[[], T]) -> T:
        """``compute()``, kept until the next commit under ``key`` (it must depend on
        nothing else than the cluster and ``key``)."""
        if key not in self._until_commit:
            self._until_commit[key] = compute()
        value: T = self._until_commit[key]
        return value

    def victim_queues(self) -> list[str]:
        """Leaf queues with running preemptible jobs, by name (a queue that is missing, cannot
        be read or sits in a parent cycle has no place in the order: its jobs are no victims).
        Kept for the action and checked again, after a commit, only for the queues it changed
        (the exhaustive search looks at every queue every time)."""
        if self._gives is None or self.exhaustive:
            self._gives = {
                queue: self._has_victims(queue) for queue in self.session.state.indexes.running
            }
            self._victim_queues = None
        if self._victim_queues is None:
            self._victim_queues = sorted(queue for queue, yes in self._gives.items() if yes)
        return self._victim_queues

    def _has_victims(self, queue: str) -> bool:
        state = self.session.state
        buckets = state.indexes.running.get(queue, {})
        return (
            queue in self.session.queues
            and bool(state.queue_chain(queue))
            and any(state.jobs[k].preemptible for keys in buckets.values() for k in keys)
        )

    def _recheck_victim_queues(self, queues: set[str]) -> None:
        """After a commit: whether the queues it changed still have (or now have) victims."""
        if self._gives is None:
            return
        for queue in queues:
            gives = self._has_victims(queue)
            if gives != self._gives.get(queue, False):
                self._gives[queue] = gives
                self._victim_queues = None

    def victims_in(self, leaf: str) -> list[tuple[JobKey, Job]]:
        """A leaf queue's running preemptible jobs with their victim-order keys, in job order
        (the last is the first victim); kept for the action, and changed only for the jobs a
        commit evicts pods of (the exhaustive search sorts them afresh every time)."""
        entries = self._victims.get(leaf)
        if entries is None or self.exhaustive:
            jobs = self.session.state.jobs
            buckets = self.session.state.indexes.running.get(leaf, {})
            running = [jobs[k] for keys in buckets.values() for k in keys]
            entries = [(victim_key(job), job) for job in running if job.preemptible]
            entries.sort(key=_first)
            self._victims[leaf] = entries
            self._victim_keys_of.update((job.key, key) for key, job in entries)
        return entries

    def _reposition(self, job: Job) -> None:
        """A commit changed a job (it runs now, or more, or lost pods): its place in its
        leaf's victim list and among its leaf's pending jobs, and what it asks for, change."""
        old = self._order_keys.pop(job.key, None)
        self._requests.pop(job.key, None)
        ordered = self._sorted.get(job.queue)
        if ordered is not None and self.exhaustive:
            del self._sorted[job.queue]  # sorted afresh
        elif ordered is not None and old is not None and _drop(ordered, old, job):
            # a pending job of the leaf: moved to its new place
            bisect.insort(ordered, (self._order_key(job), job), key=_first)
        entries = self._victims.get(job.queue)
        if entries is None:
            return
        placed = self._victim_keys_of.pop(job.key, None)
        if placed is not None:
            _drop(entries, placed, job)
        if job.preemptible and job.running:
            key = self._victim_keys_of[job.key] = victim_key(job)
            bisect.insort(entries, (key, job), key=_first)

    def pending_request(self, job: Job) -> Resources:
        """What a pending job would ask for now (kept until something is committed)."""
        request = self._requests.get(job.key)
        if request is None:
            request = self._requests[job.key] = request_of(tasks_to_allocate(job))
        return request

    def pending_before(self, leaf: str, limit: JobKey) -> list[Job]:
        """Pending jobs of a leaf queue that come before ``limit`` in job order (no job turns
        pending during an action, so the lists are built and sorted once, and a job a commit
        changes is moved to its new place)."""
        if self._pending is None:
            self._pending = {}
            state = self.session.state
            for key in state.pending_jobs:
                pending = state.jobs[key]
                self._pending.setdefault(pending.queue, []).append(pending)
        ordered = self._sorted.get(leaf)
        if ordered is None:
            ordered = self._sorted[leaf] = sorted(
                ((self._order_key(j), j) for j in self._pending.get(leaf, [])), key=_first
            )
        end = bisect.bisect_left(ordered, limit, key=_first)
        return [job for _, job in ordered[:end] if job.pending]

    def _order_key(self, job: Job) -> JobKey:
        """``job_order_key``, kept until a commit changes the job."""
        key = self._order_keys.get(job.key)
        if key is None or self.exhaustive:
            key = self._order_keys[job.key] = job_order_key(job)
        return key


def _first(pair: tuple[JobKey, Job]) -> JobKey:
    return pair[0]


def _drop(entries: list[tuple[JobKey, Job]], key: JobKey, job: Job) -> bool:
    """Take ``job``, listed under ``key``, out of a list in key order; whether it was there
    (keys end with the job's UID: no two jobs share one)."""
    at = bisect.bisect_left(entries, key, key=_first)
    if at < len(entries) and entries[at][1] is job:
        del entries[at]
        return True
    return False


def _shape(job: Job, tasks: list[Task]) -> Shape:
    """What a search's result depends on besides the cluster: the queue, the priority, the
    kind of job and its pods' requests and constraints."""
    keys = tuple(fit_key(t) for t in tasks)
    return (job.queue, job.priority, job.preemptible, job.gang_satisfied(), keys)


class _Search:
    """One preemptor's search."""

    def __init__(
        self,
        solver: Solver,
        preemptor: Job,
        tasks: list[Task],
        message: str,
        validate: Validator | None,
    ) -> None:
        self.solver = solver
        self.session = solver.session
        self.preemptor = preemptor
        self.tasks = tasks
        self.request = request_of(tasks)
        self.message = message
        self.validate = validate
        self.satisfied = preemptor.gang_satisfied()
        self.order_key = job_order_key(preemptor)
        self.tried: set[frozenset[int]] = set()
        self.capacity = None if solver.exhaustive else Capacity(self.session.state.nodes, tasks)
        self._side_keys: dict[str, QueueKey] = {}
        self._before: dict[str, bool] = {}  # by the victims' side: ranked before the preemptor's
        self._sides = solver.sides_from(preemptor.queue)
        first = solver.pending_before(preemptor.queue, self.order_key)
        self.first_request = solver.pending_request(first[0]) if first else self.request

    def run(self, leaves: list[str], victims: Callable[[], VictimQueue]) -> Outcome | None:
        """The first scenario that works, committed; ``victims`` gives the victim order
        afresh for each scenario generator."""
        if self.capacity is not None and not self._may_fit(leaves):
            return None
        generators = [self._node_local]
        if len(self.tasks) > 1:  # one pod needs one node: node-local scenarios cover it
            generators.append(self._multi_node)
        for generate in generators:
            for scenario, bounded in generate(victims()):
                if self.solver.out_of_time:
                    return None
                outcome = self._try(scenario, bounded)
                if outcome is not None:
                    return outcome
        return None

    def _may_fit(self, leaves: list[str]) -> bool:
        """Whether the preemptor could fit even if every preemptible pod of the leaves that
        can ever come out at its turn were evicted (an upper bound: a queue's preemptible
        allocation, on any node). It stops at the first leaf with which the sum suffices."""
        capacity = self.capacity
        assert capacity is not None
        cpu = memory = gpu = 0.0
        queues = self.session.queues
        moves = self.solver.moves
        for leaf in leaves:
            if moves or not self._always_before(leaf):
                usage = queues[leaf].usage
                allocated, kept = usage.allocated, usage.allocated_non_preemptible
                cpu += allocated.cpu - kept.cpu
                memory += allocated.memory - kept.memory
                gpu += allocated.gpu - kept.gpu
                if capacity.could_hold_extra((cpu, memory, gpu)):
                    return True
        return capacity.could_hold_extra((cpu, memory, gpu))

    def _units(self, victims: VictimQueue) -> Iterator[VictimUnit]:
        """Units in victim order while the scenario may still grow (``max_pods``)."""
        limit = self.solver.max_pods
        pop = victims.pop
        if limit is None:
            while (unit := pop()) is not None:
                yield unit
            return
        pods = 0
        while (unit := pop()) is not None:
            pods += len(unit.tasks)
            if pods > limit:
                return
            yield unit

    def _node_local(self, victims: VictimQueue) -> Iterator[tuple[list[VictimUnit], bool]]:
        """KAI's NodeLocalGreedy: after each new unit, the accumulated units on each of its
        nodes (those the bound lets through, and said to be so)."""
        on_node: dict[str, list[VictimUnit]] = {}
        rooms: dict[str, Room] = {}  # node -> what its units give back, for the bound
        capacity = self.capacity
        for unit in self._units(victims):
            tasks = unit.tasks
            nodes = [tasks[0].node] if len(tasks) == 1 else sorted({t.node for t in tasks})
            for node in nodes:
                units = on_node.get(node)
                if units is None:
                    units = on_node[node] = []
                units.append(unit)
                if capacity is not None:
                    room = rooms.get(node)
                    if room is None:
                        room = rooms[node] = capacity.room()
                    room.add(tasks)
            for node in nodes:
                if capacity is None or rooms[node].holds():
                    yield on_node[node], True

    def _multi_node(self, victims: VictimQueue) -> Iterator[tuple[list[VictimUnit], bool]]:
        """KAI's MultiNodeGang: the accumulated units on the K nodes of least GPU capacity
        that could hold a pod, from the smallest K that covers the demand (with the idle and
        releasing GPUs of nodes without victims), K growing by 1, 2, 4, ... to all of them."""
        nodes = self.session.state.nodes
        free = spare(nodes)[:, GPU]
        mask = feasible_mask(nodes, self.tasks)
        demand = sum(t.request.gpu for t in self.tasks)
        smallest = min(t.request.gpu for t in self.tasks)
        baseline = float(free[mask].sum())
        taken: list[VictimUnit] = []
        room = None if self.capacity is None else self.capacity.room()
        on_node: dict[str, list[int]] = {}  # node -> indexes of the units with a pod on it
        gpus: dict[str, float] = {}  # node -> GPUs the units hold on it

        def capacity(node: str) -> float:
            row = nodes.index.get(node)
            return gpus[node] + (float(free[row]) if row is not None else 0.0)

        for unit in self._units(victims):
            index = len(taken)
            taken.append(unit)
            for task in unit.tasks:
                indexes = on_node.setdefault(task.node, [])
                if not indexes or indexes[-1] != index:
                    indexes.append(index)
                gpus[task.node] = gpus.get(task.node, 0.0) + task.request.gpu
            if room is not None:
                room.add(unit.tasks)
                if not room.holds():
                    continue
            viable = sorted(
                (n for n in on_node if smallest <= 0 or capacity(n) >= smallest - EPS),
                key=lambda n: (capacity(n), on_node[n][0]),
            )
            rows = [nodes.index[n] for n in on_node if n in nodes.index]
            rest = baseline - float(free[[r for r in rows if mask[r]]].sum())
            count = _smallest_covering([capacity(n) for n in viable], demand - rest)
            step = 1
            while count <= len(viable):
                chosen = sorted({i for n in viable[:count] for i in on_node[n]})
                yield [taken[i] for i in chosen], False
                if count >= len(viable):
                    break
                count, step = min(count + step, len(viable)), step * 2

    def _try(self, scenario: list[VictimUnit], bounded: bool) -> Outcome | None:
        """Simulate one scenario (each at most once per search); ``bounded``: the bound was
        checked on it already."""
        fingerprint = frozenset(id(t) for unit in scenario for t in unit.tasks)
        if not fingerprint or fingerprint in self.tried:
            return None
        self.tried.add(fingerprint)
        if (
            not bounded
            and self.capacity is not None
            and not self.capacity.could_hold_units(scenario)
        ):
            return None
        self.solver.simulated += 1
        statement = self.session.statement()
        simulate = self._simulate_anywhere if self.solver.moves else self._simulate_in_place
        try:
            outcome = simulate(statement, scenario)
            if outcome is not None and (self.validate is None or self.validate(outcome)):
                statement.commit()
                return outcome
            return None
        finally:
            statement.discard()

    # ---- reclaim and preempt: victims put back where they were ------------------------------

    def _simulate_in_place(
        self, statement: Statement, scenario: list[VictimUnit]
    ) -> Outcome | None:
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
                statement.evict(task, self.solver.reason, self.message)
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
        key = self.solver.key(theirs, theirs.usage.allocated - amount, amount)
        return key < self._side_key(mine)

    def _always_before(self, leaf: str) -> bool:
        """Whether every victim of a leaf queue is put back before the preemptor, however
        much of it is evicted: its side's key only falls as more is taken from it, and no
        limit can refuse it (its queues are within their limits now)."""
        if leaf == self.preemptor.queue:
            return False
        pair = self._sides[leaf]
        if pair is None or not self.solver.within_limits(leaf):
            return False
        mine, theirs = pair
        before = self._before.get(theirs.name)  # the same for every leaf below ``theirs``
        if before is None:
            key = self.solver.key(theirs, theirs.usage.allocated, Resources.ZERO)
            before = self._before[theirs.name] = key < self._side_key(mine)
        return before

    def _side_key(self, side: QueueInfo) -> QueueKey:
        """Queue order's key of the preemptor's side, judged by its queue's first pending
        job."""
        key = self._side_keys.get(side.name)
        if key is None:
            key = self.solver.key(side, side.usage.allocated, self.first_request)
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

    def _simulate_anywhere(
        self, statement: Statement, scenario: list[VictimUnit]
    ) -> Outcome | None:
        """The scenario with victims placed again as allocate would place them (KAI's
        simulation): evict them all, then place the preemptor and the victims' jobs in
        queue and job order, the pending jobs of those leaf queues keeping their places;
        None if the preemptor cannot run."""
        session = self.session
        evicted: set[Task] = set()
        for unit in scenario:
            for task in unit.tasks:
                statement.evict(task, self.solver.reason, self.message)
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
            for pending in self.solver.pending_before(leaf, limit)
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
    return (-job.priority, state, job.creation, job.uid)


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


def _smallest_covering(capacities: list[float], demand: float) -> int:
    """The smallest K whose first K capacities reach ``demand`` (0 if nothing is needed,
    more than there are if they never do)."""
    if demand <= 0:
        return 0
    total = 0.0
    for k, capacity in enumerate(capacities, start=1):
        total += capacity
        if total >= demand - EPS:
            return k
    return len(capacities) + 1


def _stand_in(task: Task) -> Task:
    """A reservation for an evicted pod placed elsewhere: its own pod is deleted and its
    controller makes a new one, which this holds room for (it counts for the job's queue
    while pipelined, and for nothing once the cycle ends)."""
    meta = dataclasses.replace(task.pod.meta, uid=f"{task.uid}/moved")  # fresh GPU group ids
    pod = dataclasses.replace(task.pod, meta=meta)
    return dataclasses.replace(task, pod=pod, status=TaskStatus.FAILED, node="", gpu_groups=())
