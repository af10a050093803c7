"""The kinds pykai knows: API group, served versions, plural, scope, short names and the name
rule Kubernetes applies to their objects. One table, read by the store (scope), the REST client
(paths), the CLI (aliases) and validation (known kinds and apiVersions)."""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Literal

# how Kubernetes checks metadata.name of a kind (apimachinery's validation functions)
NameRule = Literal["subdomain", "label", "dns1035", "path"]


@dataclass(frozen=True, slots=True)
class KindSpec:
    """Where a kind lives in the API and how its objects are named."""

    kind: str
    group: str
    versions: tuple[str, ...]  # accepted versions, the preferred one (what pykai writes) first
    plural: str
    namespaced: bool
    short: tuple[str, ...] = ()
    names: NameRule = "subdomain"
    max_name: int = 0  # a tighter name length than the rule's, when Kubernetes has one

    @property
    def version(self) -> str:
        """The preferred version (the one pykai reads and writes)."""
        return self.versions[0]

    @property
    def api_version(self) -> str:
        """``group/version`` of the preferred version, or ``v1`` for the core group."""
        return f"{self.group}/{self.versions[0]}" if self.group else self.versions[0]

    @property
    def api_versions(self) -> tuple[str, ...]:
        """Every accepted apiVersion, preferred first."""
        return tuple(f"{self.group}/{v}" if self.group else v for v in self.versions)

    @property
    def display(self) -> str:
        """``queue.scheduling.run.ai`` or ``pod``: how kubectl names the kind in apply and
        delete output."""
        return f"{self.kind.lower()}.{self.group}" if self.group else self.kind.lower()

    @property
    def resource(self) -> str:
        """``pods`` or ``queues.scheduling.run.ai``: how kubectl names it in errors."""
        return f"{self.plural}.{self.group}" if self.group else self.plural


def _core(
    kind: str, plural: str, namespaced: bool = True, short: str = "", names: NameRule = "subdomain"
) -> KindSpec:
    """A kind of the core group (``v1``)."""
    return KindSpec(kind, "", ("v1",), plural, namespaced, (short,) if short else (), names)


_RBAC = "rbac.authorization.k8s.io"
_ADMISSION = "admissionregistration.k8s.io"

_KUEUE_GROUP = "kueue.x-k8s.io"
_KUEUE_VERSIONS = ("v1beta2", "v1beta1")  # pykai stores and prints v1beta2, Kueue's storage version


def _kueue(kind: str, plural: str, namespaced: bool, *short: str) -> KindSpec:
    """A kind of Kueue's API (kueue.x-k8s.io)."""
    return KindSpec(kind, _KUEUE_GROUP, _KUEUE_VERSIONS, plural, namespaced, short)


# Kueue's kinds, with its short names except LocalQueue's ``queue``/``queues``: in pykai those
# stay KAI's Queue (``lq`` reaches a LocalQueue).
_KUEUE = (
    _kueue("ResourceFlavor", "resourceflavors", False, "flavor", "flavors", "rf"),
    _kueue("ClusterQueue", "clusterqueues", False, "cq"),
    _kueue("Cohort", "cohorts", False, "co"),
    _kueue("LocalQueue", "localqueues", True, "lq"),
    _kueue("Workload", "workloads", True, "kwl", "kueueworkload", "kueueworkloads"),
    _kueue("WorkloadPriorityClass", "workloadpriorityclasses", False, "wpc"),
    _kueue("AdmissionCheck", "admissionchecks", False, "ac"),
    _kueue("ProvisioningRequestConfig", "provisioningrequestconfigs", False, "prc"),
)

