"""The victim solver shared by preempt, reclaim and consolidation.

Victims are tried in victim order (the reverse of job order): a job's pods beyond its minimum
one at a time (newest task first), then the rest of its gang as a whole. After each addition
the preemptor's gang is placed on idle and releasing resources; the first set of victims that
lets the whole gang in (and passes the action's validator) is kept, then trimmed to the victims
on the nodes the preemptor actually uses. No victim is evicted for a preemptor that cannot run.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

from pykai.engine.actions.gang import place_gang
from pykai.engine.jobs import EVICTABLE, Job, Task
from pykai.engine.ordering import job_order_key
from pykai.engine.session import Session, Statement


@dataclass(frozen=True, slots=True)
class VictimUnit:
    """Pods evicted together: one elastic pod, or a gang's remaining pods."""

    job: Job
    tasks: tuple[Task, ...]


Validator = Callable[[list[VictimUnit]], bool]


def victim_units(jobs: Iterable[Job], protected: Callable[[Job], bool]) -> Iterator[VictimUnit]:
    """Victim units in victim order. A protected job (min-runtime) offers only its pods beyond
    its minimum."""
    for job in sorted(jobs, key=job_order_key, reverse=True):
        running = sorted(
            (t for t in job.tasks.values() if t.status in EVICTABLE),
            key=lambda t: t.order_key,
            reverse=True,
        )
        extra = max(0, len(running) - job.min_member)
        for task in running[:extra]:
            yield VictimUnit(job, (task,))
        if running[extra:] and not protected(job):
            yield VictimUnit(job, tuple(running[extra:]))


def solve(
    session: Session,
    preemptor: Job,
    tasks: list[Task],
    units: list[VictimUnit],
    reason: str,
    message: str,
    validate: Validator | None = None,
) -> bool:
    """Evict the fewest victim units (in order) that let ``tasks`` run; commit and return True,
    or change nothing and return False."""
    search = _Search(session, tasks, reason, message, validate, preemptor.gang_satisfied())
    found = search.first_sufficient(units)
    if found is None:
        return False
    taken, used_nodes = found
    needed = [u for u in taken if any(t.node in used_nodes for t in u.tasks)]
    for candidate in (needed, taken) if len(needed) < len(taken) else (taken,):
        statement = session.statement()
        search.evict(statement, candidate)
        if search.fits(statement, candidate):
            statement.commit()
            return True
        statement.discard()
    return False


@dataclass(frozen=True, slots=True)
class _Search:
    """One preemptor's search for victims."""

    session: Session
    tasks: list[Task]
    reason: str
    message: str
    validate: Validator | None
    satisfied: bool

    def evict(self, statement: Statement, units: list[VictimUnit]) -> None:
        """Evict the units' pods in the statement."""
        for unit in units:
            for task in unit.tasks:
                statement.evict(task, self.reason, self.message)

    def fits(self, statement: Statement, units: list[VictimUnit]) -> bool:
        """Whether the preemptor's gang now fits (placed in the statement) and the victims
        pass the action's validator."""
        placed = place_gang(self.session, statement, self.tasks, self.satisfied) is None
        return placed and (self.validate is None or self.validate(units))

    def first_sufficient(self, units: list[VictimUnit]) -> tuple[list[VictimUnit], set[str]] | None:
        """The shortest prefix of ``units`` that works, and the nodes the preemptor then
        uses. Leaves the state unchanged."""
        statement = self.session.statement()
        try:
            for count in range(1, len(units) + 1):
                self.evict(statement, units[count - 1 : count])
                mark = statement.checkpoint()
                if self.fits(statement, units[:count]):
                    return units[:count], {t.node for t in self.tasks}
                statement.rollback(mark)
            return None
        finally:
            statement.discard()
