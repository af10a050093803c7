"""Kind names as users type them (pods, po, queue, pg, ...) and as they print."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class KindInfo:
    """A kind: its canonical name, its API group for printing, and whether it is namespaced."""

    kind: str
    group: str
    namespaced: bool
    plural: str


KINDS = [
    KindInfo("Pod", "", True, "pods"),
    KindInfo("Node", "", False, "nodes"),
    KindInfo("Namespace", "", False, "namespaces"),
    KindInfo("Event", "", True, "events"),
    KindInfo("Secret", "", True, "secrets"),
    KindInfo("Queue", "scheduling.run.ai", False, "queues"),
    KindInfo("PodGroup", "scheduling.run.ai", True, "podgroups"),
    KindInfo("PriorityClass", "scheduling.k8s.io", False, "priorityclasses"),
    KindInfo("SchedulingShard", "kai.scheduler", False, "schedulingshards"),
    KindInfo("Deployment", "apps", True, "deployments"),
    KindInfo("ReplicaSet", "apps", True, "replicasets"),
    KindInfo("StatefulSet", "apps", True, "statefulsets"),
    KindInfo("Job", "batch", True, "jobs"),
    KindInfo("RayCluster", "ray.io", True, "rayclusters"),
    KindInfo("RayJob", "ray.io", True, "rayjobs"),
    KindInfo("RayService", "ray.io", True, "rayservices"),
]
_SHORT = {
    "po": "Pod", "no": "Node", "ns": "Namespace", "ev": "Event", "q": "Queue", "pg": "PodGroup",
    "pc": "PriorityClass", "deploy": "Deployment", "rs": "ReplicaSet", "sts": "StatefulSet",
}  # fmt: skip
_BY_NAME: dict[str, KindInfo] = {}
for _info in KINDS:
    for _alias in (_info.kind.lower(), _info.plural, _info.plural.rstrip("s")):
        _BY_NAME[_alias] = _info
for _alias, _kind in _SHORT.items():
    _BY_NAME[_alias] = next(i for i in KINDS if i.kind == _kind)


class UnknownKindError(ValueError):
    """A kind name pykai does not know."""


def resolve(name: str) -> KindInfo:
    """The kind a user means by ``name`` (case-insensitive; plural, singular or short)."""
    info = _BY_NAME.get(name.lower().split(".")[0])
    if info is None:
        raise UnknownKindError(f'the server doesn\'t have a resource type "{name}"')
    return info


def info_for(kind: str) -> KindInfo:
    """The KindInfo of a canonical kind, or a namespaced guess for kinds not listed."""
    for info in KINDS:
        if info.kind == kind:
            return info
    return KindInfo(kind, "", True, kind.lower() + "s")


def display_name(kind: str) -> str:
    """``queue.scheduling.run.ai`` / ``pod``: how kubectl names a kind in its output."""
    info = info_for(kind)
    return f"{kind.lower()}.{info.group}" if info.group else kind.lower()
