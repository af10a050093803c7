"""Finding the data folder (trace and published results), which is not installed with pykai:
an explicit folder, else $PYKAI_DATA, else the source checkout's data/, else a clear error."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pykai.cli.app import app
from pykai.sim import fgd, report
from pykai.sim.fgd import DataNotFoundError, data_dir, published_fragmentation, published_medians
from tests.sim.conftest import DATA


@pytest.fixture
def installed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """pykai as a non-editable install sees it: no data/ beside the package, no $PYKAI_DATA."""
    monkeypatch.setattr(fgd, "CHECKOUT_DATA", None)
    monkeypatch.delenv(fgd.DATA_ENV, raising=False)
    return tmp_path


def test_the_checkout_data_folder_is_the_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(fgd.DATA_ENV, raising=False)
    assert data_dir() == DATA
    assert published_medians("fgd")[100] == pytest.approx(4.77, abs=0.01)


def test_an_installed_copy_says_how_to_point_at_the_data(installed: Path) -> None:
    with pytest.raises(DataNotFoundError, match=r"--data DIR\) or set PYKAI_DATA"):
        published_medians("fgd")
    with pytest.raises(DataNotFoundError, match="not installed with pykai"):
        published_fragmentation("fgd")


def test_a_checkout_without_its_data_folder_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(fgd, "CHECKOUT_DATA", tmp_path / "data")
    monkeypatch.delenv(fgd.DATA_ENV, raising=False)
    with pytest.raises(DataNotFoundError, match=f"checkout's data folder {tmp_path}/data does"):
        published_medians("fgd")


def test_an_explicit_folder_or_the_environment_is_used(
    installed: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert published_medians("random", DATA)[100] == pytest.approx(13.75, abs=0.01)
    monkeypatch.setenv(fgd.DATA_ENV, str(DATA))
    assert published_fragmentation("bestfit")[40] == pytest.approx(11.7, abs=0.05)
    elsewhere = installed / "elsewhere"
    with pytest.raises(DataNotFoundError, match=f"the given data folder {elsewhere} does not"):
        published_medians("fgd", elsewhere)  # an explicit folder wins over the environment


def test_a_folder_without_the_files_is_named(installed: Path) -> None:
    (installed / "empty").mkdir()
    with pytest.raises(DataNotFoundError, match="is not a pykai data/ folder"):
        published_medians("fgd", installed / "empty")


def test_bench_fgd_takes_the_data_folder(installed: Path) -> None:
    runner = CliRunner()
    result = runner.invoke(app, ["bench", "fgd", "--max-pods", "50"])
    assert result.exit_code == 1
    assert result.stderr.startswith("error: pykai runs from an installed copy; the openb trace")
    assert "--data DIR" in result.stderr
    plot = installed / "f.png"
    args = ["bench", "fgd", "--data", str(DATA), "--max-pods", "50", "--plot", str(plot)]
    result = runner.invoke(app, [*args, "-o", "json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["policy"] == "fgd" and plot.exists()


def test_report_checks_the_data_folder_before_running(
    installed: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as stopped:
        report.main(["--out", str(installed / "out")])
    assert stopped.value.code == 2
    assert "not installed with pykai" in capsys.readouterr().err
    assert not (installed / "out").exists()
