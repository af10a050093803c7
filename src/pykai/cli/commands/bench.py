"""``pykai bench``: benchmarks that print their figures (JSON with ``-o json``)."""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated

import typer

from pykai.bench import KUBE_ROWS, PEER_ROWS, SHAPE_NAMES
from pykai.cli.errors import fail
from pykai.cli.tables import table
from pykai.model.errors import PykaiError

app = typer.Typer(help="Benchmarks; they print figures (JSON with -o json).", no_args_is_help=True)
OutputOption = Annotated[str, typer.Option("--output", "-o", help="json|table")]


def _print(figures: Mapping[str, object], output: str) -> None:
    if output == "json":
        typer.echo(json.dumps(figures))
    elif output == "table":
        typer.echo(table(["FIGURE", "VALUE"], [[k, str(v)] for k, v in figures.items()]))
    else:
        fail(f'unknown output format "{output}": use json or table')


@app.command("embedded")
def embedded(
    nodes: Annotated[int, typer.Option(help="Nodes of 8 GPUs (1,213: the openb cluster)")] = 1213,
    jobs: Annotated[int, typer.Option(help="One-GPU jobs already running")] = 2000,
    applies: Annotated[int, typer.Option(help="One-pod applies timed (median)", min=1)] = 30,
    output: OutputOption = "table",
) -> None:
    """The embedded cluster's latency for one small change: a one-pod apply, settled."""
    from pykai.bench.embedded import run_embedded_bench

    try:
        figures = run_embedded_bench(nodes=nodes, jobs=jobs, applies=applies)
    except PykaiError as exc:
        fail(str(exc))
    _print(figures, output)


def _check_output(output: str) -> None:
    """Refuse an unknown -o before any work is done (as _print would after it)."""
    if output not in ("json", "table"):
        _print({}, output)


@app.command("engine")
def engine(
    nodes: Annotated[int, typer.Option(help="Nodes of 8 GPUs")] = 5000,
    pods: Annotated[int, typer.Option(help="Pending single-pod jobs")] = 10_000,
    large_nodes: Annotated[int, typer.Option(help="Nodes of the large cycle")] = 4000,
    large_pods: Annotated[int, typer.Option(help="Pods of the large cycle")] = 140_000,
    contended_nodes: Annotated[int, typer.Option(help="Nodes of the contended cycle")] = 1000,
    contended_large_nodes: Annotated[
        int, typer.Option(help="Nodes of the large contended cycle (35 running, 5 pending a node)")
    ] = 4000,
    reclaim_nodes: Annotated[int, typer.Option(help="Nodes of the reclaim-heavy cycle")] = 400,
    repeat: Annotated[int, typer.Option(help="Runs per contended figure (medians)", min=1)] = 3,
    growth: Annotated[
        str, typer.Option(help="Comma-separated node counts: the contended cycle's growth in N")
    ] = "",
    output: OutputOption = "table",
) -> None:
    """Engine throughput (pods/s) and cycle latency on synthetic clusters."""
    _check_output(output)
    try:
        growth_nodes = tuple(int(n) for n in growth.split(",") if n.strip())
    except ValueError:
        fail(f'--growth "{growth}": give node counts separated by commas, such as 250,500,1000')
    try:
        from pykai.bench.engine import run_engine_bench
    except ModuleNotFoundError as exc:
        if exc.name not in ("pykai.bench", "pykai.bench.engine"):
            raise
        fail("the engine benchmark (pykai.bench.engine) is not part of this build yet")
    from pykai.cli.progress import steps

    with steps("bench engine") as step:
        figures = run_engine_bench(
            nodes=nodes,
            pods=pods,
            large_nodes=large_nodes,
            large_pods=large_pods,
            contended_nodes=contended_nodes,
            contended_large_nodes=contended_large_nodes,
            reclaim_nodes=reclaim_nodes,
            repeat=repeat,
            growth_nodes=growth_nodes,
            progress=step,
        )
    _print(figures, output)


