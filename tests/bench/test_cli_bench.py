"""The CLI benchmark at a tiny size: its cluster file and its figures (the goals themselves
live in the benchmark's report, never in timed tests)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pykai.bench.cli import make_cluster, median_seconds
from pykai.cli.app import app
from pykai.embedded.sqlite import Store


def test_the_cluster_file_holds_the_pods_asked_for_four_in_five_running(tmp_path: Path) -> None:
    path = tmp_path / "cluster.db"
    names = make_cluster(path, 50)
    store = Store(path, readonly=True)
    pods = store.list("Pod")
    assert len(pods) == 50
    assert sum(bool(p["spec"].get("nodeName")) for p in pods) == 40
    assert store.get("Pod", names.running_pod, "default")["spec"]["nodeName"]  # type: ignore[index]
    group = store.get("PodGroup", names.pending_podgroup, "default")
    assert group is not None and group["spec"]["queue"] == names.queue
    assert len(store.list("Node")) == 2
    store.close()


def test_a_cluster_of_given_nodes_holds_about_the_pods_asked_for(tmp_path: Path) -> None:
    path = tmp_path / "cluster.db"
    make_cluster(path, 100, nodes=4)
    store = Store(path, readonly=True)
    assert len(store.list("Node")) == 4
    pending = [p for p in store.list("Pod") if not p["spec"].get("nodeName")]
    assert len(pending) == 20  # a fifth of the pods asked for
    store.close()


def test_a_failing_command_is_an_error_not_a_fast_figure() -> None:
    with pytest.raises(RuntimeError, match="boom"):
        median_seconds([sys.executable, "-c", "import sys; sys.exit('boom')"], 1)


def test_bench_cli_prints_every_figure_against_the_floor() -> None:
    result = CliRunner().invoke(
        app,
        [
            *("bench", "cli", "--pods", "25", "--runs", "1"),
            *("--large-nodes", "2", "--large-pods", "50", "--large-runs", "1", "-o", "json"),
        ],
    )
    assert result.exit_code == 0, result.output
    figures = json.loads(result.stdout)
    for command in (
        "pykai version",
        "pykai --help",
        "pykai get pods (25 pods)",
        "pykai describe pod",
        "pykai get podgroups (25 pods)",
        "pykai get podgroups -o wide",
        "pykai describe queue",
        "pykai explain podgroup (25 pods)",
        "pykai explain queue (2 nodes, 50 pods)",
    ):
        assert figures[f"{command} s"] > figures["python -c pass s"] > 0
        assert figures[f"{command} cpu s"] > figures["python -c pass cpu s"] > 0
        assert figures[f"{command} x floor"] > 1 and figures[f"{command} cpu x floor"] > 1
    assert figures["runs"] == 1 and "load average before" in figures
