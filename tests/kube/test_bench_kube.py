"""`pykai bench kube` at a small size: every row binds every pod on its own real control plane
and the figures are consistent (smoke test; the figures themselves live in bench/results); a
run that fails or is terminated leaves no control plane behind."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from pykai.bench import KUBE_ROWS
from pykai.bench.kube import run_kube_bench, workload
from pykai.kube import localcluster
from tests.kube.conftest import wait_for


def processes_of(directory: Path) -> list[str]:
    """Command lines of the live processes that name ``directory`` (a run's control plane)."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:  # not a process, or gone meanwhile
            continue
        if str(directory) in command:
            found.append(command)
    return found


def test_every_row_binds_every_pod() -> None:
    figures = run_kube_bench(nodes=4, pods=24, gang=4)
    runs = figures["runs"]
    assert isinstance(runs, list) and [r["row"] for r in runs] == list(KUBE_ROWS)
    for run in runs:
        assert run["pods"] == 24 and 0 < run["first_bind_s"] <= run["all_bound_s"]
    for name, row in (("vs_kube_scheduler", "kube-scheduler"), ("vs_cold_ceiling", "cold-ceiling")):
        ratios = figures[name]
        assert isinstance(ratios, dict) and ratios[row] == 1.0


def test_workloads_differ_only_in_what_each_scheduler_needs() -> None:
    grouped = workload("pykai", 8, 4)
    assert [o["kind"] for o in grouped].count("PodGroup") == 2
    assert all(o["spec"]["schedulerName"] == "kai-scheduler" for o in grouped if o["kind"] == "Pod")
    default = workload("kube-scheduler", 8, 4)
    assert {o["spec"]["schedulerName"] for o in default} == {"default-scheduler"}
    for ceiling in ("ceiling", "cold-ceiling"):  # no scheduler runs: only the client binds
        assert {o["spec"]["schedulerName"] for o in workload(ceiling, 8, 4)} == {"nobody"}
    bare = workload("pykai+grouper", 8, 4)
    assert all("pod-group-name" not in (o["metadata"].get("annotations") or {}) for o in bare)


def test_impossible_sizes_are_refused() -> None:
    with pytest.raises(ValueError, match="do not fit"):
        run_kube_bench(nodes=1, pods=9)
    with pytest.raises(ValueError, match="multiple"):
        run_kube_bench(nodes=2, pods=9, gang=2)


def test_a_run_failing_while_its_control_plane_starts_stops_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """etcd and kube-apiserver are up when installing the CRDs fails: both are stopped."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))

    def broken(*args: object) -> None:
        assert any("kube-apiserver" in c for c in processes_of(tmp_path))  # up to this point
        raise RuntimeError("injected")

    monkeypatch.setattr(localcluster, "install_basics", broken)
    with pytest.raises(RuntimeError, match="injected"):
        run_kube_bench(nodes=1, pods=1, rows=("ceiling",))
    assert processes_of(tmp_path) == []


def test_a_terminated_run_stops_its_control_plane(tmp_path: Path) -> None:
    """SIGTERM to `pykai bench kube` once its apiserver runs: the bench exits and nothing it
    started is left running."""
    bench = subprocess.Popen(
        [sys.executable, "-m", "pykai", "bench", "kube", "--nodes=2", "--pods=8", "--rows=pykai"],
        env={**os.environ, "TMPDIR": str(tmp_path)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        assert wait_for(
            lambda: any("kube-apiserver" in c for c in processes_of(tmp_path)), timeout=120
        )
        bench.send_signal(signal.SIGTERM)
        assert bench.wait(timeout=120) != 0
    finally:
        if bench.poll() is None:
            bench.kill()
    assert processes_of(tmp_path) == []