@app.command("kube")
def kube(
    nodes: Annotated[
        int | None, typer.Option(help="Fake nodes of 8 GPUs [default: 1000, or the shape's]")
    ] = None,
    pods: Annotated[
        int | None,
        typer.Option(help="Pending pods of 1 GPU [default: 5000, or the shape's measured pods]"),
    ] = None,
    gang: Annotated[int, typer.Option(help="Pods per PodGroup (pykai row)", min=1)] = 1,
    rows: Annotated[
        str,
        typer.Option(
            help="Comma-separated: "
            + ", ".join(KUBE_ROWS)
            + "; with --shape: "
            + ", ".join(PEER_ROWS)
            + " [default: all the shape runs]"
        ),
    ] = "",
    repeat: Annotated[int, typer.Option(help="Runs per row (medians reported)", min=1)] = 1,
    shape: Annotated[
        str,
        typer.Option(
            help="Side by side with the real KAI on a shape: "
            + ", ".join(SHAPE_NAMES)
            + " (rows in alternating order; see bench/results/peers.md)"
        ),
    ] = "",
    timeout: Annotated[
        float, typer.Option(help="With --shape: seconds a step may take before the row fails")
    ] = 600.0,
    scale: Annotated[
        int | None,
        typer.Option(
            help="With --shape kueue: Kueue's baseline workload counts divided by this "
            "(1: all 15,000) [default: 50, 300 Jobs]",
            min=1,
        ),
    ] = None,
    output: OutputOption = "table",
) -> None:
    """End to end on a real local kube-apiserver: pykai vs kube-scheduler vs the apiserver's
    binding ceiling (a fresh control plane per run; needs scripts/peers); with --shape, pykai
    vs the real KAI v0.12.0 (and kube-scheduler where the shape allows) on KAI's scale tests,
    or vs the real Kueue v0.17.0 on Kueue's performance baseline (--shape kueue)."""
    from pykai.cli.progress import steps

    _check_output(output)
    if shape in ("kueue", "kueue-backlog"):
        if pods is not None:
            fail(f"--shape {shape}: --pods does not apply; --scale sizes it")
        _kueue_shape(shape, nodes, scale, rows, repeat, timeout, output)
        return
    if scale is not None:
        fail("--scale applies to --shape kueue and kueue-backlog only")
    if shape:
        _kube_shape(shape, nodes, pods, rows, repeat, timeout, output)
        return
    from pykai.bench.kube import run_kube_bench

    chosen = tuple(r.strip() for r in rows.split(",") if r.strip()) or KUBE_ROWS
    unknown = [r for r in chosen if r not in KUBE_ROWS]
    if unknown:
        known = ", ".join(KUBE_ROWS)
        fail(f"--rows: unknown {', '.join(unknown)}; choose from {known}")
    nodes, pods = nodes or 1000, pods or 5000
    try:
        with steps("bench kube") as step:
            figures = run_kube_bench(nodes, pods, gang, chosen, repeat, step)
    except PykaiError as exc:
        fail(str(exc))
    if output == "json":
        _print(figures, output)
        return
    flat: dict[str, object] = {"nodes": nodes, "pods": pods, "gang": gang}
    for name in ("pods_per_s", "vs_kube_scheduler", "vs_ceiling", "vs_cold_ceiling"):
        values = figures.get(name)
        if isinstance(values, dict):
            flat |= {f"{name} {row}": value for row, value in values.items()}
    _print(flat, output)