# Kubernetes v1.34's built-in kinds a manifest for pykai may carry, in the versions a v1.34
# apiserver serves (`kubectl api-resources`), and the custom kinds of KAI, Kueue, KubeRay and
# Kubeflow that pykai reads.
KIND_SPECS: tuple[KindSpec, ...] = (
    _core("Pod", "pods", True, "po"),
    _core("Node", "nodes", False, "no"),
    _core("Namespace", "namespaces", False, "ns", names="label"),
    _core("Event", "events", True, "ev"),
    _core("Secret", "secrets"),
    _core("ConfigMap", "configmaps", True, "cm"),
    _core("Service", "services", True, "svc", names="dns1035"),
    _core("ServiceAccount", "serviceaccounts", True, "sa"),
    _core("Endpoints", "endpoints", True, "ep"),
    _core("LimitRange", "limitranges", True, "limits"),
    _core("ResourceQuota", "resourcequotas", True, "quota"),
    _core("PersistentVolumeClaim", "persistentvolumeclaims", True, "pvc"),
    _core("PersistentVolume", "persistentvolumes", False, "pv"),
    KindSpec("Queue", "scheduling.run.ai", ("v2",), "queues", False, ("q",)),
    KindSpec("PodGroup", "scheduling.run.ai", ("v2alpha2",), "podgroups", True, ("pg",)),
    KindSpec("BindRequest", "scheduling.run.ai", ("v1alpha2",), "bindrequests", True),
    KindSpec("SchedulingShard", "kai.scheduler", ("v1",), "schedulingshards", False),
    KindSpec("PriorityClass", "scheduling.k8s.io", ("v1",), "priorityclasses", False, ("pc",)),
    KindSpec("Deployment", "apps", ("v1",), "deployments", True, ("deploy",)),
    KindSpec("ReplicaSet", "apps", ("v1",), "replicasets", True, ("rs",)),
    KindSpec("StatefulSet", "apps", ("v1",), "statefulsets", True, ("sts",)),
    KindSpec("DaemonSet", "apps", ("v1",), "daemonsets", True, ("ds",)),
    KindSpec("Job", "batch", ("v1",), "jobs", True),
    KindSpec("CronJob", "batch", ("v1",), "cronjobs", True, ("cj",), max_name=52),
    KindSpec("RayCluster", "ray.io", ("v1",), "rayclusters", True),
    KindSpec("RayJob", "ray.io", ("v1",), "rayjobs", True),
    KindSpec("RayService", "ray.io", ("v1",), "rayservices", True),
    KindSpec("PyTorchJob", "kubeflow.org", ("v1",), "pytorchjobs", True),
    *_KUEUE,
    # what Kueue's ProvisioningRequest admission check makes (cluster-autoscaler's API)
    KindSpec(
        "ProvisioningRequest",
        "autoscaling.x-k8s.io",
        ("v1",),
        "provisioningrequests",
        True,
        ("provreq", "provreqs"),
    ),
    _core("PodTemplate", "podtemplates"),
    KindSpec("Lease", "coordination.k8s.io", ("v1",), "leases", True),
    KindSpec("PodDisruptionBudget", "policy", ("v1",), "poddisruptionbudgets", True, ("pdb",)),
    KindSpec("NetworkPolicy", "networking.k8s.io", ("v1",), "networkpolicies", True, ("netpol",)),
    KindSpec("Ingress", "networking.k8s.io", ("v1",), "ingresses", True, ("ing",)),
    KindSpec("StorageClass", "storage.k8s.io", ("v1",), "storageclasses", False, ("sc",)),
    KindSpec("Role", _RBAC, ("v1",), "roles", True, names="path"),
    KindSpec("RoleBinding", _RBAC, ("v1",), "rolebindings", True, names="path"),
    KindSpec("ClusterRole", _RBAC, ("v1",), "clusterroles", False, names="path"),
    KindSpec("ClusterRoleBinding", _RBAC, ("v1",), "clusterrolebindings", False, names="path"),
    KindSpec(
        "ValidatingWebhookConfiguration",
        _ADMISSION,
        ("v1",),
        "validatingwebhookconfigurations",
        False,
    ),
    KindSpec(
        "MutatingWebhookConfiguration", _ADMISSION, ("v1",), "mutatingwebhookconfigurations", False
    ),
    KindSpec(
        "CustomResourceDefinition",
        "apiextensions.k8s.io",
        ("v1",),
        "customresourcedefinitions",
        False,
        ("crd", "crds"),
    ),
)
BY_KIND: dict[str, KindSpec] = {k.kind: k for k in KIND_SPECS}
CLUSTER_SCOPED = frozenset(k.kind for k in KIND_SPECS if not k.namespaced)
KUEUE_KINDS = tuple(k.kind for k in _KUEUE)
"""Kueue's kinds (kueue.x-k8s.io), whose objects pykai checks as Kueue does
(model/kueue/validation.py)."""

