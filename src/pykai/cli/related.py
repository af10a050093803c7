"""Objects related to the one being shown: a workload's pods, a PodGroup's pods, a node's pods
and what they request."""

from __future__ import annotations

import builtins
from collections.abc import Iterable
from typing import Protocol

from pykai.model import constants as c
from pykai.model.meta import Obj
from pykai.model.node import parse_node
from pykai.model.pod import parse_pod
from pykai.model.positions import Board
from pykai.model.resources import Resources

# Kinds a workload creates on the way to its pods (Deployment -> ReplicaSet -> Pod,
# RayService -> RayCluster -> Pod, ...).
_OWNED_KINDS = ("ReplicaSet", "RayCluster", "Job", "Pod")


class Reader(Protocol):
    """What printers need of a cluster: its objects, its events, its clock and the positions
    recorded in it."""

    def list(self, kind: str, namespace: str | None = None) -> builtins.list[Obj]:
        """Objects of a kind, in one namespace or (None) all."""
        ...

    def get(self, kind: str, name: str, namespace: str = "") -> Obj | None:
        """One object, or None."""
        ...

    def events_for(self, kind: str, name: str, namespace: str = "") -> builtins.list[Obj]:
        """Events about one object, oldest first."""
        ...

    def now(self) -> float:
        """The cluster's clock, in seconds since the epoch."""
        ...

    def positions(self) -> Board | None:
        """Where the pending jobs stand, as the scheduler last recorded it and if still
        current (None: work them out, cli/pending.py)."""
        ...


def descendant_pods(reader: Reader, owner: Obj) -> list[Obj]:
    """Pods ``owner`` owns, directly or through the objects it owns, by ownerReferences."""
    namespace = owner["metadata"].get("namespace") or "default"
    children: dict[str, list[Obj]] = {}
    for kind in _OWNED_KINDS:
        for obj in reader.list(kind, namespace):
            for ref in obj["metadata"].get("ownerReferences") or []:
                children.setdefault(str(ref.get("uid")), []).append(obj)
    pods: list[Obj] = []
    frontier = [obj for obj in children.get(str(owner["metadata"].get("uid")), [])]
    while frontier:
        obj = frontier.pop(0)
        if obj["kind"] == "Pod":
            pods.append(obj)
        else:
            frontier += children.get(str(obj["metadata"].get("uid")), [])
    return pods


def podgroup_pods(reader: Reader, podgroup: Obj) -> list[Obj]:
    """The pods annotated as members of ``podgroup``."""
    name = podgroup["metadata"]["name"]
    return [
        pod
        for pod in reader.list("Pod", podgroup["metadata"].get("namespace") or "default")
        if (pod["metadata"].get("annotations") or {}).get(c.POD_GROUP_ANNOTATION) == name
    ]


def pods_by_node(pods: Iterable[Obj]) -> dict[str, list[Obj]]:
    """Bound pods that still hold resources (not Succeeded or Failed), by node name."""
    placed: dict[str, list[Obj]] = {}
    for pod in pods:
        node = (pod.get("spec") or {}).get("nodeName")
        if node and (pod.get("status") or {}).get("phase") not in ("Succeeded", "Failed"):
            placed.setdefault(node, []).append(pod)
    return placed


def requested(pod: Obj, gpu_memory_mib: float = 0.0) -> Resources:
    """What a pod takes: cpu, memory, and GPUs counting fractions and GPU memory (converted
    with the memory of one GPU of its node)."""
    view = parse_pod(pod)
    gpus = view.gpu.devices_equivalent(gpu_memory_mib)
    return Resources(view.requests.cpu, view.requests.memory, gpus)


def usage(node: Obj, pods: Iterable[Obj]) -> Resources:
    """What ``pods`` (those on ``node``) request in total."""
    gpu_memory = parse_node(node).gpu_memory_mib
    total = Resources.ZERO
    for pod in pods:
        total += requested(pod, gpu_memory)
    return total
