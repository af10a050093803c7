"""Session-wide: no process a test started outlives the test run. A SIGTERM (CI's timeout, a
killed job) is taken as Ctrl-C, so pytest still tears every fixture down (each local control
plane stops what it started: etcd, the apiserver, KWOK, the operators, pykai); and at the end,
any process still running whose command line names this session's temporary directory (one a
broken teardown left) is stopped and named."""

from __future__ import annotations

import contextlib
import os
import signal
from pathlib import Path
from types import FrameType

import pytest


def _interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def pytest_configure(config: pytest.Config) -> None:
    signal.signal(signal.SIGTERM, _interrupt)


def leftovers(directory: Path) -> dict[int, str]:
    """Live processes, other than this one, whose command line names ``directory``."""
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:  # gone meanwhile
            continue
        if str(directory) in command and state != "Z":
            found[int(entry.name)] = command
    return found


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    factory = getattr(session.config, "_tmp_path_factory", None)
    if factory is None:
        return
    base = factory.getbasetemp()
    stopped = leftovers(base)
    for pid in stopped:
        with contextlib.suppress(ProcessLookupError):  # gone meanwhile
            os.kill(pid, signal.SIGKILL)
    if stopped:
        lines = "\n".join(f"  {pid}: {command[:200]}" for pid, command in stopped.items())
        print(f"\nstopped {len(stopped)} process(es) a test left running:\n{lines}")
