"""Workload controllers shared by both backends, written against a small ``WorkloadHost``:

- the KubeRay emulator: RayCluster → a head pod and worker pods, named and labelled as KubeRay
  names them (an emulator of KubeRay's kai-scheduler integration, not KubeRay itself);
  RayJob and RayService → a RayCluster. Missing pods are recreated, as KubeRay does after an
  eviction.
- ``reconcile_pods``, which the embedded cluster's Deployment/ReplicaSet/Job controllers use too.

Generated names (pods, a RayJob's or RayService's RayCluster) are tried again with another
suffix while the name is taken, as the API server's ``generateName`` does: the first try
gives the name it always gave, so names stay reproducible.
"""

from __future__ import annotations

import copy
import hashlib
from collections.abc import Callable
from functools import partial
from typing import Any, Protocol

from pykai.controllers.events import WARNING
from pykai.grouping.ray import RayGroupingError, worker_groups
from pykai.model import constants as c
from pykai.model.errors import AlreadyExists
from pykai.model.meta import Obj
from pykai.model.names import generated_name

_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"  # Kubernetes' suffix alphabet (no vowels)
NAME_ATTEMPTS = 8
"""Names tried for one generated object before giving up."""


class WorkloadHost(Protocol):
    """Where the controllers read and write objects."""

    def owned(self, owner: Obj, kind: str) -> list[Obj]:
        """Objects of ``kind`` whose controlling owner is ``owner``."""

    def create(self, obj: Obj) -> Obj:
        """Create an object; return it as stored. May raise AlreadyExists when the name is
        taken (the caller then tries another)."""

    def remove(self, kind: str, name: str, namespace: str) -> None:
        """Delete an object."""

    def set_status(self, obj: Obj, status: dict[str, Any]) -> None:
        """Replace an object's status."""

    def serial(self, scope: str) -> int:
        """A number not handed out before in ``scope`` (for generated names)."""

    def record(self, involved: Obj, reason: str, message: str, kind: str) -> bool:
        """Record an event; True if written."""


def suffix(seed: str, length: int = 5) -> str:
    """A Kubernetes-style random-looking suffix, reproducible from ``seed``."""
    digest = hashlib.sha256(seed.encode()).digest()
    return "".join(_ALPHABET[b % len(_ALPHABET)] for b in digest[:length])


def create_named(host: WorkloadHost, make: Callable[[str], Obj], seed: str) -> Obj:
    """Create ``make(seed)``; while its name is taken, ``make(seed/1)``, ``make(seed/2)``,
    ... (at most NAME_ATTEMPTS names)."""
    for attempt in range(NAME_ATTEMPTS):
        try:
            return host.create(make(f"{seed}/{attempt}" if attempt else seed))
        except AlreadyExists:
            continue
    raise AlreadyExists(f"every name generated from {seed!r} is taken")


def with_suffix(obj: Obj, prefix: str, token: str) -> Obj:
    """``obj``, named ``prefix`` and the suffix made from ``token`` (the prefix cut as the
    apiserver cuts a generateName)."""
    obj["metadata"]["name"] = generated_name(prefix, suffix(token))
    return obj


def owner_ref(owner: Obj) -> dict[str, Any]:
    """A controlling ownerReference to ``owner``."""
    return {
        "apiVersion": owner.get("apiVersion", "v1"),
        "kind": owner["kind"],
        "name": owner["metadata"]["name"],
        "uid": owner["metadata"]["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }


def pod_from_template(
    template: dict[str, Any], name: str, owner: Obj, labels: dict[str, str]
) -> Obj:
    """A pod prototype (name prefix ``name``) from a pod template, owned by ``owner``."""
    meta = template.get("metadata") or {}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": owner["metadata"].get("namespace", "default"),
            "labels": {**(meta.get("labels") or {}), **labels},
            "annotations": dict(meta.get("annotations") or {}),
            "ownerReferences": [owner_ref(owner)],
        },
        "spec": copy.deepcopy(template.get("spec") or {}),
    }


def reconcile_pods(
    host: WorkloadHost, owner: Obj, wanted: dict[str, tuple[int, Obj]], key: str
) -> bool:
    """Make the owner's pods match ``wanted``: group -> (count, pod prototype); pods carry the
    group in label ``key``. Missing pods are created with fresh names; extra ones deleted."""
    changed = False
    pods = [p for p in host.owned(owner, "Pod") if not p["metadata"].get("deletionTimestamp")]
    for group, (count, prototype) in sorted(wanted.items()):
        mine = sorted(
            (p for p in pods if p["metadata"]["labels"].get(key) == group),
            key=lambda p: p["metadata"]["name"],
        )
        for extra in mine[count:]:
            host.remove("Pod", extra["metadata"]["name"], extra["metadata"]["namespace"])
            changed = True
        for _ in range(count - len(mine)):
            pod = copy.deepcopy(prototype)
            serial = host.serial(f"pods/{owner['metadata']['uid']}")
            make = partial(with_suffix, pod, pod["metadata"]["name"])
            create_named(host, make, f"{owner['metadata']['uid']}/{group}/{serial}")
            changed = True
    return changed


def _set_status(host: WorkloadHost, obj: Obj, status: dict[str, Any]) -> bool:
    merged = {**(obj.get("status") or {}), **status}
    if merged == obj.get("status"):
        return False
    host.set_status(obj, merged)
    return True


# ---- KubeRay emulator ----------------------------------------------------------------------------


