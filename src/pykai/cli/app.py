"""The ``pykai`` command line: kubectl-like commands over the embedded cluster."""

from __future__ import annotations

import os
import signal
import socket
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Annotated

import typer

from pykai import __version__
from pykai.cli.bench import app as bench_app
from pykai.cli.columns import Context
from pykai.cli.describe import describe as describe_object
from pykai.cli.errors import fail, not_found, refused, reported
from pykai.cli.kinds import KindInfo, display_name, info_for, resolve_target
from pykai.cli.local_cluster import app as local_cluster_app
from pykai.cli.logs import LogFormat, LogLevel, configure_logging
from pykai.cli.manifests import ManifestError, read_manifests
from pykai.cli.printers import render
from pykai.cli.selectors import select
from pykai.embedded.cluster import EmbeddedCluster
from pykai.embedded.store import explain
from pykai.engine.config import config_from_documents
from pykai.model.duration import parse_duration

DEFAULT_CLUSTER = Path(".pykai/cluster.db")


def _serving(log_level: LogLevel, log_format: LogFormat) -> threading.Event:
    """Logging and signals for a long-running command (run, webhook): the event is set by
    SIGTERM or SIGINT."""
    configure_logging(log_level, log_format)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    return stop


app = typer.Typer(
    help="pykai: the KAI scheduler in Python. kubectl-like commands over an embedded cluster.",
    no_args_is_help=True,
    add_completion=False,
)
app.add_typer(bench_app, name="bench")
app.add_typer(local_cluster_app, name="local-cluster")

_CLUSTER_HELP = "Cluster file (default ./.pykai/cluster.db)"
ClusterOption = Annotated[
    Path | None, typer.Option("--cluster", help=_CLUSTER_HELP, show_default=False)
]
NamespaceOption = Annotated[str, typer.Option("--namespace", "-n", help="Namespace")]
KindArgument = Annotated[str, typer.Argument(help="Kind (pods, po, queues, pg, ...) or KIND/NAME")]
NameArgument = Annotated[str | None, typer.Argument(help="Name", show_default=False)]
FilenameOption = Annotated[
    list[str], typer.Option("--filename", "-f", help="File, directory or - (stdin)")
]


@app.callback()
def root(
    ctx: typer.Context,
    cluster: Annotated[
        Path | None,
        typer.Option("--cluster", envvar="PYKAI_CLUSTER", help=_CLUSTER_HELP, show_default=False),
    ] = None,
) -> None:
    """Keep the cluster path given before the command (or in PYKAI_CLUSTER) for it."""
    ctx.obj = cluster


@contextmanager
def connected(
    ctx: typer.Context, path: Path | None, *, readonly: bool = False
) -> Iterator[EmbeddedCluster]:
    """The cluster named after the command, else before it or in PYKAI_CLUSTER, else the
    default; closed afterwards, with errors reported as one line each. ``readonly`` opens an
    existing file for reading only, and all reads see one moment of it."""
    target = path or ctx.obj or DEFAULT_CLUSTER
    with reported():
        try:
            cluster = EmbeddedCluster.open(target, readonly=readonly)
            try:
                with cluster.store.snapshot() if readonly else nullcontext():
                    yield cluster
            finally:
                cluster.close()
        except sqlite3.Error as exc:
            raise explain(target, exc) from None


@app.command()
def apply(
    ctx: typer.Context,
    filename: FilenameOption,
    max_cycles: Annotated[int, typer.Option(help="Scheduling rounds to settle", min=1)] = 100,
    cluster: ClusterOption = None,
) -> None:
    """Create or update objects from manifests, then let the cluster settle."""
    with reported():
        objects = read_manifests(filename)
    if not objects:
        fail(f"no objects passed to apply: {', '.join(filename)} holds no object")
    versions = {str(o.get("kind")): str(o.get("apiVersion", "")) for o in objects}
    with connected(ctx, cluster) as store:
        outcomes = store.apply(objects, max_cycles=max_cycles)
    for outcome in outcomes:
        name = display_name(outcome.kind, versions.get(outcome.kind, ""))
        typer.echo(f"{name}/{outcome.name} {outcome.action}")


def _manifest_targets(filename: list[str], namespace: str) -> list[tuple[KindInfo, str, str]]:
    """(kind, name, namespace) of each object in the manifests."""
    targets = []
    for obj in read_manifests(filename):
        meta = obj.get("metadata") or {}
        if not obj.get("kind") or not meta.get("name"):
            raise ManifestError("every object to delete needs a kind and a metadata.name")
        info = info_for(str(obj["kind"]), str(obj.get("apiVersion", "")))
        targets.append((info, str(meta["name"]), str(meta.get("namespace") or namespace)))
    return targets


