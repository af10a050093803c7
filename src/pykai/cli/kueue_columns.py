"""The table columns of Kueue's kinds, as kubectl prints them from Kueue's CRDs' printer columns
(kubernetes-sigs/kueue ``apis/kueue/v1beta2/*_types.go`` printcolumn markers): a missing value
is an empty cell, ``-o wide`` adds the columns of priority 1 in their place, and a kind without
printer columns shows NAME and AGE."""

from __future__ import annotations

from pykai.cli.cells import NAME_AGE, Cell, Column, Context, age_cell, name_cell, printer_column
from pykai.model.conditions import condition_of
from pykai.model.meta import Obj


def _condition(kind: str) -> Cell:
    """``.status.conditions[?(@.type==kind)].status``."""

    def cell(obj: Obj, _: Context) -> str:
        found = condition_of(obj, kind)
        return str(found.get("status")) if found else ""

    return cell


_PENDING = ("PENDING WORKLOADS", printer_column("status", "pendingWorkloads"))
_ADMITTED = ("ADMITTED WORKLOADS", printer_column("status", "admittedWorkloads"))
_CLUSTER_QUEUE: list[Column] = [
    ("NAME", name_cell),
    ("COHORT", printer_column("spec", "cohortName")),
    _PENDING,
]
_CLUSTER_QUEUE_WIDE: list[Column] = [
    *_CLUSTER_QUEUE[:2],
    ("STRATEGY", printer_column("spec", "queueingStrategy")),
    _PENDING,
    _ADMITTED,
]
_LOCAL_QUEUE: list[Column] = [
    ("NAME", name_cell),
    ("CLUSTERQUEUE", printer_column("spec", "clusterQueue")),
    _PENDING,
    _ADMITTED,
]
_WORKLOAD: list[Column] = [
    ("NAME", name_cell),
    ("QUEUE", printer_column("spec", "queueName")),
    ("RESERVED IN", printer_column("status", "admission", "clusterQueue")),
    ("ADMITTED", _condition("Admitted")),
    ("FINISHED", _condition("Finished")),
    ("AGE", age_cell),
]
_PRIORITY_CLASS: list[Column] = [("NAME", name_cell), ("VALUE", printer_column("value"))]
_PROVISIONING_REQUEST: list[Column] = [
    ("NAME", name_cell),
    ("ACCEPTED", _condition("Accepted")),
    ("PROVISIONED", _condition("Provisioned")),
    ("FAILED", _condition("Failed")),
    ("AGE", age_cell),
]  # as the gang guide shows them (cluster-autoscaler's CRD on GKE)

KUEUE_COLUMNS: dict[str, tuple[list[Column], list[Column]]] = {
    "ClusterQueue": (_CLUSTER_QUEUE, _CLUSTER_QUEUE_WIDE),
    "LocalQueue": (_LOCAL_QUEUE, _LOCAL_QUEUE),
    "Workload": (_WORKLOAD, _WORKLOAD),
    "WorkloadPriorityClass": (_PRIORITY_CLASS, _PRIORITY_CLASS),
    "ProvisioningRequest": (_PROVISIONING_REQUEST, _PROVISIONING_REQUEST),
    **{
        kind: (NAME_AGE, NAME_AGE)
        for kind in ("ResourceFlavor", "Cohort", "AdmissionCheck", "ProvisioningRequestConfig")
    },
}
"""Kind → (columns, ``-o wide`` columns)."""
