"""The engine benchmark at a tiny size: every figure is there and the workloads are what the
issue describes (the goals themselves live in the benchmark, never in timed tests)."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from pykai.bench.contended import build, contended, reclaim_heavy
from pykai.cli.app import app
from pykai.engine.jobs import ON_NODE, TaskStatus

TINY = [
    "--nodes", "20", "--pods", "40", "--large-nodes", "40", "--large-pods", "1400",
    "--contended-nodes", "20", "--contended-large-nodes", "40", "--reclaim-nodes", "20",
    "--repeat", "1", "--growth", "10,20",
]  # fmt: skip


def test_bench_engine_prints_the_contended_figures() -> None:
    result = CliRunner().invoke(app, ["bench", "engine", *TINY, "-o", "json"])
    assert result.exit_code == 0, result.output
    figures = json.loads(result.stdout)
    for key in (
        "pods_per_second",
        "cycle_seconds_4000_nodes_140k_pods",
        "contended_cycle_seconds",
        "contended_cycle_seconds_4000_nodes",
        "contended_next_cycle_seconds_4000_nodes",
        "reclaim_cycle_seconds",
    ):
        assert figures[key] > 0, key
    assert figures["reclaim_cycle_evictions"] > 0  # the reclaim-heavy cycle does reclaim
    assert figures["reclaim_cycle_same_as_exhaustive"] is True
    assert set(figures["contended_growth_seconds"]) == {"10", "20"}
    assert isinstance(figures["contended_growth_exponent"], float)


def test_contended_cluster_has_the_issue_shape() -> None:
    state = build(contended(20))
    running = [t for t in state.tasks.values() if t.status == TaskStatus.RUNNING]
    pending = [t for t in state.tasks.values() if t.status == TaskStatus.PENDING]
    assert (len(running), len(pending)) == (20 * 20, 5 * 20)
    used = state.nodes.used[:, 2]
    assert list(used) == [7.0] * 20  # 7 of 8 GPUs per node
    shared = [t for t in running if t.gpu_groups]
    gpu_pods = [t for t in running if t.request.gpu > 0]
    assert len(shared) == 2 * round(0.2 * 7 * 20)  # a fifth of the used GPUs, two pods each
    assert len(gpu_pods) - len(shared) == round(0.8 * 7 * 20)
    assert {len(state.queue_chain(j.queue)) for j in state.jobs.values()} == {2}
    assert len({j.queue for j in state.jobs.values()}) == 100


def test_reclaim_heavy_cluster_is_full_and_split_by_department() -> None:
    state = build(reclaim_heavy(20))
    assert list(state.nodes.used[:, 2]) == [8.0] * 20
    holders = {j.queue.split("-team")[0] for j in state.jobs.values() if j.running}
    waiters = {j.queue.split("-team")[0] for j in state.jobs.values() if j.pending}
    assert holders == {f"dept-{d}" for d in range(5)}
    assert waiters == {f"dept-{d}" for d in range(5, 10)}
    assert all(t.status in ON_NODE for t in state.tasks.values() if t.node)
