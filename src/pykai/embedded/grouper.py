"""The pod-grouper controller: every kai-scheduler pod without a PodGroup gets one (from the
grouper registered for its top owner's kind) and is annotated with its name."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pykai.grouping.podgrouper import plan_for
from pykai.grouping.ray import RayGroupingError
from pykai.model import constants as c
from pykai.model.meta import Obj

if TYPE_CHECKING:
    from pykai.embedded.cluster import EmbeddedCluster


def group_pods(cluster: EmbeddedCluster) -> bool:
    """Create PodGroups for ungrouped pods, oldest pod first, and annotate the pods; True if
    anything changed. Pods that name their PodGroup themselves are left alone."""
    ungrouped = sorted(
        (
            task.pod
            for task in cluster.state.tasks.values()
            if task.pod.scheduler_name == c.SCHEDULER_NAME
            and c.POD_GROUP_ANNOTATION not in task.pod.meta.annotations
            and not task.pod.deleting
        ),
        key=lambda view: (view.meta.creation, view.meta.uid),
    )
    classes = frozenset(cluster.state.priority_classes)
    isolation = cluster.isolation("the pod-grouper")
    changed = False
    for view in ungrouped:
        pod = cluster.store.get("Pod", view.meta.name, view.meta.namespace)
        if pod is None:
            continue
        with isolation.isolated(pod):
            changed |= _group(cluster, pod, classes)
    return changed


def _group(cluster: EmbeddedCluster, pod: Obj, classes: frozenset[str]) -> bool:
    """Give one pod its PodGroup; True if anything was written."""
    try:
        plan = plan_for(pod, cluster.store.get, classes, cluster.stored_check)
    except RayGroupingError:
        return False  # reported on the RayCluster by its controller; the pod waits
    if cluster.store.get("PodGroup", plan.name, plan.namespace) is None:
        cluster.create(plan.to_object())
    pod["metadata"].setdefault("annotations", {})[c.POD_GROUP_ANNOTATION] = plan.name
    if plan.subgroup_of_pod:
        pod["metadata"].setdefault("labels", {})[c.SUBGROUP_LABEL] = plan.subgroup_of_pod
    cluster.update(pod)
    return True
