"""The arithmetic of ``pykai bench kube --shape``: alternating row order, nearest-rank p99,
medians with their ranges, ratios to the real KAI, failed runs kept out of the figures, CPU
seconds read from /proc/PID/stat, and writes read from the apiserver's counters."""

from __future__ import annotations

import os
from collections import Counter
from typing import cast

import pytest

from pykai.bench.cpu import TICKS, cpu_seconds, parse_stat
from pykai.bench.figures import order, percentile, summarize
from pykai.bench.writes import parse
from pykai.kube.api import KubeApi


def test_rows_alternate_forwards_and_backwards() -> None:
    assert order(["kai", "pykai", "kube-scheduler"], 3) == [
        (1, "kai"), (1, "pykai"), (1, "kube-scheduler"),
        (2, "kube-scheduler"), (2, "pykai"), (2, "kai"),
        (3, "kai"), (3, "pykai"), (3, "kube-scheduler"),
    ]  # fmt: skip
    assert order(["kai"], 2) == [(1, "kai"), (2, "kai")]


def test_p99_is_the_nearest_rank() -> None:
    values = [float(v) for v in range(1, 201)]  # 1..200
    assert percentile(values, 99) == 198.0
    assert percentile(values, 50) == 100.0
    assert percentile([5.0, 1.0, 3.0], 99) == 5.0
    assert percentile([2.0], 99) == 2.0
    with pytest.raises(ValueError):
        percentile([], 99)


def run(row: str, seconds: float, ok: bool = True) -> dict[str, object]:
    return {
        "row": row,
        "ok": ok,
        "pods_per_s": 100 / seconds,
        "all_bound_s": seconds,
        "latency_avg_s": seconds / 2,
        "latency_p99_s": seconds,
    }


def test_medians_ranges_and_ratios_to_kai() -> None:
    runs = [run("kai", 10), run("kai", 30), run("kai", 20), run("pykai", 2), run("pykai", 4)]
    runs += [run("pykai", 5), run("pykai", 1, ok=False)]  # a failed run counts as failed only
    summary = summarize(runs, ["kai", "pykai"])
    kai, pykai = summary["kai"], summary["pykai"]
    assert isinstance(kai, dict) and isinstance(pykai, dict)
    assert kai["all_bound_s"] == {"median": 20.0, "min": 10.0, "max": 30.0}
    assert pykai["runs"] == 4 and pykai["failed"] == 1
    assert pykai["all_bound_s"] == {"median": 4.0, "min": 2.0, "max": 5.0}
    assert pykai["vs_kai"]["all_bound_s"] == 5.0  # times: KAI's over the row's
    assert pykai["vs_kai"]["pods_per_s"] == 5.0  # rates: the row's over KAI's
    assert kai["vs_kai"] == dict.fromkeys(kai["vs_kai"], 1.0)


def test_a_row_that_always_failed_has_no_figures_and_no_ratio() -> None:
    summary = summarize([run("kai", 10), run("pykai", 1, ok=False)], ["kai", "pykai"])
    assert summary["pykai"] == {"runs": 1, "failed": 1, "vs_kai": {}}


def test_without_a_kai_row_there_are_no_ratios() -> None:
    summary = summarize([run("pykai", 1)], ["pykai"])
    pykai = summary["pykai"]
    assert isinstance(pykai, dict) and "vs_kai" not in pykai


def test_cpu_seconds_come_from_proc_stat() -> None:
    stat = f"42 (odd) name)) S 1 2 3 4 5 6 7 8 9 10 {3 * TICKS} {TICKS} 0 0"
    assert parse_stat(stat) == 4.0
    before = cpu_seconds(os.getpid())
    assert before is not None
    sum(range(3_000_000))
    after = cpu_seconds(os.getpid())
    assert after is not None and after >= before
    assert cpu_seconds(2**22 + 12345) is None  # no such process


def test_writes_are_counted_from_the_apiservers_metrics_without_reads() -> None:
    metric = "apiserver_request_total"
    text = "\n".join(
        [
            f"# HELP {metric} Counter of apiserver requests",
            f'{metric}{{code="201",resource="pods",subresource="binding",verb="POST"}} 7',
            f'{metric}{{code="409",resource="pods",subresource="binding",verb="POST"}} 1',
            f'{metric}{{code="200",resource="podgroups",subresource="status",verb="PATCH"}} 3',
            f'{metric}{{code="201",resource="pods",verb="POST"}} 2',
            f'{metric}{{code="200",resource="pods",verb="LIST"}} 50',
            f'{metric}{{code="200",resource="pods",verb="WATCH"}} 4',
            f'{metric}{{code="200",resource="nodes",verb="GET"}} 9',
            'apiserver_request_duration_seconds_count{resource="pods",verb="POST"} 99',
        ]
    )
    assert parse(text) == {"POST pods/binding": 8, "PATCH podgroups/status": 3, "POST pods": 2}


def test_settled_writes_are_counted_once_they_stop_growing(monkeypatch: pytest.MonkeyPatch) -> None:
    """A scheduler's background writes after its last bind: counted until none came for
    ``quiet`` seconds."""
    from pykai.bench import writes

    answers = iter([1, 2, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3])
    counts: list[int] = []

    def served(api: object) -> Counter[str]:
        counts.append(next(answers))
        return Counter({"PATCH podgroups/status": counts[-1]})

    monkeypatch.setattr(writes, "served", served)
    monkeypatch.setattr(writes.time, "sleep", lambda seconds: None)
    clock = iter(range(1000))
    monkeypatch.setattr(writes.time, "monotonic", lambda: float(next(clock)))
    total = writes.settled(cast(KubeApi, None), quiet=2.0, limit=100.0)
    assert total == Counter({"PATCH podgroups/status": 3})
    assert 3 < len(counts) < 12  # it went on after the last change, and stopped
