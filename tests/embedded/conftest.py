"""Helpers for the embedded-cluster tests: a scripted scheduler and a dump of the database."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field
from pathlib import Path

from pykai.embedded.cluster import EmbeddedCluster
from pykai.engine.decisions import CycleResult
from pykai.engine.state import ClusterState

TABLES = ("objects", "applied", "owners", "meta", "changes")


def dump(path: Path) -> dict[str, list[tuple[str, ...]]]:
    """Every row of every table, sorted: equal dumps mean nothing was written."""
    with sqlite3.connect(path) as db:
        return {table: sorted(db.execute(f"SELECT * FROM {table}")) for table in TABLES}


@dataclass
class ScriptedScheduler:
    """Returns the scripted results one per cycle, then ``steady`` on every later cycle."""

    script: list[CycleResult] = field(default_factory=list)
    steady: CycleResult = field(default_factory=CycleResult)
    cycles: int = 0

    def run_cycle(self, state: ClusterState, now: float) -> CycleResult:
        self.cycles += 1
        return self.script.pop(0) if self.script else self.steady


def scripted(path: Path, scheduler: ScriptedScheduler) -> EmbeddedCluster:
    """A cluster on a SQLite file whose cycles come from ``scheduler``."""
    return EmbeddedCluster.open(path, scheduler=scheduler)
