"""``pykai bench kube --shape``'s ``kai`` row on the real KAI v0.12.0, small: every pod bound,
the row's figures consistent, CPU seconds for each of KAI's five components; a KAI that fails to
start is a failed row with its log's tail, and nothing of it is left running. No timing is
asserted: the figures live in bench/results/peers.md."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from pykai.bench.shapes import SHAPES
from pykai.bench.side_by_side import measure, run_shape_bench
from pykai.kube import peer_kai, peers
from pykai.model.meta import Obj
from tests.kube.test_bench_kube import processes_of

try:
    for _name in peer_kai.COMPONENTS:
        peers.binary(_name)
except peers.PeerMissing as missing:  # not in `make test`'s peers: `make peers` builds them
    pytestmark = pytest.mark.skip(reason=str(missing))


def test_the_kai_row_binds_every_pod_and_its_figures_are_sane() -> None:
    shape = SHAPES["fill"].sized(nodes=20, pods=40)
    figures = run_shape_bench(shape, ("kai",), repeat=1, timeout=300)
    [run] = figures["runs"]  # type: ignore[misc]
    assert run["ok"], run
    assert run["pods"] == 40 and run["evictions"] == 0
    assert 0 < run["first_bind_s"] <= run["all_bound_s"]
    assert 0 < run["latency_avg_s"] <= run["latency_p99_s"] <= run["all_bound_s"]
    assert run["pods_per_s"] == pytest.approx(40 / run["all_bound_s"], rel=0.01)
    assert set(run["cpu_s"]) == set(run["cpu_run_s"]) == set(peer_kai.COMPONENTS)
    assert run["cpu_s"]["kai-scheduler"] > 0 and run["cpu_total_s"] > 0
    assert all(run["cpu_s"][n] <= run["cpu_run_s"][n] for n in peer_kai.COMPONENTS)
    summary = figures["rows"]["kai"]  # type: ignore[index]
    assert summary["failed"] == 0 and summary["vs_kai"]["all_bound_s"] == 1.0


def test_a_kai_that_fails_to_start_is_a_failed_row_and_leaves_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An unknown action in its configuration: kai-scheduler v0.12.0 exits at start."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))

    def broken(gpu: str = "binpack", cpu: str = "binpack") -> Obj:
        return {"actions": "allocate, no-such-action", "tiers": [{"plugins": []}]}

    monkeypatch.setattr(peer_kai, "scheduler_config", broken)
    run = measure(SHAPES["fill"].sized(nodes=2, pods=4), "kai", timeout=60)
    assert not run["ok"]
    assert "KaiStackError" in str(run["error"]), run
    assert "== kai-scheduler.log" in str(run["log_tail"])
    assert processes_of(tmp_path) == []