def _kube_shape(
    name: str,
    nodes: int | None,
    pods: int | None,
    rows: str,
    repeat: int,
    timeout: float,
    output: str,
) -> None:
    """``bench kube --shape``: run the shape's rows and print their medians and ratios."""
    from pykai.bench.shapes import SHAPES
    from pykai.bench.side_by_side import run_shape_bench
    from pykai.cli.progress import steps

    if name not in SHAPES:
        fail(f"--shape: unknown {name}; choose from {', '.join(SHAPE_NAMES)}")
    chosen_shape = SHAPES[name].sized(nodes, pods)
    chosen = tuple(r.strip() for r in rows.split(",") if r.strip()) or chosen_shape.rows
    try:
        with steps(f"bench kube --shape {name}") as step:
            figures = run_shape_bench(chosen_shape, chosen, repeat, timeout, step)
    except ValueError as exc:
        fail(str(exc))
    if output == "json":
        _print(figures, output)
        return
    summary, every_run = figures["rows"], figures["runs"]
    assert isinstance(summary, dict) and isinstance(every_run, list)
    baselines = [b for b in ("kai", "kube-scheduler", "warm-ceiling") if b in summary]
    lines = []
    for row, entry in summary.items():
        cells = [row, f"{entry['runs'] - entry['failed']}/{entry['runs']}"]
        for figure in ("pods_per_s", "all_bound_s", "latency_avg_s", "latency_p99_s"):
            value = entry.get(figure)
            cells.append(
                f"{value['median']:g} ({value['min']:g}-{value['max']:g})" if value else "-"
            )
        for baseline in baselines:
            ratios = entry.get("vs_" + baseline.replace("-", "_"), {})
            cells.append(str(ratios.get("all_bound_s", "-")))
        runs = [r for r in every_run if r["row"] == row and r.get("ok")]
        cells.append(",".join(str(r["evictions"]) for r in runs) or "-")
        cells.append(",".join(f"{r['cpu_total_s']:g}" for r in runs) or "-")
        lines.append(cells)
    headers = [
        "ROW",
        "OK",
        "PODS/S",
        "ALL BOUND S",
        "LATENCY AVG S",
        "LATENCY P99 S",
        *(f"× {b.upper()}" for b in baselines),
        "EVICTIONS",
        "CPU S",
    ]
    typer.echo(
        f"shape {name}: {chosen_shape.nodes} nodes of 8 GPUs, {chosen_shape.pods} measured pods "
        f"({chosen_shape.jobs} jobs), {chosen_shape.background} pods of queue A before; "
        "medians (min-max)"
    )
    typer.echo(table(headers, lines))
    for run in every_run:
        if not run.get("ok"):
            typer.echo(f"\nfailed: {run['row']} run {run['run']}: {run.get('error')}")
            typer.echo(str(run.get("log_tail", ""))[-1500:])


