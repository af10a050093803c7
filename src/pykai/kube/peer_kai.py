"""The real KAI Scheduler (v0.12.0, built by scripts/peers) on a running LocalCluster, for side
by side runs against ``pykai run``: its five components as plain processes with the arguments
KAI's operator gives them (pkg/operator/operands/*), minus what KWOK cannot serve.

Contract of ``start``:

- the cluster runs on KAI's own CRDs (``LocalCluster(crds=kai_crds())``: the scheduler lists
  Topologies and BindRequests, which pykai's CRDs lack); otherwise ``KaiStackError``;
- it creates the namespaces ``kai-scheduler`` and ``kai-resource-reservation`` and writes the
  scheduler's configuration as the operator's ConfigMap holds it for a shard with the given
  placement (``scheduler_config``) to ``kai-scheduler.yaml`` in the cluster's directory;
- every component gets ``KUBECONFIG`` (three of them ignore ``--kubeconfig``), its log
  ``kai-*.log`` beside the cluster's, and is recorded by ``LocalCluster.launch``, so
  ``LocalCluster.down`` stops it, also after a failed start;
- listeners are on free loopback ports, except kai-podgroupcontroller's metrics, which v0.12.0
  always serves on ``:8080`` (it never passes its flag on): one KAI stack per machine at a
  time. Stacks take turns: under an exclusive lock (``LOCK``, held only while starting), a
  start waits until port 8080 is free, launches kai-podgroupcontroller and waits until it holds
  the port, so the next start waits in turn until that stack is down; after ``port_wait``
  seconds it gives up with ``KaiStackError``;
- the webhooks of kai-podgroupcontroller and kai-queuecontroller (PodGroup and Queue
  validation) are off: they only validate, and KWOK has no kubelet to mount their
  certificates;
- first ``start_admission`` (below), unless it ran already;
- it returns once the scheduler serves its metrics and every component is still alive (within
  ``timeout``), else ``KaiStackError`` naming the log to read.

``stop_scheduler`` and ``restart_scheduler`` stop kai-scheduler alone and start it again with
the same arguments (a side-by-side run applies each step of a scenario while no scheduler
decides).

Scheduling shards (docs/shards.md): the stack's kai-scheduler is KAI's default shard
(``--partition-label-value=``: the objects without the node-pool label). Contract of
``start_shard(cluster, value)``: beside a running stack, one more kai-scheduler for the
SchedulingShard whose ``partitionLabelValue`` is ``value`` (non-empty), with the operator's
arguments for that shard (resources_for_shard.go buildArgsList: the same flags but the
partition value), its own configuration file ``kai-scheduler-VALUE.yaml``, its own free
loopback ports (metrics, plugin server), recorded by ``LocalCluster.launch`` as
``kai-scheduler-VALUE`` (its log ``kai-scheduler-VALUE.log``; the binary is reached through
a link of that name in the cluster's directory), so ``LocalCluster.down`` stops it; it
returns once it serves its metrics, else ``KaiStackError``. The binder, pod-grouper and
controllers serve every shard, as the operator deploys them once. ``stop_scheduler`` and
``restart_scheduler`` take ``shard=VALUE`` for it; ``restart_schedulers`` starts several
stopped ones again at once.

Contract of ``start_admission(cluster)`` (idempotent: nothing if kai-admission runs already):
kai-admission, KAI's pod webhook, as the operator deploys it with ``global.gpuSharing: true``
(operands/admission/resources.go buildArgsList; the chart's GPU runtime class ``nvidia``,
which it creates as a RuntimeClass, as the GPU operator does on a real cluster), serving on a
free loopback port with a certificate for 127.0.0.1 that a fresh CA signed, in
``TMPDIR=kai-admission-tmp/`` (controller-runtime's webhook server reads
``$TMPDIR/k8s-webhook-server/serving-certs``), and registered as the operator registers it:
``mutating-kai-admission`` (pods, CREATE, ``/mutate--v1-pod``) and
``validating-kai-admission`` (pods, CREATE and UPDATE, ``/validate--v1-pod``), failing closed,
outside ``kube-system`` and ``kai-scheduler``. It returns once a dry-run shared-GPU pod comes
back mutated (the apiserver calls the webhook), else ``KaiStackError``. Beside it, the
reservation stand-in (``pykai.kube.reservations``, recorded as ``kai-resource-reservation``):
what the reservation pod's program writes on a real node. Both are recorded by
``LocalCluster.launch``, so ``LocalCluster.down`` stops them. A side-by-side run calls it
before a scenario's first pods exist: the webhook mutates pods only as they are created.

Pods reach it with ``spec.schedulerName: kai-scheduler``; a bare pod that names its PodGroup in
the ``pod-group-name`` annotation keeps it (the podgrouper leaves it alone)."""

