"""The ``pykai`` command line (typer)."""

from __future__ import annotations

import json
import logging
import os
import signal
import socket
import sys
import threading
from pathlib import Path
from typing import Annotated, NoReturn

import typer

from pykai import __version__
from pykai.cli import printers
from pykai.cli.describe import describe as describe_object
from pykai.cli.kinds import KindInfo, UnknownKindError, display_name, resolve
from pykai.cli.local_cluster import app as local_cluster_app
from pykai.cli.manifests import ManifestError, read_manifests
from pykai.embedded.cluster import EmbeddedCluster
from pykai.engine.config import config_from_mapping
from pykai.kube.api import KubeApi
from pykai.kube.leader import LeaderElector
from pykai.kube.runner import KubeRunner
from pykai.model.duration import parse_duration
from pykai.model.errors import ValidationError

DEFAULT_CLUSTER = Path(".pykai/cluster.db")

app = typer.Typer(
    help="pykai: the KAI scheduler in Python. kubectl-like commands over an embedded cluster.",
    no_args_is_help=True,
    add_completion=False,
)
bench_app = typer.Typer(
    help="Benchmarks; they print figures (JSON with -o json).", no_args_is_help=True
)
app.add_typer(bench_app, name="bench")
app.add_typer(local_cluster_app, name="local-cluster")

ClusterOption = Annotated[
    Path | None,
    typer.Option(
        "--cluster", envvar="PYKAI_CLUSTER", help="Cluster file [default: ./.pykai/cluster.db]"
    ),
]
NamespaceOption = Annotated[str, typer.Option("--namespace", "-n", help="Namespace")]


def fail(message: str) -> NoReturn:
    """Print one clear error line (or several, for validation) and exit 1."""
    typer.echo(message if message.startswith("error") else f"error: {message}", err=True)
    raise typer.Exit(1)


def kind_or_fail(kind: str) -> KindInfo:
    """The kind a user typed, or a kubectl-like error."""
    try:
        return resolve(kind)
    except UnknownKindError as exc:
        fail(str(exc))


def open_cluster(path: Path | None) -> EmbeddedCluster:
    """The cluster at ``path`` (or the default place)."""
    return EmbeddedCluster.open(path or DEFAULT_CLUSTER)


@app.command()
def apply(
    filename: Annotated[list[str], typer.Option("--filename", "-f", help="File, directory or -")],
    cluster: ClusterOption = None,
    max_cycles: Annotated[int, typer.Option(help="Scheduling rounds to settle")] = 100,
) -> None:
    """Create or update objects from manifests, then let the cluster settle."""
    try:
        objects = read_manifests(filename)
        with_cluster = open_cluster(cluster)
        outcomes = with_cluster.apply(objects, max_cycles=max_cycles)
    except (ManifestError, ValidationError) as exc:
        fail(str(exc))
    for outcome in outcomes:
        typer.echo(f"{display_name(outcome.kind)}/{outcome.name} {outcome.action}")
    with_cluster.close()


@app.command()
def delete(
    kind: Annotated[str | None, typer.Argument(help="Kind, e.g. pod")] = None,
    name: Annotated[str | None, typer.Argument(help="Name")] = None,
    filename: Annotated[list[str] | None, typer.Option("--filename", "-f")] = None,
    namespace: NamespaceOption = "default",
    cluster: ClusterOption = None,
) -> None:
    """Delete objects named in manifests, or one object by kind and name."""
    try:
        store = open_cluster(cluster)
        if filename:
            targets = [
                (o["kind"], o["metadata"]["name"], (o["metadata"].get("namespace") or namespace))
                for o in read_manifests(filename)
            ]
        elif kind and name:
            targets = [(resolve(kind).kind, name, namespace)]
        else:
            fail("give KIND NAME or -f FILE")
        for target_kind, target_name, target_ns in targets:
            if not store.delete(target_kind, target_name, target_ns):
                fail(
                    f'Error from server (NotFound): {target_kind.lower()} "{target_name}" not found'
                )
            typer.echo(f'{display_name(target_kind)} "{target_name}" deleted')
    except (ManifestError, ValidationError, UnknownKindError) as exc:
        fail(str(exc))


