"""Regenerate ``bench/results/fgd*``: every policy on the default openb trace beside the FGD
paper's published medians, and FGD against pykai on variants of the trace.

Usage: ``python -m pykai.sim.report [--seeds 42-51] [--jobs N] [--out bench/results]
[--data DIR] [--logged-only]``. Each finished replay is kept in ``fgd-runs.jsonl`` under
``--out``; run again to resume after a stop, or with ``--logged-only`` to write the tables from
the seeds replayed so far (each row says how many).
(``--data``: the repository's ``data/`` folder, found by itself in a source checkout).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import tempfile
from collections.abc import Collection
from pathlib import Path
from typing import Any

import numpy as np

from pykai.sim.fgd import (
    NODES_FILE,
    PODS_FILE,
    PUBLISHED_ALLOCATION,
    PUBLISHED_FRAGMENTATION,
    PUBLISHED_NAMES,
    DataNotFoundError,
    data_file,
    parse_seeds,
    plot,
    published_fragmentation,
    published_medians,
    run_fgd,
)
from pykai.sim.openb import read_nodes, read_pods, write_pods
from pykai.sim.replay import POLICIES, Curve, median
from pykai.sim.variants import VARIANTS, make_variant

ARRIVALS = (80, 90, 95, 100, 110, 120, 130)
FRAG_ARRIVALS = (0, 40, 80, 100)
VARIANT_SEED = 7


def _fmt(value: float | None, digits: int = 2) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def _at(curve: Curve, ks: tuple[int, ...], digits: int = 2) -> list[str]:
    return [_fmt(curve[k], digits) for k in ks]


def _iqr(result: dict[str, Any], k: int) -> str:
    values = [v for r in result["runs"] if (v := r["unallocated_gpu_pct"][k]) is not None]
    low, high = np.percentile(values, [25, 75])
    return f"{low:.2f}–{high:.2f}"


def _seconds(result: dict[str, Any]) -> float:
    return float(np.mean([r["seconds"] for r in result["runs"]]))


def default_table(results: list[dict[str, Any]], data: Path | None = None) -> list[str]:
    """Markdown rows: unallocated GPU % per policy, ours and published (from ``data``)."""
    head = " | ".join(str(k) for k in ARRIVALS)
    counts = ", ".join(f"{r['policy']} {len(r['runs'])}" for r in results)
    lines = [
        f"Seeds replayed: {counts}.",
        "",
        f"| policy | source | {head} | IQR at 100 | Δ at 100 | s / seed |",
        "|---|---|" + "---|" * (len(ARRIVALS) + 3),
    ]
    for result in results:
        policy, ours = result["policy"], result["median_unallocated_gpu_pct"]
        published = published_medians(policy, data) if policy in PUBLISHED_NAMES else None
        delta = "" if published is None else f"{ours[100] - published[100]:+.2f} pp"
        lines.append(
            f"| {policy} | pykai replay | {' | '.join(_at(ours, ARRIVALS))} | {_iqr(result, 100)} "
            f"| {delta} | {_seconds(result):.1f} |"
        )
        if published is not None:
            lines.append(f"| {policy} | published | {' | '.join(_at(published, ARRIVALS))} | | | |")
    return lines


def frag_table(results: list[dict[str, Any]], data: Path | None = None) -> list[str]:
    """Markdown rows: median fragmentation at a few arrivals, ours and published."""
    lines = [
        "| policy | pykai replay | published |",
        "|---|---|---|",
    ]
    for result in results:
        policy = result["policy"]
        ours = median([r["fragmentation_pct"] for r in result["runs"]])
        published = (
            " / ".join(_at(published_fragmentation(policy, data), FRAG_ARRIVALS, 1))
            if policy in PUBLISHED_NAMES
            else "—"
        )
        lines.append(f"| {policy} | {' / '.join(_at(ours, FRAG_ARRIVALS, 1))} | {published} |")
    return lines


def variant_rows(name: str, fgd: dict[str, Any], pykai: dict[str, Any]) -> str:
    """One markdown row comparing FGD and pykai at arrival 100 on one trace."""
    both = {r["seed"] for r in pykai["runs"]} & {r["seed"] for r in fgd["runs"]}
    ours = [r["unallocated_gpu_pct"][100] for r in pykai["runs"] if r["seed"] in both]
    theirs = [r["unallocated_gpu_pct"][100] for r in fgd["runs"] if r["seed"] in both]
    wins = sum(o < t for o, t in zip(ours, theirs, strict=True))
    ties = sum(o == t for o, t in zip(ours, theirs, strict=True))
    f, p = fgd["median_unallocated_gpu_pct"][100], pykai["median_unallocated_gpu_pct"][100]
    return (
        f"| {name} ({len(ours)} seeds) | {_fmt(f)} | {_fmt(p)} "
        f"| {_fmt(None if f is None or p is None else p - f)} "
        f"| {wins} / {ties} / {len(ours) - wins - ties} |"
    )


Job = tuple[str, str, int]  # trace, policy, seed


def _run(job: tuple[Path, Path, str, int]) -> dict[str, Any]:
    nodes_csv, pods_csv, policy, seed = job
    run: dict[str, Any] = run_fgd(nodes_csv, pods_csv, policy, [seed])["runs"][0]
    return run


def pending(seeds: list[int], traces: list[str], done: Collection[Job]) -> list[Job]:
    """The replays still to run, in order: FGD and pykai seed by seed (each seed adds a pair
    on every trace), then the other policies on the default trace; those ``done`` skipped."""
    compared = [(t, p, s) for s in seeds for t in traces for p in ("fgd", "pykai")]
    others = [("default", p, s) for p in POLICIES if p not in ("fgd", "pykai") for s in seeds]
    return [job for job in compared + others if job not in done]


def run_all(
    seeds: list[int],
    nodes_csv: Path,
    pods_csv: Path,
    jobs: int = 1,
    log: Path | None = None,
    *,
    replay: bool = True,
) -> tuple[list[dict[str, Any]], dict[str, dict[str, Any]]]:
    """Every policy on the default trace, and FGD and pykai on each variant (made with seed 7),
    one seed per job in ``jobs`` processes. Returns the default results (in :data:`POLICIES`
    order, shaped as :func:`run_fgd`'s) and, per trace (default first), FGD's and pykai's.
    Each seed's run is appended to ``log`` (JSON lines) as it comes, and runs already there
    are reused, so a stopped report resumes. Without ``replay`` only the logged runs count;
    a trace and policy with none of ``seeds`` logged is left out."""
    nodes, pods = read_nodes(nodes_csv), read_pods(pods_csv)
    done = _logged(log)
    with tempfile.TemporaryDirectory() as folder:
        traces = {"default": pods_csv}
        for kind in VARIANTS:
            traces[kind] = Path(folder) / f"openb_pod_list_{kind}.csv"
            write_pods(make_variant(pods, nodes, kind, VARIANT_SEED), traces[kind])
        work = pending(seeds, list(traces), done) if replay else []
        with multiprocessing.get_context("spawn").Pool(jobs) as pool:
            runs = pool.imap(_run, [(nodes_csv, traces[t], p, s) for t, p, s in work])
            for (trace, policy, seed), run in zip(work, runs, strict=True):
                done[trace, policy, seed] = run
                if log is not None:
                    with log.open("a") as handle:
                        handle.write(json.dumps({"trace": trace, "policy": policy, **run}) + "\n")
                print(f"  {trace} {policy} seed {seed}: {run['seconds']:.1f} s", flush=True)

    def result(trace: str, policy: str) -> dict[str, Any] | None:
        runs = [run for s in seeds if (run := done.get((trace, policy, s)))]
        curves = [r["unallocated_gpu_pct"] for r in runs]
        found = {"policy": policy, "runs": runs, "median_unallocated_gpu_pct": median(curves)}
        return found if runs else None

    default = [r for p in POLICIES if (r := result("default", p))]
    variants = {}
    for trace in traces:
        fgd, pykai = result(trace, "fgd"), result(trace, "pykai")
        if fgd and pykai:
            variants[trace] = {"fgd": fgd, "pykai": pykai}
    return default, variants


def _logged(log: Path | None) -> dict[Job, dict[str, Any]]:
    """Runs of earlier reports, from a JSON-lines log."""
    found: dict[Job, dict[str, Any]] = {}
    if log is None or not log.is_file():
        return found
    for line in log.read_text().splitlines():
        run = json.loads(line)
        found[run.pop("trace"), run.pop("policy"), run["seed"]] = run
    return found


def main(argv: list[str] | None = None) -> None:
    """Run everything and write JSON, Markdown tables and the plot under ``--out``."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seeds", default="42-51")
    parser.add_argument("--out", type=Path, default=Path("bench/results"))
    parser.add_argument(
        "--data", type=Path, default=None, help="the repository's data/ folder (default: found)"
    )
    parser.add_argument("--jobs", type=int, default=1, help="replays run in parallel")
    parser.add_argument(
        "--logged-only",
        action="store_true",
        help="replay nothing: the tables from the runs in fgd-runs.jsonl",
    )
    args = parser.parse_args(argv)
    try:
        seeds = parse_seeds(args.seeds)
        nodes_csv, pods_csv = data_file(NODES_FILE, args.data), data_file(PODS_FILE, args.data)
        for published in (PUBLISHED_ALLOCATION, PUBLISHED_FRAGMENTATION):
            data_file(published, args.data)  # fail now, not after the runs
    except (ValueError, DataNotFoundError) as exc:
        parser.error(str(exc))
    args.out.mkdir(parents=True, exist_ok=True)
    log = args.out / "fgd-runs.jsonl"
    results, variants = run_all(
        seeds, nodes_csv, pods_csv, max(args.jobs, 1), log, replay=not args.logged_only
    )
    (args.out / "fgd-default.json").write_text(json.dumps(results))
    plot(results, args.out / "fgd-default.png", args.data)
    (args.out / "fgd-variants.json").write_text(json.dumps(variants))
    tables = [
        "## Unallocated GPU % by arrival % (default trace)",
        *default_table(results, args.data),
        "",
        "## Fragmentation (% of cluster GPUs, median) at arrival 0 / 40 / 80 / 100",
        *frag_table(results, args.data),
        "",
        "## FGD vs pykai, unallocated GPU % at arrival 100 (median)",
        "| trace | fgd | pykai | pykai − fgd | seeds won / tied / lost |",
        "|---|---|---|---|---|",
        *(variant_rows(name, r["fgd"], r["pykai"]) for name, r in variants.items()),
    ]
    (args.out / "fgd-tables.md").write_text("\n".join(tables) + "\n")
    print("\n".join(tables))


if __name__ == "__main__":
    main()