from __future__ import annotations

import base64
import dataclasses
import fcntl
import json
import os
import shlex
import signal
import socket
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import cast

import yaml

from pykai.kube.api import KubeApi, connect
from pykai.kube.certs import Authority
from pykai.kube.localcluster import (
    LocalCluster,
    LocalClusterError,
    alive,
    answers,
    free_port,
    kai_crds,
    write_private,
)
from pykai.model.kinds import BY_KIND, KindSpec
from pykai.model.meta import Obj

SCHEDULER_NAME = "kai-scheduler"
NAMESPACE = "kai-scheduler"
RESERVATION_NAMESPACE = "kai-resource-reservation"
QUEUE_LABEL = "kai.scheduler/queue"
NODE_POOL_LABEL = "kai.scheduler/node-pool"
PINNED_PORT = 8080  # kai-podgroupcontroller's metrics, on every interface, whatever its flags
SCHEDULER_ARGS = "kai-scheduler.args.json"  # how start launched it, for restart_scheduler
LOCK = Path("/tmp/pykai-kai-stack.lock")  # taken while a stack starts (see the contract)
ADMISSION = "kai-admission"
RESERVATIONS = "kai-resource-reservation"  # the stand-in for the reservation pod's program
SHARED_GPU_CONFIGMAP = "runai/shared-gpu-configmap"  # what admission adds to a fraction pod
GPU_RUNTIME_CLASS = "nvidia"  # the chart's admission.gpuPodRuntimeClassName
RUNTIME_CLASS = KindSpec("RuntimeClass", "node.k8s.io", ("v1",), "runtimeclasses", False)
# started in this order (kai-admission by start_admission, maybe earlier); down() stops them
# newest first, the scheduler before the rest
COMPONENTS = (
    ADMISSION,
    "kai-podgrouper",
    "kai-podgroupcontroller",
    "kai-queuecontroller",
    "kai-binder",
    "kai-scheduler",
)


class KaiStackError(LocalClusterError):
    """The real KAI could not start (the message says which part and where its log is)."""


def scheduler_config(gpu: str = "binpack", cpu: str = "binpack") -> Obj:
    """The scheduler's configuration as KAI's operator writes it for a SchedulingShard with
    this placement and nothing else set (resources_for_shard.go configMapForShard): any spread
    drops consolidation; the GPU placement names its plugin; binpack GPUs add
    gpusharingorder."""
    actions = ["allocate"]
    if "spread" not in (gpu, cpu):
        actions.append("consolidation")
    actions += ["reclaim", "preempt", "stalegangeviction"]
    names = [
        "predicates",
        "proportion",
        "priority",
        "nodeavailability",
        "resourcetype",
        "podaffinity",
        "elastic",
        "kubeflow",
        "ray",
        "subgrouporder",
        "taskorder",
        "nominatednode",
        "dynamicresources",
        "minruntime",
        "topology",
        "snapshot",
    ]
    plugins: list[Obj] = [{"name": name} for name in names]
    plugins.append({"name": "gpu" + gpu.replace("bin", "", 1)})
    plugins.append({"name": "nodeplacement", "arguments": {"cpu": cpu, "gpu": gpu}})
    if gpu == "binpack":
        plugins.append({"name": "gpusharingorder"})
    return {"actions": ", ".join(actions), "tiers": [{"plugins": plugins}]}


