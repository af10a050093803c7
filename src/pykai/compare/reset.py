"""Emptying a side's cluster between two scenarios of a batch (pykai.compare.run.Side), so
that one LocalCluster serves many scenarios.

Contract of ``reset(api, deadline)``: with the side's scheduler stopped, it deletes every
object a scenario creates or a scheduler writes about it (``KINDS``: RayServices, RayClusters,
Deployments and ReplicaSets, then pods, at once, their finalizers removed first, then the
BindRequests, PodGroups, Queues, Nodes and Events, in every namespace but ``kube-system``)
and repeats until ``leftovers`` finds none or ``deadline`` seconds have passed; it returns the
leftovers (empty: the cluster holds nothing of the last scenario). Namespaces, the
PriorityClasses and the CRDs stay: they are the same for every scenario.

``leftovers(api)`` is the check itself: each remaining object as ``Kind namespace/name``."""

from __future__ import annotations

import time

from pykai.kube.api import ApiError, KubeApi
from pykai.model.kinds import BY_KIND, CLUSTER_SCOPED
from pykai.model.meta import Obj

# deleted in this order: what makes pods first (the KubeRay operator and the Deployment
# controller would make them again), then pods, so no controller acts on what goes next
KINDS = (
    "RayService",
    "RayCluster",
    "Deployment",
    "ReplicaSet",
    "Pod",
    "BindRequest",
    "PodGroup",
    "Queue",
    "Node",
    "Event",
)
KEPT_NAMESPACES = frozenset({"kube-system"})


def leftovers(api: KubeApi) -> list[str]:
    """What remains of a scenario (see the module's contract)."""
    found = []
    for kind in KINDS:
        for obj in api.list(BY_KIND[kind])[0]:
            meta = obj["metadata"]
            namespace = str(meta.get("namespace") or "")
            if namespace not in KEPT_NAMESPACES:
                found.append(f"{kind} {namespace}/{meta['name']}".replace(" /", " "))
    return found


def reset(api: KubeApi, deadline: float = 60.0) -> list[str]:
    """Delete what a scenario left (see the module's contract); the leftovers after
    ``deadline`` seconds (none: the cluster is empty)."""
    end = time.monotonic() + deadline
    while True:
        for kind in KINDS:
            _delete_all(api, kind)
        remaining = leftovers(api)
        if not remaining or time.monotonic() > end:
            return remaining
        time.sleep(0.2)


def _delete_all(api: KubeApi, kind: str) -> None:
    """Every object of ``kind`` outside ``KEPT_NAMESPACES`` deleted, one delete-collection
    request per namespace (pods at once: grace 0, as their kubelet does once the containers
    stopped)."""
    spec = BY_KIND[kind]
    found = api.list(spec)[0]
    for obj in found if kind == "Pod" else ():
        meta = obj["metadata"]
        if meta.get("finalizers") and meta.get("namespace") not in KEPT_NAMESPACES:
            _release(api, meta)
    if kind in CLUSTER_SCOPED:
        namespaces = {""} if found else set()
    else:
        namespaces = {str(o["metadata"].get("namespace") or "default") for o in found}
    params = {"gracePeriodSeconds": "0"} if kind == "Pod" else {}
    for namespace in sorted(namespaces - KEPT_NAMESPACES):
        response = api.http.delete(api.path(spec, namespace), params=params)
        if response.status_code >= 300 and response.status_code != 404:
            raise ApiError(response.status_code, response.text)


def _release(api: KubeApi, meta: Obj) -> None:
    """A pod's finalizers removed (a scenario's terminating pod is held by one), so that its
    delete removes it; a pod gone meanwhile is no error."""
    try:
        api.patch(
            BY_KIND["Pod"], meta["name"], {"metadata": {"finalizers": None}}, meta["namespace"]
        )
    except ApiError as exc:
        if exc.status != 404:
            raise