@app.command()
def delete(
    ctx: typer.Context,
    kind: Annotated[str | None, typer.Argument(help="Kind or KIND/NAME")] = None,
    name: NameArgument = None,
    filename: Annotated[
        list[str] | None, typer.Option("--filename", "-f", help="File, directory or -")
    ] = None,
    namespace: NamespaceOption = "default",
    cluster: ClusterOption = None,
) -> None:
    """Delete the objects named in manifests, or one object by kind and name."""
    with reported():
        if filename:
            targets = _manifest_targets(filename, namespace)
        elif kind:
            info, target = resolve_target(kind, name)
            if target is None:
                fail("resource(s) were provided, but no name was specified")
            targets = [(info, target, namespace)]
        else:
            fail("give KIND NAME or -f FILE")
    missing = []
    with connected(ctx, cluster) as store:
        for info, target, target_namespace in targets:
            if store.delete(info.kind, target, target_namespace):
                typer.echo(f'{info.display} "{target}" deleted')
            else:
                missing.append(not_found(info.resource, target))
    if missing:
        fail("\n".join(missing))


@app.command()
def get(
    ctx: typer.Context,
    kind: KindArgument,
    name: NameArgument = None,
    namespace: NamespaceOption = "default",
    all_namespaces: Annotated[
        bool, typer.Option("--all-namespaces", "-A", help="Every namespace")
    ] = False,
    output: Annotated[
        str,
        typer.Option("--output", "-o", help="wide|json|yaml|name|custom-columns=HEADER:PATH,..."),
    ] = "",
    selector: Annotated[
        str, typer.Option("--selector", "-l", help="Labels: key=value, key!=value, key, ...")
    ] = "",
    no_headers: Annotated[bool, typer.Option("--no-headers", help="Omit table headers")] = False,
    cluster: ClusterOption = None,
) -> None:
    """List objects (or show one), kubectl-style."""
    with reported():
        info, name = resolve_target(kind, name)
    if name is not None and all_namespaces:
        fail("a resource cannot be retrieved by name across all namespaces")
    if name is not None and selector:
        fail("name cannot be provided when a selector is specified")
    scope = None if all_namespaces or not info.namespaced else namespace
    with connected(ctx, cluster, readonly=True) as store:
        if name is None:
            objects = select(store.list(info.kind, scope), selector)
        else:
            found = store.get(info.kind, name, namespace)
            if found is None:
                fail(not_found(info.resource, name))
            objects = [found]
        if not objects and output in ("", "wide"):
            where = f" in {scope} namespace" if scope else ""
            typer.echo(f"No resources found{where}.", err=True)
            return
        text = render(
            objects,
            output,
            Context(store),
            kind=info.kind,
            single=name is not None,
            all_namespaces=all_namespaces and info.namespaced,
            no_headers=no_headers,
        )
    if text:
        typer.echo(text)


@app.command()
def describe(
    ctx: typer.Context,
    kind: KindArgument,
    name: NameArgument = None,
    namespace: NamespaceOption = "default",
    cluster: ClusterOption = None,
) -> None:
    """Describe objects: state, why they are pending, related objects and events.

    Without a name, every object of the kind; a name that matches none is taken as a prefix.
    """
    with reported():
        info, name = resolve_target(kind, name)
    with connected(ctx, cluster, readonly=True) as store:
        found = store.get(info.kind, name, namespace) if name is not None else None
        objects = [found] if found else store.list(info.kind, namespace)
        if name is not None and found is None:
            objects = [o for o in objects if o["metadata"]["name"].startswith(name)]
            if not objects:
                fail(not_found(info.resource, name))
        typer.echo("\n\n\n".join(describe_object(store, obj) for obj in objects))


@app.command()
def schedule(
    ctx: typer.Context,
    cycles: Annotated[int, typer.Option(help="Rounds to run", min=1)] = 1,
    cluster: ClusterOption = None,
) -> None:
    """Run scheduling rounds explicitly (each: controllers, one scheduling cycle, binds)."""
    with connected(ctx, cluster) as store:
        store.schedule(cycles)
    typer.echo(f"ran {cycles} round(s)")


