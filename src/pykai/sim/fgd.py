"""The FGD paper's experiment on the openb trace: every seed of one policy, their median, the
paper's published medians beside them, and a plot.

The trace and the published results live in the repository's ``data/`` folder (see its
README for source and terms); they are not installed with the package. :func:`data_dir` finds
that folder: an explicit path, else ``$PYKAI_DATA``, else the ``data/`` of the source checkout
this module runs from.
"""

from __future__ import annotations

import csv
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from pykai.model.errors import InvalidRequest, PykaiError
from pykai.sim.openb import read_nodes, read_pods
from pykai.sim.replay import MAX_ARRIVAL, POLICIES, Curve, median, replay

DATA_ENV = "PYKAI_DATA"
_SRC = Path(__file__).resolve().parents[2]  # src/ of a checkout, site-packages/ if installed
CHECKOUT_DATA: Path | None = _SRC.parent / "data" if _SRC.name == "src" else None
NODES_FILE = Path("openb", "openb_node_list_gpu_node.csv")
PODS_FILE = Path("openb", "openb_pod_list_default.csv")
PUBLISHED_ALLOCATION = Path("fgd", "analysis_allo_discrete.default.csv")
PUBLISHED_FRAGMENTATION = Path("fgd", "analysis_frag_discrete.default.csv")
PUBLISHED_NAMES = {
    "random": "01-Random",
    "dotprod": "02-DotProd",
    "clustering": "03-GpuClustering",
    "packing": "04-GpuPacking",
    "bestfit": "05-BestFit",
    "fgd": "06-FGD",
}


class DataNotFoundError(PykaiError, FileNotFoundError):
    """The data folder (openb trace, published results) cannot be found."""


def data_dir(explicit: Path | None = None) -> Path:
    """The data folder: ``explicit`` if given, else ``$PYKAI_DATA``, else the ``data/`` folder
    of the source checkout pykai runs from. Raises :class:`DataNotFoundError`, saying how to
    point at one, when the chosen folder is missing (as in an installed copy of pykai)."""
    how = (
        "the openb trace and the FGD paper's results are not installed with pykai: pass the "
        f"data/ folder of a pykai checkout (--data DIR) or set {DATA_ENV}"
    )
    if explicit is not None:
        folder, origin = explicit, "the given data folder"
    elif env := os.environ.get(DATA_ENV):
        folder, origin = Path(env), f"${DATA_ENV}"
    elif CHECKOUT_DATA is not None:
        folder, origin = CHECKOUT_DATA, "the source checkout's data folder"
    else:
        raise DataNotFoundError(f"pykai runs from an installed copy; {how}")
    if not folder.is_dir():
        raise DataNotFoundError(f"{origin} {folder} does not exist; {how}")
    return folder


def data_file(relative: Path, data: Path | None = None) -> Path:
    """A file of the data folder (:func:`data_dir`); a clear error if it is missing."""
    folder = data_dir(data)
    path = folder / relative
    if not path.is_file():
        raise DataNotFoundError(f"{path} does not exist: {folder} is not a pykai data/ folder")
    return path


def run_fgd(
    nodes_csv: Path,
    pods_csv: Path,
    policy: str,
    seeds: list[int],
    tune: float = 1.3,
    max_pods: int | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> dict[str, Any]:
    """Replay every seed with ``policy`` (one of :data:`POLICIES`).

    Returns ``{"policy", "runs": [{"seed", "unallocated_gpu_pct", "fragmentation_pct",
    "seconds"}], "median_unallocated_gpu_pct"}``; curves have 131 entries (arrival 0..130 %),
    None where no event reached that arrival. ``progress(done, total)`` is called per seed."""
    if policy not in POLICIES:
        raise InvalidRequest(f"unknown policy {policy!r}; known: {', '.join(POLICIES)}")
    nodes, pods = read_nodes(nodes_csv), read_pods(pods_csv)
    runs: list[dict[str, Any]] = []
    for done, seed in enumerate(seeds, start=1):
        run = replay(nodes, pods, policy, seed, tune, max_pods)
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
        "median_unallocated_gpu_pct": median([r["unallocated_gpu_pct"] for r in runs]),
    }


def _published(path: Path, policy: str, unallocated: bool) -> Curve:
    if policy not in PUBLISHED_NAMES:
        raise InvalidRequest(
            f"no published figures for {policy!r}; known: {', '.join(PUBLISHED_NAMES)}"
        )
    with path.open(newline="") as handle:
        rows = [r for r in csv.DictReader(handle) if r["sc_policy"] == PUBLISHED_NAMES[policy]]
    out: Curve = []
    for k in range(MAX_ARRIVAL + 1):
        values = [float(v) for r in rows if (v := r.get(str(k)))]
        if unallocated:
            values = [100 - v for v in values]
        out.append(round(float(np.median(values)), 3) if values else None)
    return out


def published_medians(policy: str, data: Path | None = None) -> Curve:
    """The paper's median unallocated GPU % (100 − allocation ratio) over seeds 42-51, per
    arrival % 0..130, for one of the six policies of :data:`PUBLISHED_NAMES`, read from the
    data folder (:func:`data_dir`)."""
    return _published(data_file(PUBLISHED_ALLOCATION, data), policy, unallocated=True)


def published_fragmentation(policy: str, data: Path | None = None) -> Curve:
    """The paper's median fragmentation (% of cluster GPUs) per arrival % 0..130."""
    return _published(data_file(PUBLISHED_FRAGMENTATION, data), policy, unallocated=False)


def plot(
    results: list[dict[str, Any]], path: Path, data: Path | None = None, *, title: str = ""
) -> None:
    """Median unallocated GPU % against arrival % for each result of :func:`run_fgd`, as a PNG
    (the published median, where there is one and the data folder has it, dashed in the same
    colour), under ``title``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(8, 4.5))
    for result in results:
        curve = result["median_unallocated_gpu_pct"]
        (line,) = axes.plot(*_points(curve), label=result["policy"])
        if result["policy"] in PUBLISHED_NAMES:
            try:
                published = published_medians(result["policy"], data)
            except DataNotFoundError:
                continue
            axes.plot(*_points(published), linestyle="--", color=line.get_color(), linewidth=0.8)
    if title:
        axes.set_title(title)
    axes.set_xlabel("arrived GPU demand (% of cluster GPUs)")
    axes.set_ylabel("unallocated GPU (%), median over seeds")
    axes.set_xlim(75, MAX_ARRIVAL)
    axes.set_ylim(0, 30)
    axes.grid(alpha=0.3)
    axes.legend(title="solid: replayed through pykai; dashed: published", fontsize=8)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)


def _points(curve: Curve) -> tuple[list[int], list[float]]:
    pairs = [(k, v) for k, v in enumerate(curve) if v is not None]
    return [k for k, _ in pairs], [v for _, v in pairs]


def parse_seeds(text: str) -> list[int]:
    """Seeds from ``42-51`` (a range) or ``42,43,44`` (a list)."""
    try:
        if "-" in text:
            low, high = text.split("-", 1)
            return list(range(int(low), int(high) + 1))
        return [int(s) for s in text.split(",") if s.strip()]
    except ValueError as exc:
        raise InvalidRequest(f"seeds must look like 42-51 or 42,43; got {text!r}") from exc
