"""Kind names as users type them (pods, po, queue, pg, pod/NAME, ...) and as kubectl prints them."""

from __future__ import annotations

from dataclasses import dataclass

from pykai.embedded.store import CLUSTER_SCOPED


@dataclass(frozen=True, slots=True)
class KindInfo:
    """A kind: its canonical name, API group, plural and short names."""

    kind: str
    group: str
    plural: str
    short: tuple[str, ...] = ()

    @property
    def namespaced(self) -> bool:
        """True unless the store keeps the kind cluster-scoped."""
        return self.kind not in CLUSTER_SCOPED

    @property
    def display(self) -> str:
        """``queue.scheduling.run.ai`` or ``pod``: how kubectl names the kind in apply and
        delete output."""
        return f"{self.kind.lower()}.{self.group}" if self.group else self.kind.lower()

    @property
    def resource(self) -> str:
        """``pods`` or ``queues.scheduling.run.ai``: how kubectl names it in errors."""
        return f"{self.plural}.{self.group}" if self.group else self.plural


KINDS = (
    KindInfo("Pod", "", "pods", ("po",)),
    KindInfo("Node", "", "nodes", ("no",)),
    KindInfo("Namespace", "", "namespaces", ("ns",)),
    KindInfo("Event", "", "events", ("ev",)),
    KindInfo("Secret", "", "secrets"),
    KindInfo("ConfigMap", "", "configmaps", ("cm",)),
    KindInfo("Service", "", "services", ("svc",)),
    KindInfo("ServiceAccount", "", "serviceaccounts", ("sa",)),
    KindInfo("PersistentVolumeClaim", "", "persistentvolumeclaims", ("pvc",)),
    KindInfo("PersistentVolume", "", "persistentvolumes", ("pv",)),
    KindInfo("Queue", "scheduling.run.ai", "queues", ("q",)),
    KindInfo("PodGroup", "scheduling.run.ai", "podgroups", ("pg",)),
    KindInfo("BindRequest", "scheduling.run.ai", "bindrequests"),
    KindInfo("PriorityClass", "scheduling.k8s.io", "priorityclasses", ("pc",)),
    KindInfo("SchedulingShard", "kai.scheduler", "schedulingshards"),
    KindInfo("Deployment", "apps", "deployments", ("deploy",)),
    KindInfo("ReplicaSet", "apps", "replicasets", ("rs",)),
    KindInfo("StatefulSet", "apps", "statefulsets", ("sts",)),
    KindInfo("DaemonSet", "apps", "daemonsets", ("ds",)),
    KindInfo("Job", "batch", "jobs"),
    KindInfo("RayCluster", "ray.io", "rayclusters"),
    KindInfo("RayJob", "ray.io", "rayjobs"),
    KindInfo("RayService", "ray.io", "rayservices"),
    KindInfo("PyTorchJob", "kubeflow.org", "pytorchjobs"),
)
_BY_NAME = {
    alias: info for info in KINDS for alias in (info.kind.lower(), info.plural, *info.short)
}


class UnknownKindError(ValueError):
    """A kind name pykai does not know."""


def resolve(name: str) -> KindInfo:
    """The kind a user means by ``name``: case-insensitive, plural, singular or short, optionally
    qualified by its group (``queues.scheduling.run.ai``)."""
    info = _BY_NAME.get(name.lower().split(".", 1)[0])
    if info is None:
        raise UnknownKindError(f'the server doesn\'t have a resource type "{name}"')
    return info


def resolve_target(kind: str, name: str | None) -> tuple[KindInfo, str | None]:
    """``KIND NAME`` or kubectl's ``KIND/NAME`` form, as a kind and a name (or None)."""
    if name is None and "/" in kind:
        kind, name = kind.split("/", 1)
    return resolve(kind), name


def info_for(kind: str, api_version: str = "") -> KindInfo:
    """The KindInfo of a canonical kind; for a kind pykai does not list, one made from the
    object's apiVersion (``example.com/v1`` gives group ``example.com``)."""
    for info in KINDS:
        if info.kind == kind:
            return info
    group = api_version.rsplit("/", 1)[0] if "/" in api_version else ""
    return KindInfo(kind, group, kind.lower() + "s")


def display_name(kind: str, api_version: str = "") -> str:
    """How kubectl names a kind in apply and delete output (see :attr:`KindInfo.display`)."""
    return info_for(kind, api_version).display