@app.command()
def advance(
    ctx: typer.Context,
    duration: Annotated[str, typer.Argument(help="e.g. 61s, 5m, 1h30m")],
    cluster: ClusterOption = None,
) -> None:
    """Move the virtual clock forward, then let the cluster settle."""
    with reported():
        seconds = parse_duration(duration)
    with connected(ctx, cluster) as store:
        store.advance(seconds)
    typer.echo(f"clock advanced by {duration}")


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

    with reported():
        run_demo(step=step).close()


@app.command()
def crds(
    output_dir: Annotated[
        Path | None,
        typer.Option("--output-dir", help="Write one file per CRD here (default: print them)"),
    ] = None,
) -> None:
    """The CustomResourceDefinitions of KAI's kinds as pykai defines them (schema-compatible
    with KAI's): print them as one YAML stream, or write deploy/helm/pykai/crds/'s files."""
    from pykai.model.crds import CUSTOM_RESOURCES, render

    if output_dir is None:
        typer.echo("---\n".join(render(r) for r in CUSTOM_RESOURCES), nl=False)
        return
    with reported():
        output_dir.mkdir(parents=True, exist_ok=True)
        for resource in CUSTOM_RESOURCES:
            (output_dir / resource.file_name).write_text(render(resource))
            typer.echo(str(output_dir / resource.file_name))


KubeconfigOption = Annotated[
    Path | None,
    typer.Option(
        "--kubeconfig",
        help="kubeconfig file (default: the files KUBECONFIG lists, merged; else the pod's "
        "service account; else ~/.kube/config)",
    ),
]
ContextOption = Annotated[
    str | None, typer.Option("--context", help="kubeconfig context (default: current-context)")
]
LogLevelOption = Annotated[LogLevel, typer.Option(help="Least severe log lines shown")]
LogFormatOption = Annotated[
    LogFormat, typer.Option(help="text, or json: one JSON object per line (ts, level, logger, msg)")
]


def _host_port(option: str, text: str) -> tuple[str, int]:
    """``HOST:PORT`` -> (host, port); a ManifestError naming ``option`` otherwise."""
    host, _, port = text.rpartition(":")
    if not host or not port.isdigit() or int(port) > 65535:
        raise ManifestError(
            f"{option} {text!r}: write it as HOST:PORT (0.0.0.0:PORT for every interface)"
        )
    return host, int(port)


@app.command()
def run(
    kubeconfig: KubeconfigOption = None,
    context: ContextOption = None,
    components: Annotated[
        str,
        typer.Option(
            help="Comma-separated: scheduler, binder, podgrouper, queuecontroller, "
            "podgroupcontroller, and for local clusters kubelet, kuberay "
            "(default: the first five)"
        ),
    ] = "scheduler,binder,podgrouper,queuecontroller,podgroupcontroller",
    fake_kubelet: Annotated[
        bool, typer.Option(help="Also run the kubelet stand-in (bound pods start Running)")
    ] = False,
    period: Annotated[float, typer.Option(help="Seconds between cycles")] = 1.0,
    leader_elect: Annotated[bool, typer.Option(help="Act only while holding the Lease")] = False,
    lease_namespace: Annotated[str, typer.Option(help="Namespace of the Lease")] = "default",
    lease_name: Annotated[
        str, typer.Option(help="Name of the Lease (default: pykai-<components>)")
    ] = "",
    lease_duration: Annotated[
        float, typer.Option(help="Seconds without renewal before another replica takes over")
    ] = 15.0,
    renew_deadline: Annotated[
        float,
        typer.Option(help="Seconds without renewal before the leader stops acting (< the lease)"),
    ] = 10.0,
    retry_period: Annotated[
        float, typer.Option(help="Seconds between tries to acquire or renew the Lease")
    ] = 2.0,
    identity: Annotated[str, typer.Option(help="This replica's name (default: host-pid)")] = "",
    scheduler_config: Annotated[
        Path | None,
        typer.Option(
            "--scheduler-config",
            "--config",
            help="YAML: a SchedulingShard or a plain scheduler config; several documents: "
            "each overrides the fields it sets",
        ),
    ] = None,
    metrics_address: Annotated[
        str,
        typer.Option(
            help="HOST:PORT to serve /metrics (Prometheus, KAI's metric names), /healthz and "
            "/readyz on (default: none)"
        ),
    ] = "",
    log_level: LogLevelOption = "info",
    log_format: LogFormatOption = "text",
    scheduled_events: Annotated[
        bool, typer.Option(help="A Scheduled event per bind, as kube-scheduler writes")
    ] = True,
) -> None:
    """Run pykai's components against a real Kubernetes cluster (foreground; stops cleanly on
    SIGTERM)."""
    from pykai.kube.api import connect
    from pykai.kube.leader import LeaderElector
    from pykai.kube.metrics import RunMetrics
    from pykai.kube.metrics_server import serve_metrics
    from pykai.kube.runner import KubeRunner, parse_components

    config = None
    with reported(), refused():
        address = _host_port("--metrics-address", metrics_address) if metrics_address else None
        try:
            chosen = parse_components(components)
        except ValueError as exc:
            raise ManifestError(f"--components: {exc}") from exc
        if fake_kubelet:
            chosen |= {"kubelet"}
        if scheduler_config is not None:
            documents = read_manifests([str(scheduler_config)])
            if not documents:
                raise ManifestError(f"{scheduler_config} holds no configuration")
            config = config_from_documents(documents, str(scheduler_config))
        api = connect(kubeconfig, context)
        elector = None
        if leader_elect:
            try:
                elector = LeaderElector(
                    api,
                    identity or f"{socket.gethostname()}-{os.getpid()}",
                    name=lease_name or "pykai-" + "-".join(sorted(chosen)),
                    namespace=lease_namespace,
                    duration=lease_duration,
                    renew_deadline=renew_deadline,
                    retry_period=retry_period,
                )
            except ValueError as exc:
                raise ManifestError(
                    f"--lease-duration, --renew-deadline, --retry-period: {exc}"
                ) from exc

    stop = _serving(log_level, log_format)
    metrics = RunMetrics(chosen, stall_after=max(60.0, 30 * period))
    metrics.count_requests(api.http)
    server = None
    if address is not None:
        with reported():
            server = serve_metrics(address, metrics)
    try:
        with refused():
            runner = KubeRunner(
                api, config, chosen, scheduled_events=scheduled_events, metrics=metrics
            )
            runner.run(stop, period, elector)
    finally:
        if server is not None:
            server.shutdown()


