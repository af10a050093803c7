"""Kueue's objects as they are stored: the v1beta1 → v1beta2 conversion (kubernetes-sigs/kueue
``apis/kueue/v1beta1/*_conversion.go``) and the CRDs' defaults. pykai stores and prints v1beta2,
Kueue's storage version, and reads either."""

from __future__ import annotations

import copy

from pykai.model.kueue.api import GROUP, V1BETA1, V1BETA2
from pykai.model.meta import Obj


def as_stored(obj: Obj) -> Obj:
    """A Kueue object as the apiserver stores it with Kueue's CRDs: v1beta2, with the CRDs'
    defaults (queueingStrategy BestEffortFIFO, preemption policies Never, flavorFungibility
    MayStopSearch/TryNextFlavor, stopPolicy None). Other kinds come back unchanged."""
    kind = obj.get("kind")
    if kind not in _DEFAULTS or not str(obj.get("apiVersion", "")).startswith(f"{GROUP}/"):
        return obj
    out = to_v1beta2(obj)
    out = copy.deepcopy(out) if out is obj else out
    spec = out.get("spec")
    if isinstance(spec, dict):
        _fill(spec, _DEFAULTS[str(kind)])
    return out


_DEFAULTS: dict[str, Obj] = {
    "ClusterQueue": {
        "queueingStrategy": "BestEffortFIFO",
        "stopPolicy": "None",
        "flavorFungibility": {"whenCanBorrow": "MayStopSearch", "whenCanPreempt": "TryNextFlavor"},
        "preemption": {
            "withinClusterQueue": "Never",
            "reclaimWithinCohort": "Never",
            "borrowWithinCohort": {"policy": "Never"},
        },
    },
    "LocalQueue": {"stopPolicy": "None"},
    "Workload": {"active": True},
    "ProvisioningRequestConfig": {
        "retryStrategy": {
            "backoffLimitCount": 3,
            "backoffBaseSeconds": 60,
            "backoffMaxSeconds": 1800,
        }
    },
}


def _fill(target: Obj, defaults: Obj) -> None:
    """Set what ``target`` lacks from ``defaults``, map by map (the CRDs' ``default``)."""
    for key, value in defaults.items():
        if key not in target:
            target[key] = copy.deepcopy(value)
        elif isinstance(value, dict) and isinstance(target[key], dict):
            _fill(target[key], value)


def to_v1beta2(obj: Obj) -> Obj:
    """The object as v1beta2 (a copy; v1beta2 objects and other kinds come back unchanged):
    ClusterQueue ``cohort`` → ``cohortName``, ``admissionChecks`` → ``admissionChecksStrategy``,
    flavorFungibility ``Borrow``/``Preempt`` → ``MayStopSearch``; LocalQueue
    ``status.flavorUsage`` → ``flavorsUsage``; Workload ``priorityClassName`` +
    ``priorityClassSource`` → ``priorityClassRef``."""
    if obj.get("apiVersion") != V1BETA1:
        return obj
    out = copy.deepcopy(obj)
    out["apiVersion"] = V1BETA2
    spec, status = out.get("spec"), out.get("status")
    kind = out.get("kind")
    if kind == "ClusterQueue" and isinstance(spec, dict):
        _convert_cluster_queue(spec)
    elif kind == "LocalQueue" and isinstance(status, dict):
        if "flavorUsage" in status:
            status["flavorsUsage"] = status.pop("flavorUsage")
        status.pop("flavors", None)
    elif kind == "Workload":
        if isinstance(spec, dict):
            _convert_workload_spec(spec)
        if isinstance(status, dict) and "accumulatedPastExexcutionTimeSeconds" in status:
            status["accumulatedPastExecutionTimeSeconds"] = status.pop(
                "accumulatedPastExexcutionTimeSeconds"
            )
    return out


def _convert_cluster_queue(spec: Obj) -> None:
    if "cohort" in spec:
        spec["cohortName"] = spec.pop("cohort")
    checks = spec.pop("admissionChecks", None)
    if isinstance(checks, list) and checks:
        spec["admissionChecksStrategy"] = {"admissionChecks": [{"name": c} for c in checks]}
    fungibility = spec.get("flavorFungibility")
    if isinstance(fungibility, dict):
        for key, old in (("whenCanBorrow", "Borrow"), ("whenCanPreempt", "Preempt")):
            if fungibility.get(key) == old:
                fungibility[key] = "MayStopSearch"


_SOURCES = {
    "kueue.x-k8s.io/workloadpriorityclass": (GROUP, "WorkloadPriorityClass"),
    "scheduling.k8s.io/priorityclass": ("scheduling.k8s.io", "PriorityClass"),
}


def _convert_workload_spec(spec: Obj) -> None:
    name = spec.pop("priorityClassName", None)
    source = _SOURCES.get(str(spec.pop("priorityClassSource", "")))
    if name and source:
        spec["priorityClassRef"] = {"group": source[0], "kind": source[1], "name": name}
