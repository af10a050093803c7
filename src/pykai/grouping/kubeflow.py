"""Grouper for Kubeflow's PyTorchJob (kubeflow.org/v1): master + workers as one gang."""

from __future__ import annotations

from dataclasses import replace

from pykai.grouping.podgrouper import Context, GroupPlan, default_grouper, labels, register
from pykai.model import constants as c


@register("kubeflow.org/PyTorchJob")
def pytorch_grouper(context: Context) -> GroupPlan:
    """minMember = runPolicy.schedulingPolicy.minAvailable, else elasticPolicy.minReplicas
    (+ master), else every replica; subgroups ``master`` and ``worker``."""
    spec = context.top.get("spec") or {}
    replicas = spec.get("pytorchReplicaSpecs") or {}
    counts = {role.lower(): int((r or {}).get("replicas", 1) or 0) for role, r in replicas.items()}
    minimum = sum(counts.values())
    elastic = (spec.get("elasticPolicy") or {}).get("minReplicas")
    if elastic is not None:
        minimum = int(elastic) + counts.get("master", 0)
    available = ((spec.get("runPolicy") or {}).get("schedulingPolicy") or {}).get("minAvailable")
    if available is not None:
        minimum = int(available)
    role = labels(context.pod).get(c.KUBEFLOW_ROLE_LABEL, "")
    sub_groups = tuple({"name": r, "minMember": 1} for r in ("master",) if counts.get(r))
    return replace(
        default_grouper(context),
        min_member=max(1, minimum),
        sub_groups=sub_groups,
        subgroup_of_pod=role if role in ("master",) else "",
    )