def start(
    cluster: LocalCluster,
    *,
    gpu: str = "binpack",
    cpu: str = "binpack",
    timeout: float = 60.0,
    port_wait: float = 900.0,
    flags: tuple[str, ...] = (),
) -> None:
    """Start KAI's five components against ``cluster`` (see the module's contract);
    ``flags`` go to kai-scheduler after the operator's arguments."""
    if cluster.crds.resolve() != kai_crds().resolve():
        raise KaiStackError("the real KAI needs KAI's own CRDs: LocalCluster(crds=kai_crds())")
    for name in COMPONENTS:
        cluster.binary(name)
    start_admission(cluster, timeout=timeout)
    config = cluster.directory / "kai-scheduler.yaml"
    config.write_text(yaml.safe_dump(scheduler_config(gpu, cpu), sort_keys=False))
    env = {"KUBECONFIG": str(cluster.kubeconfig)}
    kubeconfig = f"--kubeconfig={cluster.kubeconfig}"
    ports = {name: free_port() for name in ("binder", "podgrouper", "queues", "metrics", "plug")}
    loopback = {name: f"127.0.0.1:{port}" for name, port in ports.items()}
    common_pools = [f"--nodepool-label-key={NODE_POOL_LABEL}"]  # KAI's Config's global key
    arguments = {
        "kai-podgrouper": [
            kubeconfig,
            f"--scheduler-name={SCHEDULER_NAME}",
            f"--queue-label-key={QUEUE_LABEL}",
            *common_pools,
            f"--metrics-bind-address={loopback['podgrouper']}",
            "--health-probe-bind-address=0",
        ],
        "kai-podgroupcontroller": [
            f"--scheduler-name={SCHEDULER_NAME}",
            "--enable-podgroup-webhook=false",
            "--health-probe-bind-address=0",
        ],
        "kai-queuecontroller": [
            f"--queue-label-key={QUEUE_LABEL}",
            "--enable-webhook=false",
            f"--metrics-listen-address={loopback['queues']}",
        ],
        "kai-binder": [
            kubeconfig,
            f"--scheduler-name={SCHEDULER_NAME}",
            f"--resource-reservation-namespace={RESERVATION_NAMESPACE}",
            "--resource-reservation-service-account=kai-resource-reservation",
            "--resource-reservation-app-label=kai-resource-reservation",
            "--scale-adjust-namespace=kai-scale-adjust",
            f"--metrics-bind-address={loopback['binder']}",
            "--health-probe-bind-address=0",
            "--cdi-enabled=false",
            "--fake-gpu-nodes",
        ],
        "kai-scheduler": _scheduler_args(config, "", loopback["metrics"], ports["plug"], flags),
    }
    with _turn(port_wait):
        for name in COMPONENTS[1:]:
            if name == "kai-podgroupcontroller":
                _wait_port(free=True, timeout=port_wait)
            launched = {f"{name}-{k}": v for k, v in ports.items()}
            cluster.launch(name, arguments[name], env, **launched)
            if name == "kai-podgroupcontroller":
                _wait_port(free=False, timeout=timeout)
    (cluster.directory / SCHEDULER_ARGS).write_text(
        json.dumps({"args": arguments["kai-scheduler"], "env": env, "url": loopback["metrics"]})
    )
    _wait_serving(cluster, f"http://{loopback['metrics']}/metrics", timeout)


