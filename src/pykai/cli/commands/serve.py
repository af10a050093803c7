"""``pykai run`` and ``pykai webhook``: pykai's components against a real Kubernetes API
server, in the foreground until SIGTERM or SIGINT."""

from __future__ import annotations

import os
import signal
import socket
import threading
from pathlib import Path
from typing import Annotated

import typer

from pykai.cli.errors import refused, reported
from pykai.cli.options import ContextOption, KubeconfigOption, LogFormat, LogLevel
from pykai.model.constants import NODE_POOL_LABEL
from pykai.model.partition import Partition

LogLevelOption = Annotated[LogLevel, typer.Option(help="Least severe log lines shown")]
LogFormatOption = Annotated[
    LogFormat, typer.Option(help="text, or json: one JSON object per line (ts, level, logger, msg)")
]


def serving(log_level: LogLevel, log_format: LogFormat) -> threading.Event:
    """Logging and signals for a long-running command (run, webhook): the event is set by
    SIGTERM or SIGINT."""
    from pykai.cli.logs import configure_logging

    configure_logging(log_level, log_format)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    return stop


def host_port(option: str, text: str) -> tuple[str, int]:
    """``HOST:PORT`` -> (host, port); a ManifestError naming ``option`` otherwise."""
    from pykai.cli.manifests import ManifestError

    host, _, port = text.rpartition(":")
    if not host or not port.isdigit() or int(port) > 65535:
        raise ManifestError(
            f"{option} {text!r}: write it as HOST:PORT (0.0.0.0:PORT for every interface)"
        )
    return host, int(port)


def run(
    kubeconfig: KubeconfigOption = None,
    context: ContextOption = None,
    components: Annotated[
        str,
        typer.Option(
            help="Comma-separated: scheduler, binder, podgrouper, queuecontroller, "
            "podgroupcontroller, and for clusters without a cluster autoscaler provisioning "
            "(default: the first five)"
        ),
    ] = "scheduler,binder,podgrouper,queuecontroller,podgroupcontroller",
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
            help="HOST:PORT to serve /metrics (Prometheus, KAI's metric names), /healthz, "
            "/readyz and (with the scheduler) /apis/pykai.io/v1/queues/NAME/pendingpodgroups "
            "on (default: none)"
        ),
    ] = "",
    dashboard_address: Annotated[
        str,
        typer.Option(
            help="HOST:PORT to serve the read-only dashboard on, as `pykai dashboard` does "
            "(default: none; 127.0.0.1:PORT keeps it on this machine)"
        ),
    ] = "",
    log_level: LogLevelOption = "info",
    log_format: LogFormatOption = "text",
    scheduled_events: Annotated[
        bool, typer.Option(help="A Scheduled event per bind, as kube-scheduler writes")
    ] = True,
    partition_label_value: Annotated[
        str | None,
        typer.Option(
            help="Schedule one shard (with --components=scheduler): only the nodes, queues, "
            'PodGroups and BindRequests whose node-pool label has this value ("": those '
            "without it; default: the configuration's partitionLabelValue, else no "
            "partition: every object)"
        ),
    ] = None,
    node_pool_label_key: Annotated[
        str,
        typer.Option(help='The node-pool label ("": no partitions, every object is seen)'),
    ] = NODE_POOL_LABEL,
) -> None:
    """Run pykai's components against a real Kubernetes cluster (foreground; stops cleanly on
    SIGTERM). Schedulers run with different --partition-label-value split the cluster as KAI's
    scheduling shards do, each with its own Lease and metrics."""
    # light imports only until the informers list: the apiserver answers while the engine loads
    from pykai.cli.manifests import ManifestError, read_manifests
    from pykai.engine.memory import long_running
    from pykai.kube.api import connect
    from pykai.kube.leader import LeaderElector
    from pykai.kube.watched import Watch, parse_components

    long_running()
    config = None
    with reported(), refused():
        address = host_port("--metrics-address", metrics_address) if metrics_address else None
        dashboard_at = (
            host_port("--dashboard-address", dashboard_address) if dashboard_address else None
        )
        try:
            chosen = parse_components(components)
        except ValueError as exc:
            raise ManifestError(f"--components: {exc}") from exc
        if scheduler_config is not None:
            documents = read_manifests([str(scheduler_config)])
            if not documents:
                raise ManifestError(f"{scheduler_config} holds no configuration")
            from pykai.engine.config import config_from_documents

            config = config_from_documents(documents, str(scheduler_config))
        partition = _partition(config, partition_label_value, node_pool_label_key, chosen)
        stop = serving(log_level, log_format)  # before the informers, which may log at once
        api = connect(kubeconfig, context)
        watch = Watch(api, chosen, partition)
        watch.start()
        elector = None
        if leader_elect:
            try:
                elector = LeaderElector(
                    api,
                    identity or f"{socket.gethostname()}-{os.getpid()}",
                    name=lease_name or lease_for(chosen, partition),
                    namespace=lease_namespace,
                    duration=lease_duration,
                    renew_deadline=renew_deadline,
                    retry_period=retry_period,
                )
            except ValueError as exc:
                raise ManifestError(
                    f"--lease-duration, --renew-deadline, --retry-period: {exc}"
                ) from exc

    from pykai.cli.commands.dashboard import serve_cycle_pages
    from pykai.engine.settings import SchedulerConfig
    from pykai.kube.metrics import RunMetrics
    from pykai.kube.metrics_server import serve_metrics
    from pykai.kube.pending import PendingBoard
    from pykai.kube.runner import KubeRunner
    from pykai.kube.visibility import Visibility

    metrics = RunMetrics(chosen, stall_after=max(60.0, 30 * period))
    metrics.count_requests(api.http, api.poster)
    visibility = Visibility()  # Kueue's pendingworkloads, beside the metrics
    server = None
    pending = PendingBoard() if "scheduler" in chosen else None
    routes = (visibility.answer, *((pending.answer,) if pending is not None else ()))
    if address is not None:
        with reported():
            server = serve_metrics(address, metrics, routes)
    dashboard = None
    if dashboard_at is not None:
        with reported():
            dashboard = serve_cycle_pages(dashboard_at, config or SchedulerConfig())
    observers = [pending.observe] if pending is not None else []
    if dashboard is not None:
        observers.append(dashboard.pages.observe)
    try:
        with refused():
            runner = KubeRunner(
                api,
                config,
                chosen,
                scheduled_events=scheduled_events,
                metrics=metrics,
                observers=observers,
                visibility=visibility,
                watch=watch,
                partition=partition,
            )
            runner.run(stop, period, elector)
    finally:
        if server is not None:
            server.shutdown()
        if dashboard is not None:
            dashboard.server.shutdown()