# Versions of the built-in kinds above that Kubernetes stopped serving, and the release that
# stopped (Kubernetes' deprecated API migration guide); a v1.34 apiserver has none of them.
_REMOVED_IN: dict[str, dict[str, tuple[str, ...]]] = {
    "v1.16": {
        "NetworkPolicy": ("extensions/v1beta1",),
        "DaemonSet": ("extensions/v1beta1", "apps/v1beta2"),
        "Deployment": ("extensions/v1beta1", "apps/v1beta1", "apps/v1beta2"),
        "StatefulSet": ("apps/v1beta1", "apps/v1beta2"),
        "ReplicaSet": ("extensions/v1beta1", "apps/v1beta1", "apps/v1beta2"),
    },
    "v1.22": {
        "ValidatingWebhookConfiguration": (f"{_ADMISSION}/v1beta1",),
        "MutatingWebhookConfiguration": (f"{_ADMISSION}/v1beta1",),
        "CustomResourceDefinition": ("apiextensions.k8s.io/v1beta1",),
        "Lease": ("coordination.k8s.io/v1beta1",),
        "Ingress": ("extensions/v1beta1", "networking.k8s.io/v1beta1"),
        "Role": (f"{_RBAC}/v1beta1",),
        "RoleBinding": (f"{_RBAC}/v1beta1",),
        "ClusterRole": (f"{_RBAC}/v1beta1",),
        "ClusterRoleBinding": (f"{_RBAC}/v1beta1",),
        "PriorityClass": ("scheduling.k8s.io/v1beta1",),
        "StorageClass": ("storage.k8s.io/v1beta1",),
    },
    "v1.25": {
        "CronJob": ("batch/v1beta1",),
        "PodDisruptionBudget": ("policy/v1beta1",),
    },
}
REMOVED: dict[tuple[str, str], str] = {
    (kind, api_version): release
    for release, removed in _REMOVED_IN.items()
    for kind, api_versions in removed.items()
    for api_version in api_versions
}
"""(kind, apiVersion) -> the Kubernetes release that stopped serving that version of the kind."""

# What serves the kinds of the API groups that are not Kubernetes' own: what to install when
# an apiserver has none of them.
_PROVIDERS = {
    "scheduling.run.ai": "KAI's CRDs (`pykai crds`, or pykai's or KAI's Helm chart)",
    "kai.scheduler": "KAI's CRDs (`pykai crds`, or pykai's or KAI's Helm chart)",
    "kueue.x-k8s.io": "Kueue (its CRDs)",
    "ray.io": "KubeRay (its CRDs, e.g. with the kuberay-operator Helm chart)",
    "kubeflow.org": "Kubeflow's training operator (its CRDs)",
    "autoscaling.x-k8s.io": "the ProvisioningRequest CRD (cluster-autoscaler's)",
}


def provider(spec: KindSpec) -> str:
    """What to install for an apiserver to serve ``spec``'s kind, in words."""
    if spec.group in _PROVIDERS:
        return _PROVIDERS[spec.group]
    return f"a Kubernetes apiserver that serves {spec.api_version} (v1.34 does)"


def known(kind: str) -> KindSpec | None:
    """The kind's spec, or None if pykai does not know it."""
    return BY_KIND.get(kind)


def suggestion(kind: str) -> str | None:
    """The known kind a mistyped ``kind`` most likely means (``Queu`` → ``Queue``)."""
    lowered = {k.lower(): k for k in BY_KIND}
    if kind.lower() in lowered:
        return lowered[kind.lower()]
    close = difflib.get_close_matches(kind.lower(), list(lowered), n=1, cutoff=0.75)
    return lowered[close[0]] if close else None