def start_admission(cluster: LocalCluster, *, timeout: float = 60.0) -> None:
    """kai-admission, its webhooks and the reservation stand-in (see the module's contract)."""
    pids = cast(dict[str, int], cluster.status().get("pids", {}))
    if ADMISSION in pids and alive(pids[ADMISSION]):
        return
    cluster.binary(ADMISSION)
    api = connect(cluster.kubeconfig)
    for namespace in (NAMESPACE, RESERVATION_NAMESPACE):
        api.create_if_absent(
            BY_KIND["Namespace"],
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}},
        )
    api.create_if_absent(
        RUNTIME_CLASS,
        {
            "apiVersion": "node.k8s.io/v1",
            "kind": "RuntimeClass",
            "metadata": {"name": GPU_RUNTIME_CLASS},
            "handler": GPU_RUNTIME_CLASS,
        },
    )
    authority = Authority.new("kai-admission-ca")
    service = f"kai-admission.{NAMESPACE}.svc"  # the operator's calculateServiceUrl
    serving, key = authority.issue(service, hosts=[service, "127.0.0.1"])
    temporary = cluster.directory / "kai-admission-tmp"
    certs = temporary / "k8s-webhook-server" / "serving-certs"
    certs.mkdir(parents=True, exist_ok=True, mode=0o700)
    write_private(certs / "tls.crt", serving)
    write_private(certs / "tls.key", key)
    webhook, probe, metrics = free_port(), free_port(), free_port()
    env = {"KUBECONFIG": str(cluster.kubeconfig), "TMPDIR": str(temporary)}
    arguments = [
        f"--scheduler-name={SCHEDULER_NAME}",
        f"--webhook-addr={webhook}",
        f"--health-probe-bind-address=127.0.0.1:{probe}",
        f"--metrics-bind-address=127.0.0.1:{metrics}",
        "--gpu-sharing-enabled=true",
        f"--gpu-pod-runtime-class-name={GPU_RUNTIME_CLASS}",
    ]
    ports = {"kai-admission-webhook": webhook, "kai-admission-probe": probe}
    pid = cluster.launch(ADMISSION, arguments, env, **ports, **{"kai-admission-metrics": metrics})
    if not answers(f"http://127.0.0.1:{probe}/readyz", lambda: alive(pid), timeout):
        raise KaiStackError(
            f"kai-admission did not get ready within {timeout:g}s; "
            f"see {cluster.directory / 'kai-admission.log'}"
        )
    _register_admission(api, f"https://127.0.0.1:{webhook}", authority.cert_pem, service)
    _launch_reservations(cluster)
    _wait_admitting(api, timeout)


def _register_admission(api: KubeApi, base: str, ca: bytes, name: str) -> None:
    """The two webhook configurations the operator writes (operands/admission/resources.go
    mutatingWCForKAIConfig, validatingWCForKAIConfig, buildWebhookSelectors), by url."""
    selector = {
        "matchExpressions": [
            {
                "key": "kubernetes.io/metadata.name",
                "operator": "NotIn",
                "values": ["kube-system", NAMESPACE],
            }
        ]
    }
    bundle = base64.b64encode(ca).decode()

    def hook(path: str, operations: list[str]) -> Obj:
        return {
            "name": name,
            "admissionReviewVersions": ["v1"],
            "sideEffects": "None",
            "namespaceSelector": selector,
            "failurePolicy": "Fail",
            "clientConfig": {"url": base + path, "caBundle": bundle},
            "rules": [
                {
                    "operations": operations,
                    "apiGroups": [""],
                    "apiVersions": ["v1"],
                    "resources": ["pods"],
                    "scope": "Namespaced",
                }
            ],
        }

    mutating = {**hook("/mutate--v1-pod", ["CREATE"]), "reinvocationPolicy": "IfNeeded"}
    for kind, config, webhook in (
        ("MutatingWebhookConfiguration", "mutating-kai-admission", mutating),
        (
            "ValidatingWebhookConfiguration",
            "validating-kai-admission",
            hook("/validate--v1-pod", ["CREATE", "UPDATE"]),
        ),
    ):
        api.delete(BY_KIND[kind], config)
        api.create(
            BY_KIND[kind],
            {
                "apiVersion": "admissionregistration.k8s.io/v1",
                "kind": kind,
                "metadata": {"name": config, "labels": {"app": "admission"}},
                "webhooks": [webhook],
            },
        )


