"""The real Kueue (v0.17.0, built by scripts/peers) on a running LocalCluster, for side by side
runs against ``pykai run``: its manager (cmd/kueue) as a plain process, configured by a file as
its Deployment's ConfigMap configures it, minus what a cluster without kubelets cannot serve.

Contract of ``start``:

- the cluster runs on Kueue's own CRDs (``LocalCluster(kueue_crds=True)``), kube-scheduler is
  its default scheduler (``up(default_scheduler=True)``: Kueue admits, the Job controller or
  KubeRay makes the pods, kube-scheduler binds them) and KubeRay sets no batch scheduler
  (``kuberay_scheduler=""``: else Ray pods name kai-scheduler and nothing binds them);
  otherwise ``KueueStackError``;
- it writes the manager's configuration (``configuration``: leader election off, metrics off,
  VisibilityOnDemand off, health and webhook listeners on free loopback ports, the frameworks
  asked for) to ``kueue.yaml`` in the cluster's directory;
- certificates are seeded where Kueue's internal cert management (cert-controller's rotator)
  looks, so it starts without a kubelet: a CA whose SAN is ``kueue-ca`` (10 years) and a serving
  certificate for ``kueue-webhook-service.kueue-system.svc`` and 127.0.0.1 (1 year) in the
  Secret ``kueue-system/kueue-webhook-server-cert``, the same files in the webhook's cert
  directory (``kueue-certs/``), and a conversion webhook stanza (url on the loopback port,
  caBundle) on the five multi-version CRDs the rotator injects into;
- the webhooks are **off**: no webhook configuration is registered. Registering Kueue's 43 with
  failure policy Fail would put the manager in the path of every create of the cluster's kinds;
  without them Kueue loses validation, defaults (default LocalQueue, ``managedBy``, the
  resource-in-use finalizers) and suspend-on-create: callers create every Kueue-managed job
  with ``spec.suspend: true`` (``suspended``), as Kueue's defaulting webhook would store it;
- the manager gets ``KUBECONFIG`` and ``--kubeconfig``, its log ``kueue.log`` beside the
  cluster's, and is recorded by ``LocalCluster.launch``, so ``LocalCluster.down`` stops it, also
  after a failed start;
- it returns once the manager's ``/readyz`` answers 200 (certificates ready, webhook server
  listening) while it is alive (within ``timeout``), else ``KueueStackError`` naming the log."""

from __future__ import annotations

import base64
from collections.abc import Sequence
from pathlib import Path
from typing import cast

import yaml

from pykai.kube.api import connect
from pykai.kube.certs import Authority
from pykai.kube.localcluster import (
    LocalCluster,
    LocalClusterError,
    alive,
    answers,
    free_port,
    write_private,
)
from pykai.model.kinds import BY_KIND
from pykai.model.meta import Obj

NAMESPACE = "kueue-system"
SERVICE = "kueue-webhook-service"  # the name the rotator signs for, with NAMESPACE
SECRET = "kueue-webhook-server-cert"
CA_NAME = "kueue-ca"  # the rotator checks its CA for this DNS name (pkg/util/cert/cert.go)
# the CRDs whose conversion webhook the rotator injects its CA into (cert.go buildCertRotatorConfig)
CONVERTED = ("localqueues", "clusterqueues", "workloads", "cohorts", "multikueueclusters")
FRAMEWORKS = ("batch/job", "ray.io/rayjob", "ray.io/raycluster")
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
MANAGED_KINDS = ("Job", "RayJob", "RayCluster")


class KueueStackError(LocalClusterError):
    """The real Kueue could not start (the message says why and where its log is)."""


def configuration(
    directory: Path, health: int, webhook: int, frameworks: Sequence[str] = FRAMEWORKS
) -> Obj:
    """The manager's Configuration (config.kueue.x-k8s.io/v1beta2) for this run: Kueue's
    defaults except leader election, metrics and the visibility server (off: one process, no
    /visibility to write to) and the listeners (loopback, the given ports)."""
    return {
        "apiVersion": "config.kueue.x-k8s.io/v1beta2",
        "kind": "Configuration",
        "namespace": NAMESPACE,
        "leaderElection": {"leaderElect": False},
        "health": {"healthProbeBindAddress": f"127.0.0.1:{health}"},
        "metrics": {"bindAddress": "0"},
        "webhook": {"host": "127.0.0.1", "port": webhook, "certDir": str(directory)},
        "internalCertManagement": {
            "enable": True,
            "webhookServiceName": SERVICE,
            "webhookSecretName": SECRET,
        },
        "clientConnection": {"qps": 50, "burst": 100},
        "featureGates": {"VisibilityOnDemand": False},
        "manageJobsWithoutQueueName": False,
        "integrations": {"frameworks": list(frameworks)},
    }


