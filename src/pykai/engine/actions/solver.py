"""The victim solver shared by preempt, reclaim and consolidation (KAI's job solver and its
by-pod simulation: actions/common/solvers, actions/common/action.go).

Victims come one unit at a time from a ``VictimQueue`` (KAI's victim order) and accumulate.
After each unit the scenario is simulated in a statement: every accumulated victim is evicted,
then the preemptor and the victims' jobs are placed again in queue and job order (the pending
jobs of those leaf queues keep their places in that order but are not placed). The preemptor
must be placed whole, within every queue limit counted after the evictions. A victim job that
fits again is no victim: put back on its own node (and GPU group) it is never evicted, placed
elsewhere it is moved (evicted, with a reservation pipelined where it goes). The first
scenario in which the preemptor runs and the action's validator accepts the victims is
committed; no victim is evicted for a preemptor that cannot run.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass

from pykai.engine.actions.allocate import tasks_to_allocate
from pykai.engine.actions.gang import place_gang
from pykai.engine.actions.victims import VictimQueue, VictimUnit
from pykai.engine.capacity import over_capacity
from pykai.engine.jobs import Job, Task, TaskStatus
from pykai.engine.ordering import JobQueue
from pykai.engine.placement import find_node
from pykai.engine.session import Session, Statement
from pykai.model.resources import Resources


@dataclass(frozen=True, slots=True)
class Outcome:
    """What a simulated scenario evicts: the victims (each unit with the pods that stay
    evicted) and the victim pods moved elsewhere."""

    victims: list[VictimUnit]
    moved: list[Task]


Validator = Callable[[Outcome], bool]


def request_of(tasks: list[Task]) -> Resources:
    """The sum of the tasks' requests."""
    total = Resources.ZERO
    for task in tasks:
        total += task.request
    return total


class Solver:
    """The victim searches of one action."""

    def __init__(self, session: Session, reason: str, max_pods: int | None = None) -> None:
        self.session = session
        self.reason = reason
        self.max_pods = max_pods  # evicted pods one scenario may hold at most

    def solve(
        self,
        preemptor: Job,
        tasks: list[Task],
        victims: VictimQueue,
        message: str,
        validate: Validator | None = None,
    ) -> Outcome | None:
        """Evict the victims (in victim order) that let ``tasks`` of ``preemptor`` run, commit
        and say what was evicted and moved; or change nothing and return None."""
        return _Search(self, preemptor, tasks, message, validate).run(victims)

    def pending_in(self, queues: set[str]) -> list[Job]:
        """Pending jobs of the given leaf queues (their places in the simulation's order)."""
        state = self.session.state
        return [state.jobs[k] for k in sorted(state.pending_jobs) if state.jobs[k].queue in queues]


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
        self.evicted: set[Task] = set()
        self.taken: list[VictimUnit] = []

    def run(self, victims: VictimQueue) -> Outcome | None:
        statement = self.session.statement()
        try:
            limit = self.solver.max_pods
            while (unit := victims.pop()) is not None:
                if limit is not None and len(self.evicted) + len(unit.tasks) > limit:
                    break
                self.taken.append(unit)
                for task in unit.tasks:
                    statement.evict(task, self.solver.reason, self.message)
                    self.evicted.add(task)
                mark = statement.checkpoint()
                outcome = self._simulate(statement)
                if outcome is not None and (self.validate is None or self.validate(outcome)):
                    statement.commit()
                    return outcome
                statement.rollback(mark)
            return None
        finally:
            statement.discard()

    def _simulate(self, statement: Statement) -> Outcome | None:
        """Place the preemptor and the victims' jobs again, in queue and job order; None if
        the preemptor cannot run."""
        session = self.session
        victim_jobs = {u.job.key: u.job for u in self.taken}
        leaves = {self.preemptor.queue, *(j.queue for j in victim_jobs.values())}
        involved = {self.preemptor.key: self.preemptor, **victim_jobs}
        others = [j for j in self.solver.pending_in(leaves) if j.key not in involved]
        requests: dict[str, Resources] = {}

        def request_for(job: Job) -> Resources:
            if job.key not in requests:
                requests[job.key] = (
                    self.request
                    if job is self.preemptor
                    else request_of(tasks_to_allocate(job, self.evicted))
                )
            return requests[job.key]

        order = JobQueue(session, [*involved.values(), *others], request_for)
        moved: list[Task] = []
        placed = False
        left = set(victim_jobs)
        while (placed is False or left) and (job := order.pop()) is not None:
            if job is self.preemptor:
                chain = session.chain(job)
                if over_capacity(job, chain, self.request) is not None:
                    return None
                if place_gang(session, statement, self.tasks, self.satisfied) is not None:
                    return None
                placed = True
            elif job.key in left:
                left.discard(job.key)
                self._place_back(statement, job, moved)
        if not placed:
            return None
        units = []
        for unit in self.taken:
            stay = tuple(t for t in unit.tasks if t.status == TaskStatus.RELEASING)
            stay = tuple(t for t in stay if t not in moved)
            if stay:
                units.append(VictimUnit(unit.job, stay))
        return Outcome(units, moved)

    def _place_back(self, statement: Statement, job: Job, moved: list[Task]) -> None:
        """Place a victim job again, all or nothing, as allocate would (pipelined only): an
        evicted pod back on its node and GPU groups is uneviced, elsewhere it is moved."""
        session = self.session
        tasks = tasks_to_allocate(job, self.evicted)
        if not tasks or over_capacity(job, session.chain(job), request_of(tasks)) is not None:
            return
        mark = statement.checkpoint()
        moving: list[Task] = []
        for task in tasks:
            evicted = task.status == TaskStatus.RELEASING
            target = _stand_in(task) if evicted else task
            placement = find_node(session.state.nodes, target, session.config.placement)
            if placement is None:
                statement.rollback(mark)
                return
            if (
                evicted
                and placement.node == task.node
                and (not task.gpu_groups or placement.gpu_groups == task.gpu_groups)
            ):
                statement.unevict(task)
                continue
            statement.pipeline(target, placement.node, placement.gpu_groups)
            if evicted:
                moving.append(task)
        moved += moving


def _stand_in(task: Task) -> Task:
    """A reservation for an evicted pod placed elsewhere: its own pod is deleted and its
    controller makes a new one, which this holds room for (it counts for the job's queue
    while pipelined, and for nothing once the cycle ends)."""
    meta = dataclasses.replace(task.pod.meta, uid=f"{task.uid}/moved")  # fresh GPU group ids
    pod = dataclasses.replace(task.pod, meta=meta)
    return dataclasses.replace(task, pod=pod, status=TaskStatus.FAILED, node="", gpu_groups=())
