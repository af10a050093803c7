"""``pykai bench fgd``: placement policies on the openb trace, per seed and as medians, beside
the FGD paper's published figures."""

from __future__ import annotations

import csv
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from pykai.sim.openb import read_nodes, read_pods
from pykai.sim.packing import MAX_ARRIVAL, POLICIES, median, replay

PUBLISHED_NAMES = {
    "random": "01-Random",
    "dotprod": "02-DotProd",
    "clustering": "03-GpuClustering",
    "packing": "04-GpuPacking",
    "bestfit": "05-BestFit",
    "fgd": "06-FGD",
}


def run_fgd(
    nodes_csv: Path,
    pods_csv: Path,
    policy: str,
    seeds: list[int],
    tune: float = 1.3,
    max_pods: int | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> dict[str, Any]:
    """Replay every seed; the result has per-seed curves (index = arrival %) and their median."""
    if policy not in POLICIES:
        raise ValueError(f"unknown policy {policy!r}; known: {', '.join(sorted(POLICIES))}")
    nodes, pods = read_nodes(nodes_csv), read_pods(pods_csv)
    runs: list[dict[str, Any]] = []
    curves: list[list[float | None]] = []
    for done, seed in enumerate(seeds, start=1):
        run = replay(nodes, pods, policy, seed, tune, max_pods)
        curves.append(run.unallocated_gpu_pct)
        runs.append(
            {
                "seed": seed,
                "unallocated_gpu_pct": run.unallocated_gpu_pct,
                "fragmentation_pct": run.fragmentation_pct,
                "seconds": round(run.seconds, 3),
            }
        )
        if progress is not None:
            progress(done, len(seeds))
    return {
        "policy": policy,
        "runs": runs,
        "median_unallocated_gpu_pct": median(curves),
    }


def published_medians(allocation_csv: Path, policy: str) -> list[float | None]:
    """The paper's median unallocated GPU % per arrival % (100 − allocation ratio)."""
    name = PUBLISHED_NAMES[policy]
    with allocation_csv.open(newline="") as handle:
        rows = [r for r in csv.DictReader(handle) if r["sc_policy"] == name]
    out: list[float | None] = []
    for k in range(MAX_ARRIVAL + 1):
        values = [100 - float(r[str(k)]) for r in rows if r.get(str(k))]
        out.append(round(float(np.median(values)), 3) if values else None)
    return out


def plot(results: list[dict[str, Any]], path: Path) -> None:
    """Median unallocated GPU % against arrival % for each policy, as a PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(7, 4))
    for result in results:
        points = [
            (k, v) for k, v in enumerate(result["median_unallocated_gpu_pct"]) if v is not None
        ]
        axes.plot([k for k, _ in points], [v for _, v in points], label=result["policy"])
    axes.set_xlabel("arrived GPU demand (% of capacity)")
    axes.set_ylabel("unallocated GPU (%)")
    axes.set_xlim(60, MAX_ARRIVAL)
    axes.set_ylim(0, 45)
    axes.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)


def parse_seeds(text: str) -> list[int]:
    """``42-51`` or ``42,43,44``."""
    if "-" in text:
        low, high = text.split("-", 1)
        return list(range(int(low), int(high) + 1))
    return [int(s) for s in text.split(",") if s]
