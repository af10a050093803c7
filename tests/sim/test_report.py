"""The report's tables from the runs logged so far (``--logged-only``): each row is the median
of the seeds replayed, and says how many."""

from __future__ import annotations

import json
from pathlib import Path

from pykai.sim.replay import MAX_ARRIVAL
from pykai.sim.report import main


def _run(trace: str, policy: str, seed: int, at_100: float) -> str:
    """A logged run whose unallocated GPU is ``at_100`` from arrival 100 on."""
    curve = [100.0 - k if k < 100 else at_100 for k in range(MAX_ARRIVAL + 1)]
    run = {
        "trace": trace,
        "policy": policy,
        "seed": seed,
        "unallocated_gpu_pct": curve,
        "fragmentation_pct": [1.0] * (MAX_ARRIVAL + 1),
        "seconds": 2.0,
        "failed_pods": 0,
    }
    return json.dumps(run)


def test_tables_from_the_logged_runs_only(tmp_path: Path) -> None:
    runs = [
        _run("default", "fgd", 42, 5.0),
        _run("default", "fgd", 43, 4.0),
        _run("default", "pykai", 42, 4.2),
        _run("sharing", "fgd", 42, 10.0),
        _run("sharing", "pykai", 42, 9.0),
        _run("multigpu", "fgd", 42, 2.0),  # no pykai run: no row for multigpu
    ]
    (tmp_path / "fgd-runs.jsonl").write_text("\n".join(runs) + "\n")

    main(["--seeds", "42-51", "--out", str(tmp_path), "--logged-only"])

    tables = (tmp_path / "fgd-tables.md").read_text().splitlines()
    assert "Seeds replayed: fgd 2, pykai 1." in tables
    fgd_row = next(line for line in tables if line.startswith("| fgd | pykai replay |"))
    assert fgd_row.split(" | ")[5] == "4.50"  # arrival 100: the median of 5.0 and 4.0
    comparison = tables[
        tables.index("| trace | fgd | pykai | pykai − fgd | seeds won / tied / lost |") :
    ]
    assert comparison[2:] == [
        "| default (1 seeds) | 4.50 | 4.20 | -0.30 | 1 / 0 / 0 |",
        "| sharing (1 seeds) | 10.00 | 9.00 | -1.00 | 1 / 0 / 0 |",
    ]
    assert len((tmp_path / "fgd-runs.jsonl").read_text().splitlines()) == len(runs)  # none run


def test_fgd_and_pykai_are_replayed_first_seed_by_seed_and_logged_runs_are_skipped() -> None:
    from pykai.sim.report import pending

    work = pending([42, 43], ["default", "sharing"], {("default", "fgd", 42)})
    assert work[:7] == [
        ("default", "pykai", 42),
        ("sharing", "fgd", 42),
        ("sharing", "pykai", 42),
        ("default", "fgd", 43),
        ("default", "pykai", 43),
        ("sharing", "fgd", 43),
        ("sharing", "pykai", 43),
    ]
    assert work[7:9] == [("default", "random", 42), ("default", "random", 43)]
    assert {policy for trace, policy, _ in work[7:]} == {
        "random",
        "dotprod",
        "clustering",
        "packing",
        "bestfit",
    }
    assert all(trace == "default" for trace, _, _ in work[7:]) and len(work) == 7 + 10
