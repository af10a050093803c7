"""`pykai bench embedded`: a one-pod apply on a cluster already running jobs, timed, with every
timed pod bound; sizes that cannot hold the pods are refused before anything runs."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from pykai.cli.app import app


def test_small_run_prints_its_figures() -> None:
    args = ["bench", "embedded", "--nodes", "2", "--jobs", "10", "--applies", "3", "-o", "json"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    figures = json.loads(result.output)
    assert figures["embedded_nodes"] == 2 and figures["embedded_running_jobs"] == 10
    assert 0 < figures["one_pod_apply_ms"] <= figures["one_pod_apply_ms_max"]


def test_sizes_that_cannot_fit_are_refused() -> None:
    args = ["bench", "embedded", "--nodes", "1", "--jobs", "8", "--applies", "1"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 1
    assert "need more GPUs than 1 nodes have" in result.output
