"""`pykai bench kube` at a small size: every row binds every pod on its own real control plane
and the figures are consistent (smoke test; the figures themselves live in bench/results)."""

from __future__ import annotations

import pytest

from pykai.bench.kube import ROWS, run_kube_bench, workload


def test_every_row_binds_every_pod() -> None:
    figures = run_kube_bench(nodes=4, pods=24, gang=4)
    runs = figures["runs"]
    assert isinstance(runs, list) and [r["row"] for r in runs] == list(ROWS)
    for run in runs:
        assert run["pods"] == 24 and 0 < run["first_bind_s"] <= run["all_bound_s"]
    ratios = figures["vs_kube_scheduler"]
    assert isinstance(ratios, dict) and ratios["kube-scheduler"] == 1.0


def test_workloads_differ_only_in_what_each_scheduler_needs() -> None:
    grouped = workload("pykai", 8, 4)
    assert [o["kind"] for o in grouped].count("PodGroup") == 2
    assert all(o["spec"]["schedulerName"] == "kai-scheduler" for o in grouped if o["kind"] == "Pod")
    default = workload("kube-scheduler", 8, 4)
    assert {o["spec"]["schedulerName"] for o in default} == {"default-scheduler"}
    bare = workload("pykai+grouper", 8, 4)
    assert all("pod-group-name" not in (o["metadata"].get("annotations") or {}) for o in bare)


def test_impossible_sizes_are_refused() -> None:
    with pytest.raises(ValueError, match="do not fit"):
        run_kube_bench(nodes=1, pods=9)
    with pytest.raises(ValueError, match="multiple"):
        run_kube_bench(nodes=2, pods=9, gang=2)
