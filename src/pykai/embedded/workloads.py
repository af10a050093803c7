"""Workload controllers of the embedded cluster: what KubeRay and kube-controller-manager do on
a real cluster, so that the same manifests run locally.

- RayCluster → a head pod and worker pods, named and labelled as KubeRay names them (this is an
  emulator of KubeRay's kai-scheduler integration, not KubeRay itself);
  RayJob and RayService → a RayCluster.
- Deployment → ReplicaSet → pods; Job → pods (parallelism). Missing pods are recreated, as the
  real controllers do after an eviction.
"""

from __future__ import annotations

import copy
import hashlib
from typing import TYPE_CHECKING, Any

from pykai.embedded.events import WARNING, record
from pykai.grouping.ray import RayGroupingError, worker_groups
from pykai.model import constants as c
from pykai.model.meta import Obj

if TYPE_CHECKING:
    from pykai.embedded.cluster import EmbeddedCluster

_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"  # Kubernetes' suffix alphabet (no vowels)


def suffix(seed: str, length: int = 5) -> str:
    """A Kubernetes-style random-looking suffix, reproducible from ``seed``."""
    digest = hashlib.sha256(seed.encode()).digest()
    return "".join(_ALPHABET[b % len(_ALPHABET)] for b in digest[:length])


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


def _owned(cluster: EmbeddedCluster, kind: str, owner: Obj) -> list[Obj]:
    return [o for o in cluster.store.owned_by(owner["metadata"]["uid"]) if o["kind"] == kind]


def _pod_from_template(
    template: dict[str, Any], name: str, owner: Obj, labels: dict[str, str]
) -> Obj:
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


def _reconcile_pods(
    cluster: EmbeddedCluster, owner: Obj, wanted: dict[str, tuple[int, Obj]], key: str
) -> bool:
    """Make the owner's pods match ``wanted``: group -> (count, pod prototype); pods carry the
    group in label ``key``. Missing pods are created with fresh names; extra ones deleted."""
    changed = False
    pods = _owned(cluster, "Pod", owner)
    for group, (count, prototype) in sorted(wanted.items()):
        mine = sorted(
            (p for p in pods if p["metadata"]["labels"].get(key) == group),
            key=lambda p: p["metadata"]["name"],
        )
        for extra in mine[count:]:
            cluster.remove("Pod", extra["metadata"]["name"], extra["metadata"]["namespace"])
            changed = True
        for _ in range(count - len(mine)):
            pod = copy.deepcopy(prototype)
            serial = cluster.store.counter(f"pods/{owner['metadata']['uid']}")
            pod["metadata"]["name"] += suffix(f"{owner['metadata']['uid']}/{group}/{serial}")
            cluster.create(pod)
            changed = True
    return changed


# ---- KubeRay emulator ----------------------------------------------------------------------------


