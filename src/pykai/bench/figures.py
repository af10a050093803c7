"""The arithmetic of ``pykai bench kube --shape``: the order rows run in, percentiles, and the
summary of each row's runs with its ratio to the real KAI.

Contract: ``order`` runs every row once per repeat, forwards on odd repeats and backwards on even
ones (so no row always runs first on a machine that warms up or loads up); ``percentile`` is the
nearest-rank percentile; ``summarize`` takes the runs as dicts (``row``, ``ok`` and the numeric
figures, ``FIGURES`` unless told others) and gives, per row, the median, min and max of each
figure over its successful runs, and, for each of the baseline rows that ran (``BASELINES``
unless told others: ``vs_kai``, ``vs_kube_scheduler``, ``vs_warm_ceiling``; ``vs_kueue`` for
--shape kueue), how many times faster than it each row is (a rate divided by the baseline's,
the baseline's time divided by the row's), from the medians."""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Mapping, Sequence

# the rows others are compared with, where they ran
BASELINES = ("kai", "kube-scheduler", "warm-ceiling")
# figure -> True if more is better (a rate), False if less is (a time)
FIGURES = {
    "pods_per_s": True,
    "all_bound_s": False,
    "latency_avg_s": False,
    "latency_p99_s": False,
}


def order(rows: Sequence[str], repeat: int) -> list[tuple[int, str]]:
    """(repeat, row) in running order: forwards, backwards, forwards, …"""
    runs = []
    for number in range(1, repeat + 1):
        sequence = list(rows) if number % 2 else list(reversed(rows))
        runs += [(number, row) for row in sequence]
    return runs


def alternate(
    name: str,
    rows: Sequence[str],
    shape_rows: Sequence[str],
    repeat: int,
    measure: Callable[[str], dict[str, object]],
    progress: Callable[[str], None] = lambda _: None,
) -> list[dict[str, object]]:
    """Each of ``rows`` measured ``repeat`` times, in ``order``, each run numbered; a row the
    shape ``name`` cannot run (not in ``shape_rows``) is a ValueError, before any run."""
    unable = [row for row in rows if row not in shape_rows]
    if unable:
        raise ValueError(
            f"--shape {name} cannot run rows {', '.join(unable)}: it runs {', '.join(shape_rows)}"
        )
    runs = []
    for number, row in order(rows, repeat):
        progress(f"{name}: {row}, run {number} of {repeat}")
        runs.append({"run": number} | measure(row))
    return runs


def percentile(values: Sequence[float], percent: float) -> float:
    """Nearest-rank percentile (the smallest value with ``percent`` % of them at or below)."""
    if not values:
        raise ValueError("no values")
    ranked = sorted(values)
    rank = max(1, math.ceil(percent / 100 * len(ranked)))
    return ranked[rank - 1]


def summarize(
    runs: Sequence[Mapping[str, object]],
    rows: Sequence[str],
    figures: Mapping[str, bool] = FIGURES,
    baselines: Sequence[str] = BASELINES,
) -> dict[str, object]:
    """Per row: runs, failures, and median/min/max of each of ``figures`` (True: a rate);
    ``vs_<baseline>`` per row for each of ``baselines`` that ran."""
    entries: dict[str, dict[str, object]] = {}
    medians: dict[str, dict[str, float]] = {}
    for row in rows:
        mine = [run for run in runs if run["row"] == row]
        good = [run for run in mine if run.get("ok")]
        entry: dict[str, object] = {"runs": len(mine), "failed": len(mine) - len(good)}
        medians[row] = {}
        for figure in figures:
            values = [float(v) for run in good if isinstance(v := run.get(figure), int | float)]
            if values:
                median = statistics.median(values)
                medians[row][figure] = median
                entry[figure] = {
                    "median": round(median, 3),
                    "min": round(min(values), 3),
                    "max": round(max(values), 3),
                }
        entries[row] = entry
    for baseline in baselines:
        if baseline not in medians:
            continue
        for row in rows:
            ratios = {}
            for figure, rate in figures.items():
                value, theirs = medians[row].get(figure), medians[baseline].get(figure)
                if value and theirs:
                    ratios[figure] = round(value / theirs if rate else theirs / value, 2)
            entries[row]["vs_" + baseline.replace("-", "_")] = ratios
    return dict(entries)