def _launch_reservations(cluster: LocalCluster) -> None:
    """The reservation stand-in as a recorded process (through a launcher script in the
    cluster's directory, as ``LocalCluster.launch`` starts binaries)."""
    folder = cluster.directory / "kai-stand-ins"
    folder.mkdir(exist_ok=True)
    script = folder / RESERVATIONS
    command = shlex.join([sys.executable, "-m", "pykai.kube.reservations"])
    script.write_text(f'#!/bin/sh\nexec {command} "$@"\n')
    script.chmod(0o755)
    launcher = dataclasses.replace(cluster, binaries=folder)
    launcher.launch(RESERVATIONS, [f"--kubeconfig={cluster.kubeconfig}"])


def _wait_admitting(api: KubeApi, timeout: float) -> None:
    """Until the apiserver calls kai-admission: a dry-run fraction pod comes back with the
    shared-GPU ConfigMap annotation, else ``KaiStackError``."""
    probe = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "kai-admission-probe",
            "namespace": "default",
            "annotations": {"gpu-fraction": "0.5"},
        },
        "spec": {
            "schedulerName": SCHEDULER_NAME,
            "containers": [{"name": "probe", "image": "probe"}],
        },
    }
    path = api.path(BY_KIND["Pod"], "default") + "?dryRun=All"
    deadline = time.monotonic() + timeout
    answer = ""
    while time.monotonic() < deadline:
        response = api.http.post(
            path, content=json.dumps(probe), headers={"Content-Type": "application/json"}
        )
        answer = response.text
        if response.status_code < 300:
            annotations = response.json()["metadata"].get("annotations") or {}
            if SHARED_GPU_CONFIGMAP in annotations:
                return
        time.sleep(0.25)
    raise KaiStackError(f"the apiserver did not call kai-admission within {timeout:g}s: {answer}")


def stop_scheduler(cluster: LocalCluster, timeout: float = 30.0, *, shard: str = "") -> None:
    """Stop the running stack's kai-scheduler alone (SIGTERM, SIGKILL after ``timeout``
    seconds), the other components kept: nothing is decided until ``restart_scheduler``.
    ``shard``: the kai-scheduler ``start_shard`` started for that partition value instead."""
    pid = cast(dict[str, int], cluster.status().get("pids", {})).get(scheduler_process(shard))
    if pid is None or not alive(pid):
        return
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while alive(pid):
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            deadline = time.monotonic() + timeout
        time.sleep(0.1)


def restart_scheduler(cluster: LocalCluster, timeout: float = 60.0, *, shard: str = "") -> None:
    """Start kai-scheduler again as ``start`` did (same arguments and ports, recorded again
    for ``LocalCluster.down``); returns once it serves its metrics. ``shard``: the
    kai-scheduler ``start_shard`` started for that partition value, as it started it."""
    restart_schedulers(cluster, [shard], timeout)


def restart_schedulers(cluster: LocalCluster, shards: list[str], timeout: float = 60.0) -> None:
    """``restart_scheduler`` for each of ``shards`` (``""``: the stack's own) at once: all are
    launched, then each is waited for (one waited for alone would find the others still
    stopped, and ``_wait_serving`` wants every recorded process alive)."""
    urls = []
    for shard in shards:
        saved = json.loads((cluster.directory / _args_file(shard)).read_text())
        binaries = Path(saved.get("binaries") or cluster.binaries)
        launcher = dataclasses.replace(cluster, binaries=binaries)
        launcher.launch(scheduler_process(shard), saved["args"], saved["env"])
        urls.append(f"http://{saved['url']}/metrics")
    for url in urls:
        _wait_serving(cluster, url, timeout)


def scheduler_process(shard: str = "") -> str:
    """The name a kai-scheduler is recorded under: ``kai-scheduler`` for the stack's own (the
    default shard), ``kai-scheduler-VALUE`` for the one ``start_shard`` started."""
    return f"{SCHEDULER_NAME}-{shard}" if shard else SCHEDULER_NAME


