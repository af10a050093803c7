"""Scenarios side by side: planned, run under the peer and under pykai (concurrently: the
two clusters share nothing), and compared.

Contract of ``compare(scenario, directory)``: an ``Outcome`` whose ``verdict`` is
``not expressible`` (nothing ran; ``reasons`` say why), ``failed`` (a side did not finish:
``failure`` and ``log_tail`` of its record), ``differ`` (``differences`` non-empty) or
``agree``. Each side works in its own subdirectory of ``directory`` and leaves no process
behind (``run.run_side``).

``Batch(directory)`` (a context manager) compares many scenarios on one cluster per side
(``run.Side``: emptied and checked empty between two scenarios, the scheduler started
afresh); ``Batch.compare(scenario)`` gives the same ``Outcome`` as ``compare`` would, and
leaving the batch stops every process it started. ``advance_limit``: the longest ``advance``
replayed as a real wait (``expressible.plan``)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from pykai.compare.diff import Difference, differences
from pykai.compare.expressible import ADVANCE_LIMIT, plan
from pykai.compare.record import Record
from pykai.compare.run import Side
from pykai.compare.scenario import Scenario

AGREE, DIFFER, FAILED, NOT_EXPRESSIBLE = "agree", "differ", "failed", "not expressible"


@dataclass(frozen=True)
class Outcome:
    """A scenario's row (see the module's contract); ``skipped``: steps left out, and why."""

    name: str
    verdict: str
    reasons: tuple[str, ...] = ()
    skipped: tuple[str, ...] = ()
    differences: tuple[Difference, ...] = ()
    records: tuple[Record, ...] = field(default=(), compare=False)


def compare(
    scenario: Scenario,
    directory: Path,
    *,
    peer: str = "kai",
    binaries: Path | None = None,
    concurrently: bool = True,
) -> Outcome:
    """The scenario's outcome (see the module's contract)."""
    with Batch(directory, peer=peer, binaries=binaries, concurrently=concurrently) as batch:
        return batch.compare(scenario)


class Batch:
    """Both sides' clusters, kept for many scenarios (see the module's contract)."""

    def __init__(
        self,
        directory: Path,
        *,
        peer: str = "kai",
        binaries: Path | None = None,
        concurrently: bool = True,
        advance_limit: float = ADVANCE_LIMIT,
    ) -> None:
        self.advance_limit = advance_limit
        self.sides = tuple(
            Side(side, directory / side, binaries=binaries) for side in (peer, "pykai")
        )
        self.pool = ThreadPoolExecutor(max_workers=2 if concurrently else 1)

    def __enter__(self) -> Batch:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop every process of both sides."""
        self.pool.shutdown(wait=True)
        for side in self.sides:
            side.close()

    def compare(self, scenario: Scenario) -> Outcome:
        """The scenario's outcome (see the module's contract)."""
        planned = plan(scenario, self.advance_limit)
        if planned.problems:
            return Outcome(scenario.name, NOT_EXPRESSIBLE, planned.problems, planned.skipped)
        if not planned.steps:
            return Outcome(scenario.name, NOT_EXPRESSIBLE, ("no step to run",), planned.skipped)
        futures = [self.pool.submit(side.run, planned) for side in self.sides]
        theirs, ours = (future.result() for future in futures)
        found = tuple(differences(theirs, ours))
        if theirs.failure or ours.failure:
            failed = [f"{r.side}: {r.failure}" for r in (theirs, ours) if r.failure]
            return Outcome(
                scenario.name, FAILED, tuple(failed), planned.skipped, found, (theirs, ours)
            )
        verdict = DIFFER if found else AGREE
        return Outcome(scenario.name, verdict, (), planned.skipped, found, (theirs, ours))
