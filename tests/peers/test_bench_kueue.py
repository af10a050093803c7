"""``pykai bench kube --shape kueue`` on the real Kueue v0.17.0 and on ``pykai run``, small (30
Jobs in 6 ClusterQueues): both rows admit every Job, their figures are consistent, CPU seconds
for each of the row's processes; a Kueue that fails to start is a failed row with its log's
tail, and nothing of it is left running. No timing is asserted: the figures live in
bench/results/peers.md."""

from __future__ import annotations

import tempfile
from dataclasses import replace
from pathlib import Path

import pytest

from pykai.bench.kueue_ceiling import hold_for, simulate
from pykai.bench.kueue_shape import KUEUE_SHAPE
from pykai.bench.kueue_side_by_side import measure, run_kueue_bench
from pykai.kube import peer_kueue, peers
from pykai.model.meta import Obj
from tests.kube.test_bench_kube import processes_of

try:
    peers.binary("kueue")
    peers.module("kueue")
except peers.PeerMissing as missing:  # `make test-peers` (or `make peers`) builds them
    pytestmark = pytest.mark.skip(reason=str(missing))

SMALL = replace(KUEUE_SHAPE, cohorts=2, queues_per_cohort=3, scale=100, nodes=2)
PROCESSES = {"kueue": {"kueue", "kube-scheduler"}, "pykai": {"pykai"}}


def test_both_rows_admit_every_job_and_their_figures_are_sane() -> None:
    assert SMALL.workloads == 30
    figures = run_kueue_bench(SMALL, ("kueue", "pykai"), repeat=1, timeout=240)
    runs = figures["runs"]
    assert isinstance(runs, list) and [r["row"] for r in runs] == ["kueue", "pykai"]
    for run in runs:
        assert run["ok"], {k: v for k, v in run.items() if k != "log_tail"} | {
            "log_tail": str(run.get("log_tail", ""))[-2000:]
        }
        assert run["workloads"] == run["admitted"] == 30
        assert run["all_admitted_s"] > 0
        assert run["admissions_per_s"] == pytest.approx(30 / run["all_admitted_s"], rel=0.01)
        for cls in ("small", "medium", "large"):
            median, p99 = run[f"admission_{cls}_median_s"], run[f"admission_{cls}_p99_s"]
            assert 0 <= median <= p99 <= run["all_admitted_s"]
        assert set(run["cpu_s"]) == set(run["cpu_run_s"]) == PROCESSES[run["row"]]
        assert all(run["cpu_s"][n] <= run["cpu_run_s"][n] for n in run["cpu_s"])
        assert run["cpu_total_s"] > 0
        assert set(run["shared_cpu_s"]) == {"kube-apiserver", "kube-controller-manager"}
        assert 0 <= run["preempted"] <= 30
    summary = figures["rows"]
    assert isinstance(summary, dict)
    assert summary["kueue"]["vs_kueue"]["admissions_per_s"] == 1.0
    assert summary["pykai"]["failed"] == 0 and summary["pykai"]["vs_kueue"]["admissions_per_s"] > 0
    # the ceiling is the simulation's; each row's fraction of it and its hold come from its
    # median time (the simulation admits the small shape's Jobs long before any real row)
    ceiling = figures["ceiling"]
    assert ceiling == simulate(SMALL).figures()
    for row in ("kueue", "pykai"):
        entry = summary[row]
        rate = entry["admissions_per_s"]["median"]
        assert entry["of_ceiling"] == round(rate / ceiling["admissions_per_s"], 4)
        assert entry["hold_s"] == hold_for(SMALL, entry["all_admitted_s"]["median"])
        assert entry["hold_s"] > 0


def test_a_kueue_that_fails_to_start_is_a_failed_row_and_leaves_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A configuration of an apiVersion Kueue does not know: its manager exits at start."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    real = peer_kueue.configuration

    def broken(*args: object, **kwargs: object) -> Obj:
        return real(*args, **kwargs) | {"apiVersion": "config.kueue.x-k8s.io/v0"}  # type: ignore[arg-type]

    monkeypatch.setattr(peer_kueue, "configuration", broken)
    tiny = replace(SMALL, cohorts=1, queues_per_cohort=1, nodes=1)
    run = measure(tiny, "kueue", timeout=60)
    assert not run["ok"]
    assert "KueueStackError" in str(run["error"]), run
    assert "== kueue.log" in str(run["log_tail"])
    assert run["admitted"] == 0
    assert processes_of(tmp_path) == []
