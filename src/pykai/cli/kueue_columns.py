"""The table columns of Kueue's kinds, as kubectl prints them from Kueue's CRDs' printer columns
(kubernetes-sigs/kueue ``apis/kueue/v1beta2/*_types.go`` printcolumn markers): a missing value
is an empty cell, ``-o wide`` adds the columns of priority 1 in their place, and a kind without
printer columns shows NAME and AGE."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from pykai.cli.tables import age
from pykai.model.conditions import condition_of
from pykai.model.meta import Obj

if TYPE_CHECKING:
    from pykai.cli.columns import Context

Cell = Callable[[Obj, "Context"], str]
Columns = list[tuple[str, Cell]]


def _at(*path: str) -> Cell:
    """The printer column at ``path``: empty when missing."""

    def cell(obj: Obj, _: Context) -> str:
        value: Any = obj
        for key in path:
            value = value.get(key) if isinstance(value, dict) else None
        if value is None:
            return ""
        return str(value).lower() if isinstance(value, bool) else str(value)

    return cell


def _condition(kind: str) -> Cell:
    """``.status.conditions[?(@.type==kind)].status``."""

    def cell(obj: Obj, _: Context) -> str:
        found = condition_of(obj, kind)
        return str(found.get("status")) if found else ""

    return cell


def _name(obj: Obj, _: Context) -> str:
    return str(obj["metadata"]["name"])


def _age(obj: Obj, ctx: Context) -> str:
    return age(obj["metadata"].get("creationTimestamp"), ctx.now)


_NAME_AGE: Columns = [("NAME", _name), ("AGE", _age)]
_PENDING = ("PENDING WORKLOADS", _at("status", "pendingWorkloads"))
_ADMITTED = ("ADMITTED WORKLOADS", _at("status", "admittedWorkloads"))
_CLUSTER_QUEUE: Columns = [("NAME", _name), ("COHORT", _at("spec", "cohortName")), _PENDING]
_CLUSTER_QUEUE_WIDE: Columns = [
    *_CLUSTER_QUEUE[:2],
    ("STRATEGY", _at("spec", "queueingStrategy")),
    _PENDING,
    _ADMITTED,
]
_LOCAL_QUEUE: Columns = [
    ("NAME", _name),
    ("CLUSTERQUEUE", _at("spec", "clusterQueue")),
    _PENDING,
    _ADMITTED,
]
_WORKLOAD: Columns = [
    ("NAME", _name),
    ("QUEUE", _at("spec", "queueName")),
    ("RESERVED IN", _at("status", "admission", "clusterQueue")),
    ("ADMITTED", _condition("Admitted")),
    ("FINISHED", _condition("Finished")),
    ("AGE", _age),
]
_PRIORITY_CLASS: Columns = [("NAME", _name), ("VALUE", _at("value"))]
_PROVISIONING_REQUEST: Columns = [
    ("NAME", _name),
    ("ACCEPTED", _condition("Accepted")),
    ("PROVISIONED", _condition("Provisioned")),
    ("FAILED", _condition("Failed")),
    ("AGE", _age),
]  # as the gang guide shows them (cluster-autoscaler's CRD on GKE)

KUEUE_COLUMNS: dict[str, tuple[Columns, Columns]] = {
    "ClusterQueue": (_CLUSTER_QUEUE, _CLUSTER_QUEUE_WIDE),
    "LocalQueue": (_LOCAL_QUEUE, _LOCAL_QUEUE),
    "Workload": (_WORKLOAD, _WORKLOAD),
    "WorkloadPriorityClass": (_PRIORITY_CLASS, _PRIORITY_CLASS),
    "ProvisioningRequest": (_PROVISIONING_REQUEST, _PROVISIONING_REQUEST),
    **{
        kind: (_NAME_AGE, _NAME_AGE)
        for kind in ("ResourceFlavor", "Cohort", "AdmissionCheck", "ProvisioningRequestConfig")
    },
}
"""Kind → (columns, ``-o wide`` columns)."""
