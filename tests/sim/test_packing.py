"""The openb replay: trace reading, the fragmentation measure, every policy's placements, and
the metrics, on small hand-made traces."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest

from pykai.sim.fgd import parse_seeds, published_medians, run_fgd
from pykai.sim.openb import TraceError, TraceNode, TracePod, read_nodes, read_pods
from pykai.sim.packing import MILLI, POLICIES, Context, GpuCluster, TypicalPods, arrivals, state_key

DATA = Path(__file__).resolve().parents[2] / "data"


def write(tmp: Path, name: str, text: str) -> Path:
    path = tmp / name
    path.write_text(text)
    return path


def test_reading_accepts_the_five_column_variant_and_names_bad_cells(tmp_path: Path) -> None:
    pods = read_pods(
        write(tmp_path, "p.csv", "name,cpu_milli,memory_mib,num_gpu,gpu_milli\na,1000,10,1,500\n")
    )
    assert pods == [TracePod("a", 1000, 10, 1, 500)]
    with pytest.raises(TraceError, match=r"p2.csv:3: column 'gpu_milli' must be a number"):
        read_pods(
            write(
                tmp_path,
                "p2.csv",
                "name,cpu_milli,memory_mib,num_gpu,gpu_milli\na,1,1,0,0\nb,1,1,1,half\n",
            )
        )
    nodes = read_nodes(
        write(tmp_path, "n.csv", "sn,cpu_milli,memory_mib,gpu,model\nn0,8000,100,2,T4\n")
    )
    assert nodes == [TraceNode("n0", 8000, 100, 2, "T4")]


def test_fragmentation_measure_on_hand_made_nodes() -> None:
    # typical shapes: half the pods want 600 milli of one GPU, half are CPU-only
    pods = [TracePod(f"s{i}", 1000, 1, 1, 600) for i in range(5)] + [
        TracePod(f"c{i}", 1000, 1, 0, 0) for i in range(5)
    ]
    typical = TypicalPods.of(pods)
    cpu = np.array([8000, 8000, 500])
    gpu = np.array([[1000, 1000], [300, 1000], [1000, 1000]])
    frag = typical.fragmentation(cpu, gpu)
    # node 0: share fits (no GPU below 600) -> 0; CPU shape counts all 2000 -> 0.5*0 + 0.5*2000
    # node 1: share fits, the 300-GPU is a fragment -> 0.5*300 + 0.5*1300
    # node 2: CPU lacking for both shapes -> all 2000 for each
    assert frag.tolist() == [1000.0, 800.0, 2000.0]


@pytest.mark.parametrize("policy", sorted(POLICIES))
def test_policies_place_only_where_pods_fit(policy: str) -> None:
    nodes = [TraceNode(f"n{i}", 16000, 64000, g, "T4") for i, g in enumerate([0, 1, 2, 4, 8])]
    rng = random.Random(1)
    pods = [
        TracePod(f"p{i}", rng.choice([500, 2000, 6000]), 1000, n, m)
        for i, (n, m) in enumerate(
            rng.choice([(0, 0), (1, 300), (1, 700), (1, 1000), (2, 1000)]) for _ in range(80)
        )
    ]
    cluster = GpuCluster.of(nodes)
    typical = TypicalPods.of(pods)
    context = Context(
        cluster,
        typical,
        typical.fragmentation(cluster.cpu, cluster.gpu),
        random.Random(7),
        np.array([state_key(cluster, i) for i in range(len(nodes))], dtype=np.int64),
    )
    for pod in pods:
        rows = cluster.feasible(pod)
        if not len(rows):
            continue
        row, gpus = POLICIES[policy](context, pod, rows)
        assert row in rows
        assert len(gpus) == pod.num_gpu and len(set(gpus)) == len(gpus)
        if pod.num_gpu and pod.gpu_milli == MILLI:
            assert all(cluster.gpu[row, g] == MILLI for g in gpus)  # whole GPUs are fully free
        cluster.place(row, gpus, pod)
        context.refresh(row)
        assert cluster.cpu.min() >= 0 and cluster.memory.min() >= 0
        assert ((cluster.gpu >= 0) | (cluster.gpu == -1)).all()  # no GPU over-allocated
        assert np.allclose(context.frag, typical.fragmentation(cluster.cpu, cluster.gpu))


def test_arrivals_are_reproducible_and_inflated_to_tune() -> None:
    pods = [TracePod(f"p{i}", 100, 1, 1, 500) for i in range(20)]
    first, again = arrivals(pods, 42, 1.3, 10 * MILLI), arrivals(pods, 42, 1.3, 10 * MILLI)
    assert [p.name for p in first] == [p.name for p in again]
    assert sum(p.gpu_request_milli for p in first) <= 1.3 * 10 * MILLI
    assert sum(p.gpu_request_milli for p in first) > 1.3 * 10 * MILLI - 500


def test_small_replay_tracks_arrival_while_everything_fits() -> None:
    result = run_fgd(
        DATA / "openb/openb_node_list_gpu_node.csv",
        DATA / "openb/openb_pod_list_default.csv",
        "bestfit",
        [42],
        max_pods=1000,
    )
    curve = result["runs"][0]["unallocated_gpu_pct"]
    seen = [k for k, v in enumerate(curve) if v is not None]
    assert seen and max(seen) >= 10
    for k in seen[1:]:  # nothing fails this early: unallocated ≈ 100 − arrival
        assert abs(curve[k] - (100 - k)) < 1.0, (k, curve[k])


def test_published_figures_and_seed_parsing() -> None:
    fgd = published_medians(DATA / "fgd/analysis_allo_discrete.default.csv", "fgd")
    assert fgd[100] == pytest.approx(4.77, abs=0.05)  # benchmarks.md §A.2
    assert parse_seeds("42-44") == [42, 43, 44] and parse_seeds("7,9") == [7, 9]


def test_cli_prints_the_documented_json() -> None:
    import json

    from typer.testing import CliRunner

    from pykai.cli.app import app

    result = CliRunner().invoke(
        app,
        [
            "bench",
            "fgd",
            "--policy",
            "random",
            "--seeds",
            "42,43",
            "--max-pods",
            "300",
            "-o",
            "json",
            "--nodes",
            str(DATA / "openb/openb_node_list_gpu_node.csv"),
            "--pods",
            str(DATA / "openb/openb_pod_list_default.csv"),
        ],
    )
    assert result.exit_code == 0, result.output
    body = json.loads(result.stdout)
    assert body["policy"] == "random" and [r["seed"] for r in body["runs"]] == [42, 43]
    assert (
        len(body["median_unallocated_gpu_pct"]) == 131
        and len(body["runs"][0]["fragmentation_pct"]) == 131
    )
    bad = CliRunner().invoke(app, ["bench", "fgd", "--policy", "magic"])
    assert bad.exit_code == 1 and "unknown policy 'magic'" in bad.stderr
