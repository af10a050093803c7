"""The victim solver shared by preempt, reclaim and consolidation (KAI's job solver:
actions/common/solvers/job_solver.go).

Victims come one unit at a time from a ``VictimQueue`` (KAI's victim order) and accumulate.
The scenario generators (engine/actions/scenarios.py: node-local, then multi-node) make sets
of them worth trying, and the solver tries each scenario at most once, in their order: it
simulates it (engine/actions/simulation.py), and commits the first in which the preemptor runs
and the action's validator accepts the victims; no victim is evicted for a preemptor that
cannot run. Between the searches of an action it keeps what does not change until something
is committed: queue-order keys, the victims of each leaf queue in victim order, the pending
jobs in job order and what they ask for.

The search is exact but bounded (``exhaustive`` turns the bounds off, for tests and
benchmarks): a scenario whose victims still out at the preemptor's turn, with every idle and
releasing resource, could not hold the preemptor's pods is not simulated (``Capacity``), nor
is a search whose every candidate could not; a search that failed is not repeated for a job of
the same shape until something is committed; and a per-action time budget, when spent, stops
the action and is reported in the cycle's result.
"""

from __future__ import annotations

import bisect
import math
import time
from collections.abc import Callable, Hashable, Iterator
from functools import partial
from typing import Any, TypeVar

from pykai.engine.actions.allocate import tasks_to_allocate
from pykai.engine.actions.capacity_bound import Capacity
from pykai.engine.actions.gang import FitKey, fit_key
from pykai.engine.actions.scenarios import Demand, generators
from pykai.engine.actions.simulation import Outcome, Simulation, request_of
from pykai.engine.actions.victims import Start, VictimQueue, VictimUnit, victim_key
from pykai.engine.jobs import Job, Task
from pykai.engine.ordering import (
    JobKey,
    KeyMemo,
    QueueKey,
    VictimKeys,
    job_order_key,
    queue_order_key,
    sides,
)
from pykai.engine.session import QueueInfo, Session
from pykai.model.resources import Resources

T = TypeVar("T")

Validator = Callable[[Outcome], bool]
Shape = tuple[str, int, bool, bool, tuple[FitKey, ...]]


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
        self.validate = validate
        self.tried: set[frozenset[int]] = set()
        self.capacity = None if solver.exhaustive else Capacity(self.session.state.nodes, tasks)
        self.demand = Demand(self.session.state.nodes, tasks, self.capacity)
        self.simulation = Simulation(solver, preemptor, tasks, message, self.capacity)

    def run(self, leaves: list[str], victims: Callable[[], VictimQueue]) -> Outcome | None:
        """The first scenario that works, committed; ``victims`` gives the victim order
        afresh for each scenario generator."""
        if self.capacity is not None and not self._may_fit(leaves):
            return None
        for generate in generators(self.demand):
            for scenario, bounded in generate(self.demand, self._units(victims())):
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
            if moves or not self.simulation.always_before(leaf):
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
        try:
            outcome = self.simulation.run(statement, scenario)
            if outcome is not None and (self.validate is None or self.validate(outcome)):
                statement.commit()
                return outcome
            return None
        finally:
            statement.discard()