def suspended(obj: Obj) -> Obj:
    """``obj`` as Kueue's defaulting webhook stores it: a Job, RayJob or RayCluster labelled
    with a LocalQueue gets ``spec.suspend: true``; anything else is returned as it is."""
    labels = obj.get("metadata", {}).get("labels", {})
    if obj.get("kind") not in MANAGED_KINDS or QUEUE_LABEL not in labels:
        return obj
    return {**obj, "spec": {**obj.get("spec", {}), "suspend": True}}


def _authority() -> Authority:
    """A CA valid for 10 years whose SAN is ``kueue-ca``, as the rotator generates it."""
    return Authority.new(CA_NAME, 3650, organization="kueue", dns_names=(CA_NAME,))


def _seed_certificates(cluster: LocalCluster, directory: Path, port: int) -> None:
    """The Secret, the cert files and the conversion stanzas (see the module's contract)."""
    authority = _authority()
    host = f"{SERVICE}.{NAMESPACE}.svc"
    serving, serving_key = authority.issue(host, hosts=[host, "127.0.0.1"], days=365)
    directory.mkdir(mode=0o700, exist_ok=True)
    write_private(directory / "tls.crt", serving)
    write_private(directory / "tls.key", serving_key)
    api = connect(cluster.kubeconfig)
    api.create_if_absent(
        BY_KIND["Namespace"],
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}},
    )
    data = {
        "ca.crt": authority.cert_pem,
        "ca.key": authority.key_pem,
        "tls.crt": serving,
        "tls.key": serving_key,
    }
    api.create(
        BY_KIND["Secret"],
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": SECRET, "namespace": NAMESPACE},
            "type": "Opaque",
            "data": {name: base64.b64encode(value).decode() for name, value in data.items()},
        },
    )
    conversion = {
        "strategy": "Webhook",
        "webhook": {
            "conversionReviewVersions": ["v1"],
            "clientConfig": {
                "url": f"https://127.0.0.1:{port}/convert",
                "caBundle": base64.b64encode(authority.cert_pem).decode(),
            },
        },
    }
    for plural in CONVERTED:
        api.patch(
            BY_KIND["CustomResourceDefinition"],
            f"{plural}.kueue.x-k8s.io",
            {"spec": {"conversion": conversion}},
        )


def start(
    cluster: LocalCluster,
    *,
    frameworks: Sequence[str] = FRAMEWORKS,
    timeout: float = 120.0,
) -> None:
    """Start Kueue's manager against ``cluster`` (see the module's contract)."""
    if not cluster.kueue_crds:
        raise KueueStackError("the real Kueue needs its own CRDs: LocalCluster(kueue_crds=True)")
    if cluster.kuberay_scheduler:
        raise KueueStackError(
            "KubeRay would give Ray pods schedulerName "
            f"{cluster.kuberay_scheduler}: LocalCluster(kuberay_scheduler='')"
        )
    pids = cast(dict[str, int], cluster.status().get("pids", {}))
    if "kube-scheduler" not in pids:
        raise KueueStackError(
            "Kueue's admitted pods need kube-scheduler: up(default_scheduler=True)"
        )
    cluster.binary("kueue")
    health, webhook = free_port(), free_port()
    certs = cluster.directory / "kueue-certs"
    _seed_certificates(cluster, certs, webhook)
    config = cluster.directory / "kueue.yaml"
    config.write_text(
        yaml.safe_dump(configuration(certs, health, webhook, frameworks), sort_keys=False)
    )
    arguments = [f"--config={config}", f"--kubeconfig={cluster.kubeconfig}", "--zap-log-level=2"]
    env = {"KUBECONFIG": str(cluster.kubeconfig)}
    pid = cluster.launch(
        "kueue", arguments, env, **{"kueue-health": health, "kueue-webhook": webhook}
    )
    _wait_ready(cluster, pid, f"http://127.0.0.1:{health}/readyz", timeout)


def _wait_ready(cluster: LocalCluster, pid: int, url: str, timeout: float) -> None:
    """Until the manager answers ``url`` with 200 while alive, else ``KueueStackError``."""
    if answers(url, lambda: alive(pid), timeout):
        return
    state = "exited" if not alive(pid) else f"was not ready within {timeout:g}s"
    log = cluster.directory / "kueue.log"
    raise KueueStackError(f"the real Kueue {state}; see {log}")