def _kueue_shape(
    name: str,
    nodes: int | None,
    scale: int | None,
    rows: str,
    repeat: int,
    timeout: float,
    output: str,
) -> None:
    """``bench kube --shape kueue`` (or ``kueue-backlog``: the same Jobs at once, quota for all
    of them): the real Kueue and pykai on Kueue's baseline, medians, pykai's ratio to Kueue and
    each row as a fraction of the shape's ceiling (bench/kueue_ceiling.py)."""
    from pykai.bench.kueue_shape import KUEUE_SHAPE
    from pykai.bench.kueue_side_by_side import RATE, TOTAL, run_kueue_bench
    from pykai.cli.progress import steps

    shape = KUEUE_SHAPE.sized(scale=scale)
    if name == "kueue-backlog":
        shape = shape.backlog()
    shape = shape.sized(nodes)
    chosen = tuple(r.strip() for r in rows.split(",") if r.strip()) or shape.rows
    try:
        with steps("bench kube --shape kueue") as step:
            figures = run_kueue_bench(shape, chosen, repeat, timeout, step)
    except ValueError as exc:
        fail(str(exc))
    if output == "json":
        _print(figures, output)
        return
    summary, every_run = figures["rows"], figures["runs"]
    assert isinstance(summary, dict) and isinstance(every_run, list)
    columns = [RATE, TOTAL]
    for cls in shape.classes:
        columns += [f"admission_{cls.name}_median_s", f"admission_{cls.name}_p99_s"]
    lines = []
    for row, entry in summary.items():
        cells = [row, f"{entry['runs'] - entry['failed']}/{entry['runs']}"]
        for figure in columns:
            value = entry.get(figure)
            cells.append(
                f"{value['median']:g} ({value['min']:g}-{value['max']:g})" if value else "-"
            )
        cells.append(str(entry.get("vs_kueue", {}).get(RATE, "-")))
        cells.append(str(entry.get("of_ceiling", "-")))
        runs = [r for r in every_run if r["row"] == row and r.get("ok")]
        cells.append(",".join(str(r["preempted"]) for r in runs) or "-")
        cells.append(",".join(f"{r['cpu_total_s']:g}" for r in runs) or "-")
        lines.append(cells)
    headers = ["ROW", "OK", "ADMITTED/S", "ALL ADMITTED S"]
    for cls in shape.classes:
        headers += [f"{cls.name.upper()} MEDIAN S", f"{cls.name.upper()} P99 S"]
    headers += ["× KUEUE", "OF CEILING", "PREEMPTED", "CPU S"]
    ceiling = figures["ceiling"]
    assert isinstance(ceiling, dict)
    lines.append(
        ["ceiling", "-", str(ceiling[RATE] or "all at once"), f"{ceiling[TOTAL]:g}"]
        + [f"{ceiling[figure]:g}" for figure in columns[2:]]
        + ["-", "1" if ceiling[RATE] else "-", "-", "-"]
    )
    typer.echo(
        f"shape {shape.name}: {shape.cluster_queues} ClusterQueues of {shape.nominal_cpu} CPUs "
        f"in {shape.cohorts} cohorts, "
        f"{shape.workloads} Jobs (Kueue's baseline / {shape.scale}: "
        + ", ".join(f"{shape.per_queue(c)} {c.name}" for c in shape.classes)
        + f" per ClusterQueue{', created at once' if shape.at_once else ''}), "
        f"{shape.nodes} nodes of 96 CPUs; medians (min-max); the ceiling: "
        "bench/kueue_ceiling.py"
    )
    typer.echo(table(headers, lines))
    for run in every_run:
        if not run.get("ok"):
            typer.echo(f"\nfailed: {run['row']} run {run['run']}: {run.get('error')}")
            typer.echo(str(run.get("log_tail", ""))[-1500:])


