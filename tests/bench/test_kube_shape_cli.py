"""``pykai bench kube --shape``'s command line: what it cannot run is refused before any
control plane starts, with the choices."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from pykai.cli.app import app


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--shape", "huge"], "--shape: unknown huge; choose from fill, reclaim"),
        (["--shape", "distributed", "--rows", "kube-scheduler"], "cannot run rows kube-scheduler"),
        (["--shape", "fill", "--rows", "pykai,ceiling"], "cannot run rows ceiling"),
        (["--shape", "fill", "--nodes", "2", "--pods", "17"], "do not fit in the cluster"),
        (["--shape", "reclaim", "--nodes", "2", "--pods", "9"], "queue B's share"),
    ],
)
def test_what_a_shape_cannot_run_is_refused_before_measuring(
    args: list[str], message: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("pykai.bench.side_by_side.measure", lambda *_, **__: pytest.fail())
    result = CliRunner().invoke(app, ["bench", "kube", *args])
    assert result.exit_code == 1 and message in result.stderr, result.output
