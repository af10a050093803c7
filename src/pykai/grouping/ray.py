"""Groupers for KubeRay's RayCluster, RayJob and RayService (KAI's ray_grouper).

minMember = 1 (the head) + Σ over worker groups of (minReplicas if > 0 else replicas) ×
numOfHosts; suspended and empty groups are skipped. Subgroups: ``headgroup`` and one per
worker group, matched by the pod label ``ray.io/group``.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from pykai.grouping.podgrouper import (
    Context,
    GroupPlan,
    default_grouper,
    labels,
    priority_of,
    register,
)
from pykai.model.errors import PykaiError
from pykai.model.meta import Obj

HEAD_GROUP = "headgroup"
RAY_PRIORITY_LABEL = "ray.io/priority-class-name"


class RayGroupingError(PykaiError, ValueError):
    """A RayCluster whose worker groups cannot form a gang (e.g. minReplicas > replicas)."""


def cluster_spec(owner: Obj) -> dict[str, Any]:
    """The RayCluster spec of a RayCluster, RayJob or RayService."""
    spec: dict[str, Any] = owner.get("spec") or {}
    if owner.get("kind") == "RayJob" or owner.get("kind") == "RayService":
        nested: dict[str, Any] = spec.get("rayClusterSpec") or spec.get("rayClusterConfig") or {}
        return nested
    return spec


def worker_groups(spec: dict[str, Any]) -> list[tuple[str, int]]:
    """(group name, pods the gang needs) per non-empty, non-suspended worker group."""
    groups = []
    for index, group in enumerate(spec.get("workerGroupSpecs") or []):
        name = str(group.get("groupName") or f"worker-group-{index}")
        replicas = int(group.get("replicas", 1) or 0)
        minimum = int(group.get("minReplicas", 0) or 0)
        hosts = int(group.get("numOfHosts", 1) or 1)
        if group.get("suspend"):
            continue
        if minimum > replicas:
            raise RayGroupingError(
                f'worker group "{name}": minReplicas {minimum} is more than replicas {replicas}; '
                "lower minReplicas or raise replicas"
            )
        needed = (minimum if minimum > 0 else replicas) * hosts
        if needed:
            groups.append((name, needed))
    return groups


@register("ray.io/RayCluster", "ray.io/RayJob", "ray.io/RayService")
def ray_grouper(context: Context) -> GroupPlan:
    """One PodGroup per Ray cluster, gang = head + minimum workers, with subgroups."""
    top = context.top
    groups = worker_groups(cluster_spec(top))
    pod_group = labels(context.pod).get("ray.io/group", "")
    node_type = labels(context.pod).get("ray.io/node-type", "")
    fallback = labels(top).get(RAY_PRIORITY_LABEL) or "train"
    priority = priority_of(context, fallback if fallback in context.priority_classes else "train")
    return replace(
        default_grouper(context),
        min_member=1 + sum(n for _, n in groups),
        priority_class=priority,
        sub_groups=(
            {"name": HEAD_GROUP, "minMember": 1},
            *({"name": name, "minMember": needed} for name, needed in groups),
        ),
        subgroup_of_pod=HEAD_GROUP if node_type == "head" else pod_group,
    )
