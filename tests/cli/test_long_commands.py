"""Long commands check their arguments before the long work starts, and report progress only
on a terminal (here stderr is not one: it stays empty)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from pykai.cli.app import app
from tests.sim.conftest import DATA

FGD = ["bench", "fgd", "--data", str(DATA), "--max-pods", "50"]


def test_bench_fgd_replays_several_policies_into_one_titled_plot(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    plotted: list[tuple[list[str], str]] = []

    def plot(results: list[dict[str, Any]], path: Path, data: Path, *, title: str) -> None:
        plotted.append(([r["policy"] for r in results], title))

    monkeypatch.setattr("pykai.sim.fgd.plot", plot)
    args = [*FGD, "--policy", "bestfit,fgd", "--plot", str(tmp_path / "p.png")]
    result = CliRunner().invoke(app, [*args, "-o", "json"])
    assert result.exit_code == 0, result.output
    assert [r["policy"] for r in json.loads(result.stdout)] == ["bestfit", "fgd"]
    assert plotted == [(["bestfit", "fgd"], "openb trace, tune 1.3, seeds 42: bestfit, fgd")]
    assert result.stderr == ""
    table = CliRunner().invoke(app, [*FGD, "--policy", "bestfit,fgd"]).stdout.splitlines()
    assert table[0].split("   ")[:3] == [
        "ARRIVAL %",
        "UNALLOCATED GPU % (median, bestfit)",
        "UNALLOCATED GPU % (median, fgd)",
    ]
    assert len(table) == 8


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--policy", "fgd,best"], "error: --policy: unknown best; choose from "),
        (["--policy", ","], "error: --policy: unknown (none)"),
        (["--plot", "/no/such/folder/p.png"], "the folder /no/such/folder does not exist"),
        (["-o", "xml"], 'error: unknown output format "xml"'),
    ],
)
def test_bench_fgd_refuses_bad_arguments_before_replaying(
    args: list[str], message: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    def replay(*_: object) -> None:
        raise AssertionError("replayed before checking its arguments")

    monkeypatch.setattr("pykai.sim.fgd.run_fgd", replay)
    result = CliRunner().invoke(app, [*FGD, *args])
    assert result.exit_code == 1 and message in result.stderr


@pytest.mark.parametrize("command", [["bench", "kube"], ["bench", "engine"], ["bench", "cli"]])
def test_benchmarks_refuse_an_unknown_output_before_measuring(
    command: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for module, name in [("kube", "run_kube_bench"), ("engine", "run_engine_bench")]:
        monkeypatch.setattr(f"pykai.bench.{module}.{name}", lambda *_, **__: pytest.fail())
    monkeypatch.setattr("pykai.bench.cli.run_cli_bench", lambda *_, **__: pytest.fail())
    result = CliRunner().invoke(app, [*command, "-o", "xml"])
    assert (result.exit_code, result.stderr) == (
        1,
        'error: unknown output format "xml": use json or table\n',
    )


def test_local_cluster_up_reads_its_nodes_file_before_starting_anything(tmp_path: Path) -> None:
    directory = tmp_path / "local"
    bad = tmp_path / "nodes.yaml"
    bad.write_text("kind: Node\nmetadata: {name: [\n")
    for nodes, message in [(bad, f"{bad}:"), (tmp_path / "none.yaml", "none.yaml")]:
        args = ["local-cluster", "up", "--dir", str(directory), "--nodes", str(nodes)]
        result = CliRunner().invoke(app, args)
        assert result.exit_code == 1 and message in result.stderr
        assert not directory.exists()
