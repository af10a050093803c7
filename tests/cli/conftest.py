"""Helpers for the CLI tests: a runner on a cluster file, a reader over plain dicts."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from pykai.cli.app import app
from pykai.embedded.cluster import EmbeddedCluster
from pykai.model.meta import Obj
from pykai.model.positions import Board

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
QUEUES = str(EXAMPLES / "queues-department-1-team-a.yaml")


@dataclass
class Result:
    """What one command did."""

    code: int
    out: str
    err: str


@dataclass
class Cli:
    """Runs ``pykai`` commands against one cluster file."""

    path: Path
    runner: CliRunner = field(default_factory=CliRunner)

    def __call__(self, *args: str, stdin: str | None = None) -> Result:
        result = self.runner.invoke(app, [*args, "--cluster", str(self.path)], input=stdin)
        if result.exception is not None and not isinstance(result.exception, SystemExit):
            raise result.exception
        return Result(result.exit_code, result.stdout, result.stderr)

    def lines(self, *args: str) -> list[list[str]]:
        """The whitespace-split lines a successful command printed."""
        result = self(*args)
        assert result.code == 0, result.err
        return [line.split() for line in result.out.splitlines()]


@pytest.fixture
def cli(tmp_path: Path) -> Cli:
    """A runner on a new cluster (as the first ``pykai apply`` makes it)."""
    path = tmp_path / "cluster.db"
    EmbeddedCluster.open(path).close()
    return Cli(path)


def write(directory: Path, name: str, objects: list[Obj]) -> str:
    """Objects as a multi-document YAML file; its path."""
    path = directory / name
    path.write_text(yaml.safe_dump_all(objects))
    return str(path)


@dataclass
class FakeReader:
    """A cluster reader over plain dicts, for printer tests."""

    objects: list[Obj] = field(default_factory=list)
    clock: float = 0.0
    events: list[Obj] = field(default_factory=list)

    def list(self, kind: str, namespace: str | None = None) -> list[Obj]:
        return [
            o
            for o in self.objects
            if o["kind"] == kind
            and (namespace is None or o["metadata"].get("namespace", "default") == namespace)
        ]

    def get(self, kind: str, name: str, namespace: str = "") -> Obj | None:
        found = [o for o in self.list(kind) if o["metadata"]["name"] == name]
        return found[0] if found else None

    def events_for(self, kind: str, name: str, namespace: str = "") -> list[Obj]:
        return [e for e in self.events if e["involvedObject"]["name"] == name]

    def now(self) -> float:
        return self.clock

    def positions(self) -> Board | None:
        return None  # worked out by the engine from the objects