@app.command()
def get(
    kind: Annotated[str, typer.Argument(help="Kind: pods, nodes, queues, podgroups, ...")],
    name: Annotated[str | None, typer.Argument(help="Name")] = None,
    namespace: NamespaceOption = "default",
    all_namespaces: Annotated[bool, typer.Option("--all-namespaces", "-A")] = False,
    output: Annotated[
        str, typer.Option("--output", "-o", help="wide|json|yaml|custom-columns=...")
    ] = "",
    selector: Annotated[str, typer.Option("--selector", "-l", help="key=value[,key=value]")] = "",
    cluster: ClusterOption = None,
) -> None:
    """List objects, kubectl-style."""
    info = kind_or_fail(kind)
    store = open_cluster(cluster)
    scope = None if all_namespaces or not info.namespaced else namespace
    objects = store.list(info.kind, scope)
    if name:
        objects = [o for o in objects if o["metadata"]["name"] == name]
        if not objects:
            fail(f'Error from server (NotFound): {info.plural} "{name}" not found')
    wanted = dict(part.split("=", 1) for part in selector.split(",") if "=" in part)
    objects = [
        o
        for o in objects
        if all((o["metadata"].get("labels") or {}).get(k) == v for k, v in wanted.items())
    ]
    if output == "json":
        typer.echo(printers.as_json(objects, single=bool(name)))
    elif output == "yaml":
        typer.echo(printers.as_yaml(objects, single=bool(name)))
    elif output.startswith("custom-columns="):
        typer.echo(printers.custom_columns(output.split("=", 1)[1], objects))
    elif output in ("", "wide"):
        if not objects:
            where = "" if scope is None else f" in {scope} namespace"
            typer.echo(f"No resources found{where}.", err=True)
            return
        pods = store.list("Pod") if info.kind in ("Node", "Deployment", "ReplicaSet") else []
        typer.echo(
            printers.render_table(
                info.kind,
                objects,
                store.now(),
                wide=output == "wide",
                all_namespaces=all_namespaces and info.namespaced,
                pods=pods,
            )
        )
    else:
        fail(f'unable to match a printer suitable for the output format "{output}"')


@app.command()
def describe(
    kind: Annotated[str, typer.Argument(help="Kind")],
    name: Annotated[str, typer.Argument(help="Name")],
    namespace: NamespaceOption = "default",
    cluster: ClusterOption = None,
) -> None:
    """Describe one object: its state, why it is pending, and its events."""
    info = kind_or_fail(kind)
    store = open_cluster(cluster)
    obj = store.get(info.kind, name, namespace)
    if obj is None:
        fail(f'Error from server (NotFound): {info.plural} "{name}" not found')
    typer.echo(describe_object(store, obj))


@app.command()
def schedule(
    cycles: Annotated[int, typer.Option(help="Rounds to run")] = 1,
    cluster: ClusterOption = None,
) -> None:
    """Run scheduling rounds explicitly."""
    open_cluster(cluster).schedule(cycles)
    typer.echo(f"ran {cycles} round(s)")


@app.command()
def advance(
    duration: Annotated[str, typer.Argument(help="e.g. 61s, 5m, 1h")],
    cluster: ClusterOption = None,
) -> None:
    """Move the virtual clock forward, then settle."""
    try:
        seconds = parse_duration(duration)
    except ValueError as exc:
        fail(str(exc))
    store = open_cluster(cluster)
    store.advance(seconds)
    typer.echo(f"clock advanced by {duration}")


@app.command()
def run(
    kubeconfig: Annotated[
        Path, typer.Option("--kubeconfig", envvar="KUBECONFIG", help="kubeconfig file")
    ],
    fake_kubelet: Annotated[
        bool, typer.Option(help="Mark bound pods Running (local clusters)")
    ] = False,
    period: Annotated[float, typer.Option(help="Seconds between scheduling cycles")] = 1.0,
    leader_elect: Annotated[
        bool, typer.Option(help="Schedule only while holding the Lease")
    ] = False,
    lease_namespace: Annotated[str, typer.Option(help="Namespace of the Lease")] = "default",
    identity: Annotated[str, typer.Option(help="This replica's name [default: host-pid]")] = "",
    scheduler_config: Annotated[
        Path | None, typer.Option(help="YAML: a SchedulingShard or a plain scheduler config")
    ] = None,
) -> None:
    """Schedule pods of a real Kubernetes cluster (foreground; stops cleanly on SIGTERM)."""
    config = None
    if scheduler_config is not None:
        try:
            config = config_from_mapping(
                read_manifests([str(scheduler_config)])[0], str(scheduler_config)
            )
        except (ManifestError, ValidationError, IndexError) as exc:
            fail(str(exc) or f"{scheduler_config} holds no configuration")

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())

    api = KubeApi.from_kubeconfig(kubeconfig)
    elector = None
    if leader_elect:
        name = identity or f"{socket.gethostname()}-{os.getpid()}"
        elector = LeaderElector(api, name, namespace=lease_namespace)
    KubeRunner(api, config, fake_kubelet=fake_kubelet).run(stop, period, elector)


