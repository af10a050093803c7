"""A peer that fails is a failed row with its log's tail, never a hang, and leaves no process
behind (pykai.compare.run); what a real cluster cannot replay is listed with its reason."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from pykai.compare.expressible import plan
from pykai.compare.run import run_side
from pykai.compare.scenario import read_scenario
from pykai.kube import peer_kai, peers

SCENARIOS = Path(__file__).parents[1] / "scenarios"

try:
    for _name in peer_kai.COMPONENTS:
        peers.binary(_name)
except peers.PeerMissing as missing:  # not in `make test`'s peers: `make peers` builds them
    pytestmark = pytest.mark.skip(reason=str(missing))


def processes_naming(text: str) -> list[str]:
    """This user's processes whose command line or environment names ``text``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            said = (entry / "cmdline").read_bytes() + (entry / "environ").read_bytes()
        except OSError:
            continue
        if text.encode() in said:
            found.append(f"{entry.name}: {(entry / 'cmdline').read_bytes()[:120]!r}")
    return found


def test_a_peer_that_exits_at_once_is_a_failed_record_and_leaves_nothing(tmp_path: Path) -> None:
    fake = tmp_path / "bin"
    fake.mkdir()
    for binary in (peers.directory() / "bin").iterdir():
        (fake / binary.name).symlink_to(binary.resolve())
    (fake / "kai-scheduler").unlink()
    (fake / "kai-scheduler").write_text("#!/bin/sh\necho 'fake kai-scheduler: giving up'\nexit 3\n")
    (fake / "kai-scheduler").chmod(0o755)
    scenario = read_scenario(SCENARIOS / "02-gang-all-or-nothing")
    record = run_side(plan(scenario), "kai", tmp_path / "kai", binaries=fake, start_timeout=30)
    assert "KaiStackError" in record.failure, record
    assert "fake kai-scheduler: giving up" in record.log_tail
    assert record.steps == ()
    assert processes_naming(str(tmp_path)) == []


def test_the_command_lists_what_it_cannot_express_with_the_reason(tmp_path: Path) -> None:
    result = subprocess.run(
        [
            sys.executable,
            *("-m", "pykai", "compare", str(SCENARIOS / "43-stale-gang-evicted")),
            *(str(SCENARIOS / "70-actions-configurable"), f"--work={tmp_path}"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.count("\tnot expressible") == 2, result.stdout
    assert "no clock to advance" in result.stdout
    assert "kind SchedulingShard is not in KAI's API" in result.stdout