def _ray_pods(cluster: EmbeddedCluster, raycluster: Obj) -> bool:
    name = raycluster["metadata"]["name"]
    spec = raycluster.get("spec") or {}
    labels = raycluster["metadata"].get("labels") or {}
    common = {"ray.io/cluster": name, "app.kubernetes.io/created-by": "kuberay-operator"}
    if c.QUEUE_LABEL in labels:
        common[c.QUEUE_LABEL] = labels[c.QUEUE_LABEL]
    else:
        record(
            cluster.store,
            raycluster,
            "QueueLabelMissing",
            "Queue label missing from RayCluster; pods will remain pending",
            WARNING,
        )
    try:
        worker_groups(spec)
    except RayGroupingError as exc:
        return record(cluster.store, raycluster, "InvalidWorkerGroup", str(exc), WARNING)
    head = _pod_from_template(
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
        worker = _pod_from_template(
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
    changed = _reconcile_pods(cluster, raycluster, wanted, "ray.io/group")
    return _ray_status(cluster, raycluster, wanted) or changed


def _ray_status(
    cluster: EmbeddedCluster, raycluster: Obj, wanted: dict[str, tuple[int, Obj]]
) -> bool:
    pods = _owned(cluster, "Pod", raycluster)
    running = [p for p in pods if (p.get("status") or {}).get("phase") == "Running"]
    workers_ready = sum(
        1 for p in running if p["metadata"]["labels"].get("ray.io/node-type") == "worker"
    )
    desired = sum(n for g, (n, _) in wanted.items() if g != "headgroup")
    status = dict(raycluster.get("status") or {})
    status.update(
        {
            "desiredWorkerReplicas": desired,
            "readyWorkerReplicas": workers_ready,
            "availableWorkerReplicas": workers_ready,
            "state": "ready" if pods and len(running) == len(pods) == desired + 1 else "",
        }
    )
    if status == raycluster.get("status"):
        return False
    raycluster["status"] = status
    cluster.update(raycluster)
    return True


def _child_cluster(cluster: EmbeddedCluster, parent: Obj, spec_key: str, name: str) -> Obj:
    """The RayCluster a RayJob or RayService runs on, created if missing."""
    existing = _owned(cluster, "RayCluster", parent)
    if existing:
        return existing[0]
    labels = {k: v for k, v in (parent["metadata"].get("labels") or {}).items()}
    return cluster.create(
        {
            "apiVersion": "ray.io/v1",
            "kind": "RayCluster",
            "metadata": {
                "name": name,
                "namespace": parent["metadata"].get("namespace", "default"),
                "labels": labels,
                "ownerReferences": [owner_ref(parent)],
            },
            "spec": copy.deepcopy((parent.get("spec") or {}).get(spec_key) or {}),
        }
    )


def _set_status(cluster: EmbeddedCluster, obj: Obj, status: dict[str, Any]) -> bool:
    merged = {**(obj.get("status") or {}), **status}
    if merged == obj.get("status"):
        return False
    obj["status"] = merged
    cluster.update(obj)
    return True


def _rayjob(cluster: EmbeddedCluster, job: Obj) -> bool:
    spec = job.get("spec") or {}
    if spec.get("submissionMode", "K8sJobMode") == "K8sJobMode":
        message = (
            "RayJob submissionMode K8sJobMode is not supported with kai-scheduler (the submitter "
            "pod is created after the cluster is ready, so it cannot join the gang); "
            "use submissionMode: HTTPMode or InteractiveMode"
        )
        changed = record(cluster.store, job, "UnsupportedSubmissionMode", message, WARNING)
        return (
            _set_status(
                cluster,
                job,
                {"jobDeploymentStatus": "Failed", "reason": "ValidationFailed", "message": message},
            )
            or changed
        )
    name = f"{job['metadata']['name']}-{suffix(job['metadata']['uid'])}"
    child = _child_cluster(cluster, job, "rayClusterSpec", name)
    ready = (child.get("status") or {}).get("state") == "ready"
    return _set_status(
        cluster,
        job,
        {
            "rayClusterName": child["metadata"]["name"],
            "jobDeploymentStatus": "Running" if ready else "Initializing",
            "jobStatus": "RUNNING" if ready else "PENDING",
        },
    )


def _rayservice(cluster: EmbeddedCluster, service: Obj) -> bool:
    name = f"{service['metadata']['name']}-raycluster-{suffix(service['metadata']['uid'])}"
    child = _child_cluster(cluster, service, "rayClusterConfig", name)
    ready = (child.get("status") or {}).get("state") == "ready"
    return _set_status(
        cluster,
        service,
        {
            "activeServiceStatus": {"rayClusterName": child["metadata"]["name"]},
            "serviceStatus": "Running" if ready else "Pending",
        },
    )


# ---- kube-controller-manager ---------------------------------------------------------------------


def _deployment(cluster: EmbeddedCluster, deployment: Obj) -> bool:
    spec = deployment.get("spec") or {}
    template = spec.get("template") or {}
    template_hash = hashlib.sha256(repr(template).encode()).hexdigest()[:10]
    name = f"{deployment['metadata']['name']}-{template_hash}"
    changed = False
    replicasets = _owned(cluster, "ReplicaSet", deployment)
    for old in replicasets:
        if old["metadata"]["name"] != name:
            cluster.remove("ReplicaSet", old["metadata"]["name"], old["metadata"]["namespace"])
            changed = True
    if not any(r["metadata"]["name"] == name for r in replicasets):
        cluster.create(
            {
                "apiVersion": "apps/v1",
                "kind": "ReplicaSet",
                "metadata": {
                    "name": name,
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
        )
        changed = True
    return changed


def _replicaset(cluster: EmbeddedCluster, replicaset: Obj) -> bool:
    spec = replicaset.get("spec") or {}
    prototype = _pod_from_template(
        spec.get("template") or {},
        f"{replicaset['metadata']['name']}-",
        replicaset,
        {"pykai.io/set": "pods"},
    )
    return _reconcile_pods(
        cluster, replicaset, {"pods": (int(spec.get("replicas", 1)), prototype)}, "pykai.io/set"
    )


def _job(cluster: EmbeddedCluster, job: Obj) -> bool:
    spec = job.get("spec") or {}
    parallelism = int(spec.get("parallelism", 1))
    completions = spec.get("completions")
    count = min(parallelism, int(completions)) if completions is not None else parallelism
    prototype = _pod_from_template(
        spec.get("template") or {},
        f"{job['metadata']['name']}-",
        job,
        {"job-name": job["metadata"]["name"], "pykai.io/set": "pods"},
    )
    return _reconcile_pods(cluster, job, {"pods": (count, prototype)}, "pykai.io/set")


_CONTROLLERS = (
    ("RayJob", _rayjob),
    ("RayService", _rayservice),
    ("RayCluster", _ray_pods),
    ("Deployment", _deployment),
    ("ReplicaSet", _replicaset),
    ("Job", _job),
)


def run_workloads(cluster: EmbeddedCluster) -> bool:
    """Run every workload controller once; True if anything changed."""
    changed = False
    for kind, controller in _CONTROLLERS:
        for obj in cluster.list(kind):
            changed |= controller(cluster, obj)
    return changed
