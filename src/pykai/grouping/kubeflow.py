"""Grouper for Kubeflow's PyTorchJob (kubeflow.org/v1): master + workers as one gang."""

from __future__ import annotations

from dataclasses import replace

from pykai.grouping.podgrouper import Context, GroupPlan, default_grouper, labels, register
from pykai.model import constants as c

_MASTER = "master"


@register("kubeflow.org/PyTorchJob")
def pytorch_grouper(context: Context) -> GroupPlan:
    """minMember = runPolicy.schedulingPolicy.minAvailable, else elasticPolicy.minReplicas
    (+ master), else every replica; the master, if any, is a subgroup of one (the workers
    make up the rest of the gang)."""
    spec = context.top.get("spec") or {}
    replicas = spec.get("pytorchReplicaSpecs") or {}
    counts = {role.lower(): int((r or {}).get("replicas", 1) or 0) for role, r in replicas.items()}
    minimum = sum(counts.values())
    elastic = (spec.get("elasticPolicy") or {}).get("minReplicas")
    if elastic is not None:
        minimum = int(elastic) + counts.get(_MASTER, 0)
    available = ((spec.get("runPolicy") or {}).get("schedulingPolicy") or {}).get("minAvailable")
    if available is not None:
        minimum = int(available)
    master = labels(context.pod).get(c.KUBEFLOW_ROLE_LABEL, "") == _MASTER
    return replace(
        default_grouper(context),
        min_member=max(1, minimum),
        sub_groups=({"name": _MASTER, "minMember": 1},) if counts.get(_MASTER) else (),
        subgroup_of_pod=_MASTER if master else "",
    )