def start_shard(
    cluster: LocalCluster,
    value: str,
    *,
    gpu: str = "binpack",
    cpu: str = "binpack",
    timeout: float = 60.0,
    flags: tuple[str, ...] = (),
) -> None:
    """One more kai-scheduler, for the shard of partition ``value``, beside the stack ``start``
    started (see the module's contract); ``flags`` after the operator's arguments."""
    name = scheduler_process(value)
    if not value:
        raise KaiStackError("the stack's own kai-scheduler is the default shard: name a value")
    pids = cast(dict[str, int], cluster.status().get("pids", {}))
    if SCHEDULER_NAME not in pids:
        raise KaiStackError("start_shard needs a running KAI stack: call start first")
    if name in pids:
        raise KaiStackError(f"{name} was started already")
    links = cluster.directory / "kai-shards" / value
    links.mkdir(parents=True, exist_ok=True)
    link = links / name
    link.unlink(missing_ok=True)
    link.symlink_to(cluster.binary(SCHEDULER_NAME).resolve())
    config = cluster.directory / f"{name}.yaml"
    config.write_text(yaml.safe_dump(scheduler_config(gpu, cpu), sort_keys=False))
    env = {"KUBECONFIG": str(cluster.kubeconfig)}
    metrics, plug = free_port(), free_port()
    url = f"127.0.0.1:{metrics}"
    args = _scheduler_args(config, value, url, plug, flags)
    launched = {f"{name}-metrics": metrics, f"{name}-plug": plug}
    dataclasses.replace(cluster, binaries=links).launch(name, args, env, **launched)
    (cluster.directory / _args_file(value)).write_text(
        json.dumps({"args": args, "env": env, "url": url, "binaries": str(links)})
    )
    _wait_serving(cluster, f"http://{url}/metrics", timeout)


def _scheduler_args(
    config: Path, value: str, metrics: str, plug: int, flags: tuple[str, ...]
) -> list[str]:
    """kai-scheduler's arguments as KAI's operator gives them to the shard of partition
    ``value`` (resources_for_shard.go buildArgsList), on loopback ports, then ``flags``."""
    return [
        f"--scheduler-conf={config}",
        f"--scheduler-name={SCHEDULER_NAME}",
        f"--namespace={NAMESPACE}",
        f"--nodepool-label-key={NODE_POOL_LABEL}",
        f"--partition-label-value={value}",
        "--resource-reservation-app-label=kai-resource-reservation",
        f"--listen-address={metrics}",
        f"--plugin-server-port={plug}",
        *flags,
    ]


def _args_file(shard: str) -> str:
    return f"{scheduler_process(shard)}.args.json" if shard else SCHEDULER_ARGS


@contextmanager
def _turn(timeout: float) -> Iterator[None]:
    """Hold ``LOCK`` exclusively (waiting up to ``timeout`` seconds for it)."""
    deadline = time.monotonic() + timeout
    with LOCK.open("a") as handle:
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise KaiStackError(
                        f"another KAI stack kept {LOCK} for {timeout:g}s while starting"
                    ) from None
                time.sleep(0.5)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _port_free() -> bool:
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("", PINNED_PORT))
        except OSError:
            return False
        return True


def _wait_port(*, free: bool, timeout: float) -> None:
    """Until port 8080 is free (``free``) or taken (by the kai-podgroupcontroller just
    launched), else ``KaiStackError``."""
    deadline = time.monotonic() + timeout
    while _port_free() != free:
        if time.monotonic() > deadline:
            state = "free" if free else "taken by kai-podgroupcontroller"
            raise KaiStackError(
                f"port {PINNED_PORT} was not {state} within {timeout:g}s: "
                "kai-podgroupcontroller v0.12.0 always serves its metrics there, so KAI stacks "
                "on one machine take turns"
            )
        time.sleep(0.25)


def _wait_serving(cluster: LocalCluster, url: str, timeout: float) -> None:
    """Until the scheduler answers ``url`` and every recorded process is alive."""
    if answers(url, cluster.running, timeout):
        return
    pids = cast(dict[str, int], cluster.status().get("pids", {}))
    dead = [name for name, pid in pids.items() if not alive(pid)]
    logs = ", ".join(str(cluster.directory / f"{name}.log") for name in dead or ["kai-scheduler"])
    raise KaiStackError(f"the real KAI did not start within {timeout:g}s; see {logs}")