def _partition(
    config: object, flag: str | None, key: str, components: frozenset[str]
) -> Partition | None:
    """The shard this run schedules: ``--partition-label-value``, else the configuration's
    ``partitionLabelValue``, else none (every object). Both given and different is refused;
    so is a partition with components other than the scheduler, which serve every partition
    (KAI runs one binder, pod-grouper and controllers for all its shards)."""
    from pykai.cli.manifests import ManifestError

    written = getattr(config, "partition_label_value", None)
    if flag is not None and written is not None and flag != written:
        raise ManifestError(
            f"--partition-label-value {flag!r} and the configuration's partitionLabelValue "
            f"{written!r} differ: give one"
        )
    value = flag if flag is not None else written
    if value is None:
        return None
    if not key:
        raise ManifestError("a partition needs a node-pool label: give --node-pool-label-key")
    if components != {"scheduler"}:
        others = ", ".join(sorted(components - {"scheduler"}))
        raise ManifestError(
            f"a scheduling shard's process runs the scheduler alone (--components=scheduler): "
            f"{others} serve every partition, as KAI's do; run them in a process without "
            "--partition-label-value (docs/shards.md)"
        )
    return Partition(key, value)


def lease_for(components: frozenset[str], partition: Partition | None) -> str:
    """The default Lease of a run: one per set of components and shard (KAI's scheduler
    names its Lease after the shard's partition too)."""
    name = "pykai-" + "-".join(sorted(components))
    return f"{name}-{partition.value}".lower() if partition and partition.value else name


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
    from pykai.kube.api import connect
    from pykai.model.kinds import BY_KIND

    with reported(), refused():
        host, port = host_port("--address", address)
        api = connect(kubeconfig, context)
        api.list(BY_KIND["Queue"])  # every review of a queue reads them: refused now, refused then
        if tls_cert_file and tls_key_file:
            cert = tls_cert_file.read_bytes()
            tls = hook.Tls(cert, tls_key_file.read_bytes(), cert)
        elif tls_secret:
            tls = hook.tls_from_secret(api, tls_secret)
        else:
            tls = hook.generate_tls(sorted({host, "127.0.0.1", "localhost"} - {"0.0.0.0"}))
    stop = serving(log_level, log_format)
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
