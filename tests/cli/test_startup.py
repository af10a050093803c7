"""What a command loads when it starts: quick commands load neither the engine, the
controllers, the Kubernetes client, numpy, pydantic nor rich; reading commands never build
the engine's state nor write the cluster file. Each runs in a new process, as a user starts
it (how long they take is measured by ``pykai bench cli``, not here)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from pykai.embedded.cluster import EmbeddedCluster
from pykai.model.builders import node, pod
from tests.cli.conftest import Cli

_LOADED = """
import json, sys
from pykai.cli.app import main
sys.argv = ["pykai", *json.loads(sys.argv[1])]
code = 0
try:
    main()
except SystemExit as exit:
    code = exit.code
print(json.dumps({"code": code, "modules": sorted(sys.modules)}), file=sys.stderr)
"""
HEAVY = (
    "pykai.engine",
    "pykai.controllers",
    "pykai.embedded.cluster",
    "pykai.kube",
    "numpy",
    "pydantic",
)


def loaded(*args: str) -> tuple[int, set[str]]:
    """The exit code of ``pykai ARGS`` and the modules it had loaded when it ended."""
    done = subprocess.run(
        [sys.executable, "-c", _LOADED, json.dumps(args)],
        capture_output=True,
        text=True,
        check=False,
    )
    report = json.loads(done.stderr.splitlines()[-1])
    return report["code"], set(report["modules"])


def heavy(modules: set[str], *more: str) -> list[str]:
    return sorted(m for m in modules if m.startswith((*HEAVY, *more)))


@pytest.fixture
def cluster_file(tmp_path: Path) -> Path:
    path = tmp_path / "cluster.db"
    cluster = EmbeddedCluster.open(path)
    cluster.apply([node("n1", gpus=2), pod("p", gpus=1)])
    cluster.close()
    return path


@pytest.mark.parametrize("args", [["version"], ["--help"], ["get", "--help"]])
def test_version_and_help_load_no_engine_client_or_rich(args: list[str]) -> None:
    code, modules = loaded(*args)
    assert code == 0
    assert heavy(modules, "rich", "yaml", "pykai.embedded") == []


@pytest.mark.parametrize(
    "args",
    [["get", "pods"], ["get", "pods", "-o", "wide"], ["get", "nodes"], ["describe", "pod", "p"]],
)
def test_reading_commands_load_no_engine_and_leave_the_file_as_it_was(
    cluster_file: Path, args: list[str]
) -> None:
    before = cluster_file.stat().st_mtime_ns, cluster_file.read_bytes()
    code, modules = loaded(*args, "--cluster", str(cluster_file))
    assert code == 0
    assert heavy(modules, "rich") == []
    assert (cluster_file.stat().st_mtime_ns, cluster_file.read_bytes()) == before


def test_reading_commands_never_build_the_engine_state(
    cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    cli("apply", "-f", "-", stdin=json.dumps(node("n1", gpus=1)))

    def refuse(self: EmbeddedCluster) -> None:
        raise AssertionError("a reading command built the engine state")

    monkeypatch.setattr(EmbeddedCluster, "_load_state", refuse)
    assert cli.lines("get", "nodes")[1][0] == "n1"
    assert "n1" in cli("describe", "node", "n1").out
    assert cli("describe", "queue", "default-queue").code == 0