@app.command("fgd")
def fgd(
    nodes: Annotated[
        Path | None, typer.Option(help="Node list CSV [default: DATA/openb/…gpu_node.csv]")
    ] = None,
    pods: Annotated[
        Path | None, typer.Option(help="Pod list CSV [default: DATA/openb/…default.csv]")
    ] = None,
    data: Annotated[
        Path | None,
        typer.Option(
            help="The repository's data/ folder (default: $PYKAI_DATA, else the source "
            "checkout's); used for the default trace and the published curve of --plot"
        ),
    ] = None,
    policy: Annotated[
        str,
        typer.Option(
            help="random|dotprod|clustering|packing|bestfit|fgd|pykai, or several with commas "
            "(one column and one curve each)"
        ),
    ] = "fgd",
    seeds: Annotated[str, typer.Option(help="42-51 or 42,43")] = "42",
    tune: Annotated[float, typer.Option(help="Inflate arrivals to tune × capacity")] = 1.3,
    max_pods: Annotated[int | None, typer.Option(help="Stop after this many pods")] = None,
    output: OutputOption = "table",
    plot_file: Annotated[
        Path | None, typer.Option("--plot", help="PNG of the median curves, in one titled plot")
    ] = None,
) -> None:
    """GPU-sharing placement quality on the Alibaba openb trace (the FGD paper's protocol).
    With several policies, -o json prints a list of results."""
    from pykai.cli.progress import counted
    from pykai.sim.fgd import NODES_FILE, PODS_FILE, data_file, parse_seeds, plot, run_fgd
    from pykai.sim.replay import POLICIES

    if plot_file is not None and importlib.util.find_spec("matplotlib") is None:
        fail("--plot needs matplotlib, not installed with pykai: pip install 'pykai[plot]'")
    _check_output(output)
    policies = [p.strip() for p in policy.split(",") if p.strip()]
    unknown = [p for p in policies if p not in POLICIES]
    if unknown or not policies:
        fail(
            f"--policy: unknown {', '.join(unknown) or '(none)'}; choose from {', '.join(POLICIES)}"
        )
    if plot_file is not None and not plot_file.parent.is_dir():
        fail(f"--plot {plot_file}: the folder {plot_file.parent} does not exist")
    try:
        seed_list = parse_seeds(seeds)
        nodes = nodes or data_file(NODES_FILE, data)
        pods = pods or data_file(PODS_FILE, data)
        results = []
        with counted("replaying", len(policies) * len(seed_list)) as count:
            for before, name in enumerate(policies):

                def seeded(done: int, _: int, name: str = name, before: int = before) -> None:
                    count(before * len(seed_list) + done, name)

                results.append(run_fgd(nodes, pods, name, seed_list, tune, max_pods, seeded))
    except (PykaiError, OSError) as exc:
        fail(str(exc))
    if plot_file is not None:
        title = f"openb trace, tune {tune:g}, seeds {seeds}: {', '.join(policies)}"
        plot(results, plot_file, data, title=title)
    if output == "json":
        typer.echo(json.dumps(results[0] if len(results) == 1 else results))
        return
    arrivals = (80, 90, 95, 100, 110, 120, 130)
    rows = [[str(k), *(str(r["median_unallocated_gpu_pct"][k]) for r in results)] for k in arrivals]
    headers = [f"UNALLOCATED GPU % (median, {name})" for name in policies]
    typer.echo(table(["ARRIVAL %", *headers], rows))


@app.command("dashboard")
def dashboard(
    nodes: Annotated[int, typer.Option(help="Nodes of 8 GPUs", min=1)] = 1000,
    pods: Annotated[
        int, typer.Option(help="Pods: 4 in 5 running, the rest pending", min=1)
    ] = 10_000,
    runs: Annotated[int, typer.Option(help="Page models built (medians reported)", min=1)] = 5,
    output: OutputOption = "table",
) -> None:
    """The dashboard at scale: its page model built and encoded (wall and CPU time, JSON
    size), and each page drawn by headless Chromium where it is installed."""
    from pykai.bench.dashboard import run_dashboard_bench

    _check_output(output)
    _print(run_dashboard_bench(nodes, pods, runs), output)


@app.command("cli")
def cli(
    pods: Annotated[
        int, typer.Option(help="Pods in the cluster file get and describe read", min=1)
    ] = 5000,
    runs: Annotated[int, typer.Option(help="Runs per command (medians reported)", min=1)] = 10,
    large_nodes: Annotated[
        int, typer.Option(help="Nodes of the large cluster explain also runs on", min=1)
    ] = 1000,
    large_pods: Annotated[
        int, typer.Option(help="Pods of the large cluster (0: none)", min=0)
    ] = 10000,
    large_runs: Annotated[
        int, typer.Option(help="Runs per command on the large cluster", min=1)
    ] = 3,
    output: OutputOption = "table",
) -> None:
    """Latency of pykai commands, each in a new process (version, --help, get pods and
    podgroups, describe pod and queue, explain), against `python -c pass` as the floor."""
    from pykai.bench.cli import run_cli_bench
    from pykai.cli.progress import steps

    _check_output(output)
    with steps("bench cli") as step:
        figures = run_cli_bench(
            pods,
            runs,
            step,
            large_nodes=large_nodes,
            large_pods=large_pods,
            large_runs=large_runs,
        )
    _print(figures, output)