def reconcile_raycluster(host: WorkloadHost, raycluster: Obj) -> bool:
    """Head and worker pods of a RayCluster, and its status; True if anything changed."""
    name = raycluster["metadata"]["name"]
    spec = raycluster.get("spec") or {}
    labels = raycluster["metadata"].get("labels") or {}
    common = {"ray.io/cluster": name, "app.kubernetes.io/created-by": "kuberay-operator"}
    if c.QUEUE_LABEL in labels:
        common[c.QUEUE_LABEL] = labels[c.QUEUE_LABEL]
    else:
        host.record(
            raycluster,
            "QueueLabelMissing",
            "Queue label missing from RayCluster; pods will remain pending",
            WARNING,
        )
    try:
        worker_groups(spec)
    except RayGroupingError as exc:
        return host.record(raycluster, "InvalidWorkerGroup", str(exc), WARNING)
    head = pod_from_template(
        (spec.get("headGroupSpec") or {}).get("template") or {},
        f"{name}-head-",
        raycluster,
        {
            **common,
            "ray.io/node-type": "head",
            "ray.io/group": "headgroup",
            "ray.io/is-ray-node": "yes",
        },
    )
    wanted: dict[str, tuple[int, Obj]] = {"headgroup": (1, head)}
    for index, group in enumerate(spec.get("workerGroupSpecs") or []):
        group_name = str(group.get("groupName") or f"worker-group-{index}")
        count = (
            0
            if group.get("suspend")
            else int(group.get("replicas", 1) or 0) * int(group.get("numOfHosts", 1) or 1)
        )
        worker = pod_from_template(
            group.get("template") or {},
            f"{name}-{group_name}-worker-",
            raycluster,
            {
                **common,
                "ray.io/node-type": "worker",
                "ray.io/group": group_name,
                "ray.io/is-ray-node": "yes",
            },
        )
        wanted[group_name] = (count, worker)
    for _, prototype in wanted.values():
        prototype["spec"]["schedulerName"] = c.SCHEDULER_NAME
    changed = reconcile_pods(host, raycluster, wanted, "ray.io/group")
    return _ray_status(host, raycluster, wanted) or changed


def _ray_status(host: WorkloadHost, raycluster: Obj, wanted: dict[str, tuple[int, Obj]]) -> bool:
    pods = host.owned(raycluster, "Pod")
    running = [p for p in pods if (p.get("status") or {}).get("phase") == "Running"]
    workers_ready = sum(
        1 for p in running if p["metadata"]["labels"].get("ray.io/node-type") == "worker"
    )
    desired = sum(n for g, (n, _) in wanted.items() if g != "headgroup")
    return _set_status(
        host,
        raycluster,
        {
            "desiredWorkerReplicas": desired,
            "readyWorkerReplicas": workers_ready,
            "availableWorkerReplicas": workers_ready,
            "state": "ready" if pods and len(running) == len(pods) == desired + 1 else "",
        },
    )


def _child_cluster(host: WorkloadHost, parent: Obj, spec_key: str, prefix: str) -> Obj:
    """The RayCluster a RayJob or RayService runs on, created if missing (named ``prefix``
    and a suffix from the parent's uid)."""
    existing = host.owned(parent, "RayCluster")
    if existing:
        return existing[0]
    labels = {k: v for k, v in (parent["metadata"].get("labels") or {}).items()}
    child = {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {
            "name": prefix,
            "namespace": parent["metadata"].get("namespace", "default"),
            "labels": labels,
            "ownerReferences": [owner_ref(parent)],
        },
        "spec": copy.deepcopy((parent.get("spec") or {}).get(spec_key) or {}),
    }
    return create_named(host, partial(with_suffix, child, prefix), parent["metadata"]["uid"])


def reconcile_rayjob(host: WorkloadHost, job: Obj) -> bool:
    """A RayJob's RayCluster and status (K8sJobMode is refused, as KubeRay's kai plugin
    does); True if anything changed."""
    spec = job.get("spec") or {}
    if spec.get("submissionMode", "K8sJobMode") == "K8sJobMode":
        message = (
            "RayJob submissionMode K8sJobMode is not supported with kai-scheduler (the submitter "
            "pod is created after the cluster is ready, so it cannot join the gang); "
            "use submissionMode: HTTPMode or InteractiveMode"
        )
        changed = host.record(job, "UnsupportedSubmissionMode", message, WARNING)
        return (
            _set_status(
                host,
                job,
                {"jobDeploymentStatus": "Failed", "reason": "ValidationFailed", "message": message},
            )
            or changed
        )
    child = _child_cluster(host, job, "rayClusterSpec", f"{job['metadata']['name']}-")
    ready = (child.get("status") or {}).get("state") == "ready"
    return _set_status(
        host,
        job,
        {
            "rayClusterName": child["metadata"]["name"],
            "jobDeploymentStatus": "Running" if ready else "Initializing",
            "jobStatus": "RUNNING" if ready else "PENDING",
        },
    )


def reconcile_rayservice(host: WorkloadHost, service: Obj) -> bool:
    """A RayService's RayCluster and status; True if anything changed."""
    prefix = f"{service['metadata']['name']}-raycluster-"
    child = _child_cluster(host, service, "rayClusterConfig", prefix)
    ready = (child.get("status") or {}).get("state") == "ready"
    return _set_status(
        host,
        service,
        {
            "activeServiceStatus": {"rayClusterName": child["metadata"]["name"]},
            "serviceStatus": "Running" if ready else "Pending",
        },
    )


KUBERAY = (
    ("RayJob", reconcile_rayjob),
    ("RayService", reconcile_rayservice),
    ("RayCluster", reconcile_raycluster),
)
