"""Workload controllers of the embedded cluster: what KubeRay and kube-controller-manager do on
a real cluster, so that the same manifests run locally.

- RayCluster, RayJob, RayService: the KubeRay emulator (controllers/workloads.py).
- Deployment → ReplicaSet → pods; Job → pods (parallelism). Missing pods are recreated, as the
  real controllers do after an eviction.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any

from pykai.controllers.workloads import (
    KUBERAY,
    create_named,
    owner_ref,
    pod_from_template,
    reconcile_pods,
)
from pykai.embedded.events import record
from pykai.model.meta import Obj
from pykai.model.names import bounded_name

if TYPE_CHECKING:
    from pykai.embedded.cluster import EmbeddedCluster


@dataclass(frozen=True, slots=True)
class EmbeddedHost:
    """The embedded cluster as a WorkloadHost."""

    cluster: EmbeddedCluster

    def owned(self, owner: Obj, kind: str) -> list[Obj]:
        """Objects of ``kind`` owned by ``owner``."""
        return [
            o for o in self.cluster.store.owned_by(owner["metadata"]["uid"]) if o["kind"] == kind
        ]

    def create(self, obj: Obj) -> Obj:
        """Create an object."""
        return self.cluster.create(obj)

    def remove(self, kind: str, name: str, namespace: str) -> None:
        """Delete an object."""
        self.cluster.remove(kind, name, namespace)

    def set_status(self, obj: Obj, status: dict[str, Any]) -> None:
        """Replace an object's status."""
        obj["status"] = status
        self.cluster.update(obj)

    def serial(self, scope: str) -> int:
        """The store's counter for ``scope``."""
        return self.cluster.store.counter(scope)

    def record(self, involved: Obj, reason: str, message: str, kind: str) -> bool:
        """An event in the store."""
        return record(self.cluster.store, involved, reason, message, kind)


# ---- kube-controller-manager ---------------------------------------------------------------------


def _deployment(host: EmbeddedHost, deployment: Obj) -> bool:
    """One ReplicaSet per Deployment, for its current template (older ones are deleted),
    named after the template's hash (another hash if that name is taken)."""
    template = (deployment.get("spec") or {}).get("template") or {}
    changed = False
    replicasets = host.owned(deployment, "ReplicaSet")
    current = next(
        (r for r in replicasets if (r.get("spec") or {}).get("template") == template), None
    )
    for old in replicasets:
        if old is not current:
            host.remove("ReplicaSet", old["metadata"]["name"], old["metadata"]["namespace"])
            changed = True
    if current is None:
        create_named(host, partial(_new_replicaset, deployment), repr(template))
        changed = True
    return changed


def _new_replicaset(deployment: Obj, token: str) -> Obj:
    """The Deployment's ReplicaSet, its name and pod-template-hash label made from ``token``."""
    spec = deployment.get("spec") or {}
    template = spec.get("template") or {}
    template_hash = hashlib.sha256(token.encode()).hexdigest()[:10]
    return {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {
            "name": bounded_name(f"{deployment['metadata']['name']}-{template_hash}"),
            "namespace": deployment["metadata"].get("namespace", "default"),
            "labels": {
                **((template.get("metadata") or {}).get("labels") or {}),
                "pod-template-hash": template_hash,
            },
            "ownerReferences": [owner_ref(deployment)],
        },
        "spec": {
            "replicas": int(spec.get("replicas", 1)),
            "selector": spec.get("selector"),
            "template": template,
        },
    }


def _replicaset(host: EmbeddedHost, replicaset: Obj) -> bool:
    spec = replicaset.get("spec") or {}
    prototype = pod_from_template(
        spec.get("template") or {},
        f"{replicaset['metadata']['name']}-",
        replicaset,
        {"pykai.io/set": "pods"},
    )
    return reconcile_pods(
        host, replicaset, {"pods": (int(spec.get("replicas", 1)), prototype)}, "pykai.io/set"
    )


def _job(host: EmbeddedHost, job: Obj) -> bool:
    spec = job.get("spec") or {}
    parallelism = int(spec.get("parallelism", 1))
    completions = spec.get("completions")
    count = min(parallelism, int(completions)) if completions is not None else parallelism
    prototype = pod_from_template(
        spec.get("template") or {},
        f"{job['metadata']['name']}-",
        job,
        {"job-name": job["metadata"]["name"], "pykai.io/set": "pods"},
    )
    return reconcile_pods(host, job, {"pods": (count, prototype)}, "pykai.io/set")


_CONTROLLERS = (
    *KUBERAY,
    ("Deployment", _deployment),
    ("ReplicaSet", _replicaset),
    ("Job", _job),
)


def run_workloads(cluster: EmbeddedCluster) -> bool:
    """Run every workload controller once; True if anything changed."""
    host = EmbeddedHost(cluster)
    changed = False
    for kind, controller in _CONTROLLERS:
        isolation = cluster.isolation(f"the {kind} controller")
        for obj in cluster.list(kind):
            with isolation.isolated(obj):
                cluster.stored_check(obj)
                changed |= controller(host, obj)
    return changed
