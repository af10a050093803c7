"""Per-object fault isolation: whatever one stored object does to a controller, the others go on.

A controller handles objects one at a time inside ``Isolation.isolated(obj)``. If handling an
object raises, the object is reported (one Warning event ``InvalidObject`` per object version,
through the backend's ``report``) and skipped until it changes; the controller moves on. Errors
that say nothing about the object (the apiserver away, a conflict) are ``transient``: logged and
retried on the next pass, never reported as the object's fault.

The engine's state reports the objects it could not take in (``ClusterState.problems``); the
backends report those the same way, with ``report_problems``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace

from pykai.model.meta import Obj
from pykai.model.problems import ObjectProblem, identity

log = logging.getLogger("pykai.faults")

INVALID = "InvalidObject"  # the reason of every such event and condition
SCHEDULER = "the scheduler"
Report = Callable[[Obj, ObjectProblem], None]  # the backend's one Warning event per version


def skip_message(component: str, problem: str) -> str:
    """The text of the event: who skips the object, and why."""
    return f"{component} skips this object until it is changed: {problem}"


@dataclass(slots=True)
class Attempt:
    """The outcome of the work on one object."""

    failed: bool = False


class Isolation:
    """Runs one controller's work object by object; a failing object is reported and skipped."""

    def __init__(
        self,
        component: str,
        report: Report,
        transient: Callable[[Exception], bool] = lambda _: False,
    ) -> None:
        self.component = component
        self.report = report
        self.transient = transient
        self._seen: set[tuple[str, str, str, str, str]] = set()  # problems logged already

    @contextmanager
    def isolated(self, obj: Obj) -> Iterator[Attempt]:
        """The work on ``obj``; an exception ends it and is reported (transient ones logged),
        and the attempt yielded says it ``failed``."""
        attempt = Attempt()
        try:
            yield attempt
        except Exception as exc:  # the point: no object can stop the others
            attempt.failed = True
            self._failed(obj, exc)

    def run(self, obj: Obj, work: Callable[[], object]) -> None:
        """``work`` on ``obj`` as ``isolated`` runs it, without a context manager (a host runs
        this for every object of every round)."""
        try:
            work()
        except Exception as exc:  # the point: no object can stop the others
            self._failed(obj, exc)

    def _failed(self, obj: Obj, exc: Exception) -> None:
        """Report (or, if transient, log) what stopped the work on ``obj``."""
        kind, namespace, name = identity(obj)
        where = f"{kind} {namespace}/{name}" if namespace else f"{kind} {name}"
        if self.transient(exc):
            log.warning("%s: %s: %s (tried again next time)", self.component, where, exc)
            return
        text = str(exc) if isinstance(exc, ValueError) else f"{type(exc).__name__}: {exc}"
        problem = ObjectProblem.of(obj, skip_message(self.component, text))
        seen = (*problem.key, problem.version, problem.message)
        if seen not in self._seen:  # once per object version and problem
            self._seen.add(seen)
            log.warning("%s: %s skipped: %s", self.component, where, text)
            log.debug("%s: %s", self.component, where, exc_info=exc)
            self.report(obj, problem)


def report_problems(
    problems: Iterable[ObjectProblem], lookup: Callable[[ObjectProblem], Obj | None], report: Report
) -> None:
    """Report what the engine could not take in (the object as stored, found by ``lookup``)."""
    for problem in problems:
        involved = lookup(problem)
        if involved is not None:
            report(involved, replace(problem, message=skip_message(SCHEDULER, problem.message)))
