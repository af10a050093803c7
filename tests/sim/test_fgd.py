"""The public API: run_fgd, the published figures, the plot, and trace variants."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from pykai.sim.fgd import parse_seeds, plot, published_fragmentation, published_medians, run_fgd
from pykai.sim.openb import TraceNode, TracePod, read_nodes, read_pods
from pykai.sim.variants import VARIANTS, make_variant
from tests.sim.conftest import NODES_CSV, PODS_CSV


def test_run_fgd_returns_the_documented_shape() -> None:
    calls: list[tuple[int, int]] = []
    result = run_fgd(
        NODES_CSV,
        PODS_CSV,
        "fgd",
        [42, 43],
        max_pods=150,
        progress=lambda d, t: calls.append((d, t)),
    )
    assert set(result) == {"policy", "runs", "median_unallocated_gpu_pct"}
    assert result["policy"] == "fgd" and calls == [(1, 2), (2, 2)]
    assert [r["seed"] for r in result["runs"]] == [42, 43]
    for run in result["runs"]:
        assert set(run) == {"seed", "unallocated_gpu_pct", "fragmentation_pct", "seconds"}
        assert len(run["unallocated_gpu_pct"]) == len(run["fragmentation_pct"]) == 131
        assert run["unallocated_gpu_pct"][130] is None  # 150 pods do not reach 130 %
    assert len(result["median_unallocated_gpu_pct"]) == 131


def test_run_fgd_rejects_an_unknown_policy() -> None:
    with pytest.raises(ValueError, match="unknown policy"):
        run_fgd(NODES_CSV, PODS_CSV, "worstfit", [42])


def test_published_medians() -> None:
    fgd = published_medians("fgd")
    assert len(fgd) == 131
    assert fgd[100] == pytest.approx(4.77, abs=0.01)
    assert published_medians("random")[100] == pytest.approx(13.75, abs=0.01)
    assert published_fragmentation("bestfit")[40] == pytest.approx(11.7, abs=0.05)
    with pytest.raises(ValueError, match="no published figures for 'pykai'"):
        published_medians("pykai")


def test_plot_writes_a_png(tmp_path: Path) -> None:
    result = run_fgd(NODES_CSV, PODS_CSV, "bestfit", [42], max_pods=100)
    plot([result, {**result, "policy": "pykai"}], tmp_path / "f.png")
    assert (tmp_path / "f.png").read_bytes()[:4] == b"\x89PNG"


def test_parse_seeds() -> None:
    assert parse_seeds("42-45") == [42, 43, 44, 45]
    assert parse_seeds("1,3") == [1, 3]
    with pytest.raises(ValueError, match="seeds must look like"):
        parse_seeds("a-b")


@pytest.fixture(scope="module")
def trace() -> tuple[list[TraceNode], list[TracePod]]:
    return read_nodes(NODES_CSV), read_pods(PODS_CSV)


@pytest.mark.parametrize("kind", VARIANTS)
def test_variants_keep_size_and_are_reproducible(
    kind: str, trace: tuple[list[TraceNode], list[TracePod]]
) -> None:
    nodes, pods = trace
    variant = make_variant(pods, nodes, kind, 7)
    assert len(variant) == len(pods) and len({p.name for p in variant}) == len(pods)
    assert variant == make_variant(pods, nodes, kind, 7)
    assert variant != make_variant(pods, nodes, kind, 8)


def test_variants_shift_the_mix(trace: tuple[list[TraceNode], list[TracePod]]) -> None:
    nodes, pods = trace

    def share(kind: str, test: str) -> float:
        variant = make_variant(pods, nodes, kind, 7)
        gpu = [p for p in variant if p.num_gpu]
        pick = {
            "sharing": [p for p in gpu if p.is_sharing],
            "multigpu": [p for p in gpu if p.num_gpu > 1],
            "gpuspec": [p for p in gpu if p.gpu_spec],
        }
        return (
            len(pick[test]) / len(gpu)
            if test in pick
            else sum(not p.num_gpu for p in variant) / len(variant)
        )

    assert share("sharing", "sharing") == pytest.approx(0.8, abs=0.01)
    assert share("multigpu", "multigpu") == pytest.approx(0.3, abs=0.01)
    assert share("gpuspec", "gpuspec") == pytest.approx(0.33, abs=0.03)
    assert share("cpu", "cpu") == pytest.approx(2 * 1088 / 8152, abs=0.01)
    models = Counter(m for p in make_variant(pods, nodes, "gpuspec", 7) for m in p.gpu_spec)
    assert set(models) <= {n.model for n in nodes} and models.most_common(1)[0][0] == "G2"
