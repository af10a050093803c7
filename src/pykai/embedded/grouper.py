"""The pod-grouper controller: every kai-scheduler pod without a PodGroup gets one."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pykai.grouping.podgrouper import plan_for
from pykai.grouping.ray import RayGroupingError
from pykai.model import constants as c

if TYPE_CHECKING:
    from pykai.embedded.cluster import EmbeddedCluster


def group_pods(cluster: EmbeddedCluster) -> bool:
    """Create PodGroups for ungrouped pods and annotate the pods; True if anything changed."""
    store = cluster.store
    classes = frozenset(pc["metadata"]["name"] for pc in store.select("PriorityClass"))
    changed = False
    for pod in store.select("Pod"):
        spec = pod.get("spec") or {}
        annotations = pod["metadata"].setdefault("annotations", {})
        if spec.get("schedulerName") != c.SCHEDULER_NAME or c.POD_GROUP_ANNOTATION in annotations:
            continue
        try:
            plan = plan_for(pod, store.get, classes)
        except RayGroupingError:
            continue  # reported on the RayCluster by its controller; the pod waits

        if store.get("PodGroup", plan.name, plan.namespace) is None:
            cluster.create(plan.to_object())
        annotations[c.POD_GROUP_ANNOTATION] = plan.name
        if plan.subgroup_of_pod:
            pod["metadata"].setdefault("labels", {})[c.SUBGROUP_LABEL] = plan.subgroup_of_pod
        cluster.update(pod)
        changed = True
    return changed