@app.command()
def version() -> None:
    """Print pykai's version."""
    typer.echo(f"pykai {__version__}")


@app.command()
def demo(
    step: Annotated[bool, typer.Option("--step", help="Wait for Enter between chapters")] = False,
) -> None:
    """Replay the public guides' story on a fresh in-memory cluster."""
    from pykai.cli.demo import run_demo

    try:
        run_demo(step=step)
    except (ManifestError, ValidationError, FileNotFoundError) as exc:
        fail(str(exc))


@bench_app.command("engine")
def bench_engine(
    nodes: Annotated[int, typer.Option(help="Nodes of 8 GPUs")] = 5000,
    pods: Annotated[int, typer.Option(help="Pending single-pod jobs")] = 10_000,
    output: Annotated[str, typer.Option("--output", "-o", help="json|table")] = "table",
) -> None:
    """Engine throughput (pods/s) and cycle latency on synthetic clusters."""
    from pykai.bench.engine import run_engine_bench

    figures = run_engine_bench(nodes=nodes, pods=pods)
    if output == "json":
        typer.echo(json.dumps(figures))
    else:
        typer.echo(printers.table(["FIGURE", "VALUE"], [[k, str(v)] for k, v in figures.items()]))


@bench_app.command("fgd")
def bench_fgd(
    nodes: Annotated[Path, typer.Option(help="Node list CSV")] = Path(
        "data/openb/openb_node_list_gpu_node.csv"
    ),
    pods: Annotated[Path, typer.Option(help="Pod list CSV")] = Path(
        "data/openb/openb_pod_list_default.csv"
    ),
    policy: Annotated[str, typer.Option(help="random|bestfit|packing|fgd")] = "fgd",
    seeds: Annotated[str, typer.Option(help="42-51 or 42,43")] = "42",
    tune: Annotated[float, typer.Option(help="Inflate arrivals to tune × capacity")] = 1.3,
    max_pods: Annotated[int | None, typer.Option(help="Stop after this many pods")] = None,
    output: Annotated[str, typer.Option("--output", "-o", help="json|table")] = "table",
    plot_file: Annotated[
        Path | None, typer.Option("--plot", help="PNG of the median curve")
    ] = None,
) -> None:
    """GPU-sharing placement quality on the Alibaba openb trace (the FGD paper's protocol)."""
    from rich.progress import Progress

    from pykai.sim.fgd import parse_seeds, plot, run_fgd

    seed_list = parse_seeds(seeds)
    try:
        with Progress(disable=not sys.stderr.isatty(), transient=True) as bar:
            task = bar.add_task(f"{policy}", total=len(seed_list))
            result = run_fgd(
                nodes,
                pods,
                policy,
                seed_list,
                tune,
                max_pods,
                lambda d, _: bar.update(task, completed=d),
            )
    except (ValueError, OSError) as exc:
        fail(str(exc))
    if plot_file is not None:
        plot([result], plot_file)
    if output == "json":
        typer.echo(json.dumps(result))
        return
    rows = [
        [str(k), str(result["median_unallocated_gpu_pct"][k])]
        for k in (80, 90, 95, 100, 110, 120, 130)
    ]
    typer.echo(printers.table(["ARRIVAL %", "UNALLOCATED GPU % (median)"], rows))


def main() -> None:
    """Console entry point."""
    os.environ.setdefault("COLUMNS", "120")
    app(prog_name="pykai")
    sys.exit(0)
