"""Builders of Kubernetes-shaped objects, for tests, benchmarks, demos and simulation."""

from __future__ import annotations

from typing import Any

from pykai.model import constants as c
from pykai.model.meta import Obj


def node(
    name: str,
    *,
    gpus: int = 8,
    cpu: str = "64",
    memory: str = "512Gi",
    gpu_memory_mib: int = 81920,
    labels: dict[str, str] | None = None,
    taints: list[dict[str, str]] | None = None,
) -> Obj:
    """A Ready node with GPUs in allocatable."""
    all_labels = {"kubernetes.io/hostname": name, **(labels or {})}
    if gpus:
        all_labels.setdefault(c.GPU_MEMORY_NODE_LABEL, str(gpu_memory_mib))
    allocatable = {"cpu": cpu, "memory": memory, "pods": "110"}
    if gpus:
        allocatable[c.GPU_RESOURCE] = str(gpus)
    spec: dict[str, Any] = {"taints": taints} if taints else {}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": all_labels},
        "spec": spec,
        "status": {"allocatable": allocatable, "capacity": dict(allocatable)},
    }


def queue(
    name: str,
    *,
    parent: str = "",
    gpu: tuple[float, float, float] = (-1, -1, 1),
    cpu: tuple[float, float, float] = (-1, -1, 1),
    memory: tuple[float, float, float] = (-1, -1, 1),
    priority: int | None = None,
) -> Obj:
    """A Queue; each resource is (quota, limit, overQuotaWeight)."""

    def block(values: tuple[float, float, float]) -> dict[str, float]:
        return {"quota": values[0], "limit": values[1], "overQuotaWeight": values[2]}

    spec: dict[str, Any] = {
        "resources": {"cpu": block(cpu), "gpu": block(gpu), "memory": block(memory)}
    }
    if parent:
        spec["parentQueue"] = parent
    if priority is not None:
        spec["priority"] = priority
    return {"apiVersion": c.QUEUE_API, "kind": "Queue", "metadata": {"name": name}, "spec": spec}


def podgroup(
    name: str,
    *,
    queue: str,
    min_member: int = 1,
    priority_class: str = "train",
    namespace: str = "default",
    sub_groups: list[dict[str, Any]] | None = None,
    uid: str = "",
    creation: str = "",
    preemptibility: str = "",
) -> Obj:
    """A PodGroup (the gang)."""
    spec: dict[str, Any] = {
        "minMember": min_member,
        "queue": queue,
        "priorityClassName": priority_class,
    }
    if sub_groups:
        spec["subGroups"] = sub_groups
    if preemptibility:
        spec["preemptibility"] = preemptibility
    return {
        "apiVersion": c.PODGROUP_API,
        "kind": "PodGroup",
        "metadata": _meta(name, namespace, uid, creation),
        "spec": spec,
    }


def pod(
    name: str,
    *,
    group: str = "",
    gpus: int = 0,
    cpu: str = "1",
    memory: str = "1Gi",
    namespace: str = "default",
    node_name: str = "",
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
    uid: str = "",
    creation: str = "",
    scheduler: str = c.SCHEDULER_NAME,
    phase: str = "",
) -> Obj:
    """A one-container pod; ``group`` sets the pod-group-name annotation."""
    meta = _meta(name, namespace, uid, creation)
    meta["labels"] = dict(labels or {})
    meta["annotations"] = dict(annotations or {})
    if group:
        meta["annotations"][c.POD_GROUP_ANNOTATION] = group
    requests: dict[str, str] = {"cpu": cpu, "memory": memory}
    limits: dict[str, str] = {}
    if gpus:
        requests[c.GPU_RESOURCE] = limits[c.GPU_RESOURCE] = str(gpus)
    spec: dict[str, Any] = {
        "schedulerName": scheduler,
        "containers": [
            {
                "name": "main",
                "image": "busybox",
                "resources": {"requests": requests, "limits": limits},
            }
        ],
    }
    if node_name:
        spec["nodeName"] = node_name
    obj: Obj = {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}
    if phase:
        obj["status"] = {"phase": phase}
    return obj


def _meta(name: str, namespace: str, uid: str, creation: str) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": namespace}
    if uid:
        meta["uid"] = uid
    if creation:
        meta["creationTimestamp"] = creation
    return meta
