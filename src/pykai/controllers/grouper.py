"""The pod-grouper: every pod of pykai's without a PodGroup gets one (from the grouper of its
top owner's kind, grouping/) and the ``pod-group-name`` annotation. Two waves of writes: the
missing PodGroups, then the pods' annotations (a pod is annotated only once its PodGroup
exists). Pods that name their PodGroup themselves are left alone."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import suppress

from pykai.controllers.host import Host
from pykai.grouping.podgrouper import GroupPlan, plan_for
from pykai.grouping.ray import RayGroupingError
from pykai.model import constants as c
from pykai.model.errors import AlreadyExists
from pykai.model.meta import Obj

COMPONENT = "the pod-grouper"


def group_pods(host: Host, check: Callable[[Obj], None] = lambda _: None) -> None:
    """Group the ungrouped pods, oldest first; ``check`` raises for an owner the grouper must
    not read (see grouping.podgrouper.plan_for). A pod's node-pool label goes on its PodGroup
    (its scheduling shard's, as KAI's podgrouper: pod_controller.go addNodePoolLabel)."""
    views = sorted(
        (task.pod for task in host.state.ungrouped.values()),
        key=lambda view: (view.meta.creation, view.meta.uid),
    )
    pods = [p for v in views if (p := host.get("Pod", v.meta.name, v.meta.namespace))]
    classes = frozenset(host.state.priority_classes)
    plans: list[tuple[Obj, GroupPlan]] = []

    def plan(pod: Obj) -> None:
        with suppress(RayGroupingError):  # reported on the RayCluster; the pod waits
            plans.append((pod, plan_for(pod, host.get, classes, check)))

    host.each(COMPONENT, pods, plan)
    missing: dict[tuple[str, str], tuple[Obj, GroupPlan]] = {}
    for pod, found in plans:
        if host.get("PodGroup", found.name, found.namespace) is None:
            missing.setdefault((found.namespace, found.name), (pod, found))
    made: set[tuple[str, str]] = set()

    def create(item: tuple[Obj, GroupPlan]) -> None:
        _, found = item
        with suppress(AlreadyExists):  # made by an earlier run: fine
            host.create(found.to_object())
        made.add((found.namespace, found.name))

    host.each(COMPONENT, list(missing.values()), create)
    ready = [
        (pod, found)
        for pod, found in plans
        if (found.namespace, found.name) not in missing or (found.namespace, found.name) in made
    ]
    host.each(COMPONENT, ready, lambda item: _annotate(host, *item))


def _annotate(host: Host, pod: Obj, plan: GroupPlan) -> None:
    patch: Obj = {"metadata": {"annotations": {c.POD_GROUP_ANNOTATION: plan.name}}}
    if plan.subgroup_of_pod:
        patch["metadata"]["labels"] = {c.SUBGROUP_LABEL: plan.subgroup_of_pod}
    host.patch(pod, patch)