@app.command()
def webhook(
    kubeconfig: KubeconfigOption = None,
    context: ContextOption = None,
    address: Annotated[
        str, typer.Option(help="HOST:PORT to serve HTTPS on (0.0.0.0:PORT for every interface)")
    ] = "127.0.0.1:9443",
    tls_cert_file: Annotated[Path | None, typer.Option(help="Serving certificate (PEM)")] = None,
    tls_key_file: Annotated[Path | None, typer.Option(help="Its key (PEM)")] = None,
    tls_secret: Annotated[
        str, typer.Option(help="NAMESPACE/NAME of a kubernetes.io/tls Secret")
    ] = "",
    register: Annotated[
        bool,
        typer.Option(
            help="Create the ValidatingWebhookConfiguration pointing at https://ADDRESS "
            "(local use; the Helm chart makes its own)"
        ),
    ] = False,
    gpu_sharing: Annotated[
        bool, typer.Option(help="Admit gpu-fraction / gpu-memory pods (off: refuse them)")
    ] = True,
    log_level: LogLevelOption = "info",
    log_format: LogFormatOption = "text",
) -> None:
    """The admission webhook: refuses what `pykai apply` refuses in Queues, PodGroups, pods and
    workloads (foreground; stops cleanly on SIGTERM). Listens on 127.0.0.1 unless --address
    says otherwise. Without TLS options a self-signed certificate is made for local use."""
    from pykai.kube import webhook as hook
    from pykai.kube.api import KINDS, connect

    with reported(), refused():
        host, port = _host_port("--address", address)
        api = connect(kubeconfig, context)
        api.list(KINDS["Queue"])  # every review of a queue reads them: refused now, refused then
        if tls_cert_file and tls_key_file:
            cert = tls_cert_file.read_bytes()
            tls = hook.Tls(cert, tls_key_file.read_bytes(), cert)
        elif tls_secret:
            tls = hook.tls_from_secret(api, tls_secret)
        else:
            tls = hook.generate_tls(sorted({host, "127.0.0.1", "localhost"} - {"0.0.0.0"}))
    stop = _serving(log_level, log_format)
    server = hook.serve((host, port), tls, hook.api_lister(api), gpu_sharing)
    if register:
        url_host = "127.0.0.1" if host == "0.0.0.0" else host
        with refused():
            hook.register(api, f"https://{url_host}:{server.server_address[1]}", tls.ca)
    typer.echo(f"serving on https://{host}:{server.server_address[1]}{hook.PATH}")
    stop.wait()
    if register:
        hook.unregister(api)
    server.shutdown()


def main() -> None:
    """Console entry point of ``pykai`` and ``python -m pykai``."""
    app(prog_name="pykai")
