"""One error hierarchy: every exception pykai defines derives from PykaiError; the command line
reports those as the user's (one line, exit 1) and anything else as a bug (one line, exit 70,
the traceback only with --debug)."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import sys
from pathlib import Path

import pytest

import pykai
import pykai.cli.manifests
from pykai.cli.app import main
from pykai.cli.errors import INTERNAL_ERROR, USER_ERROR
from pykai.model.errors import PykaiError


def _exception_classes() -> list[type[BaseException]]:
    """Every exception class defined in a pykai module."""
    found = []
    for info in pkgutil.walk_packages(pykai.__path__, "pykai."):
        if info.name.endswith("__main__"):
            continue
        module = importlib.import_module(info.name)
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if cls.__module__ == module.__name__ and issubclass(cls, BaseException):
                found.append(cls)
    return found


def test_every_pykai_exception_derives_from_the_root() -> None:
    classes = _exception_classes()
    assert len(classes) > 20  # the walk found pykai's exceptions, not nothing
    assert [c.__qualname__ for c in classes if not issubclass(c, PykaiError)] == []


def _run(monkeypatch: pytest.MonkeyPatch, *args: str) -> int:
    monkeypatch.setattr(sys, "argv", ["pykai", *args])
    with pytest.raises(SystemExit) as stopped:
        main()
    code = stopped.value.code
    assert isinstance(code, int)
    return code


def test_a_user_error_is_one_line_and_exit_1(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code = _run(monkeypatch, "apply", "-f", str(tmp_path / "missing.yaml"))
    err = capsys.readouterr().err
    assert code == USER_ERROR == 1
    assert err.startswith("error: ") and err.count("\n") == 1 and "Traceback" not in err


def _bug(*_: object) -> None:
    raise RuntimeError("boom")


def test_an_unexpected_error_is_named_with_its_own_exit_code(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    monkeypatch.setattr(pykai.cli.manifests, "read_manifests", _bug)
    code = _run(monkeypatch, "apply", "-f", str(tmp_path / "x.yaml"))
    err = capsys.readouterr().err
    assert code == INTERNAL_ERROR == 70
    assert err.splitlines() == [
        "error: internal error (a bug in pykai): RuntimeError: boom",
        "error: run again with --debug for the traceback",
    ]


def test_debug_shows_the_traceback_of_an_unexpected_error(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    monkeypatch.setattr(pykai.cli.manifests, "read_manifests", _bug)
    code = _run(monkeypatch, "--debug", "apply", "-f", str(tmp_path / "x.yaml"))
    err = capsys.readouterr().err
    assert code == INTERNAL_ERROR
    assert err.startswith("Traceback") and "in _bug" in err
    assert err.splitlines()[-1] == "error: internal error (a bug in pykai): RuntimeError: boom"
