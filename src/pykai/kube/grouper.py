"""The pod-grouper on a real cluster: every kai-scheduler pod without a PodGroup gets one (by
its top owner's grouper) and the ``pod-group-name`` annotation. Writes go out in parallel, in
two waves: the missing PodGroups, then the pod annotations."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Executor

from pykai.grouping.podgrouper import GroupPlan, plan_for
from pykai.grouping.ray import RayGroupingError
from pykai.kube.api import KINDS, KubeApi
from pykai.model import constants as c
from pykai.model.meta import Obj

Objects = dict[tuple[str, str, str], Obj]


def ungrouped_plans(objects: Objects) -> list[tuple[Obj, GroupPlan]]:
    """(pod, plan) for each live kai-scheduler pod without a PodGroup annotation."""
    classes = frozenset(name for kind, _, name in objects if kind == "PriorityClass")
    plans = []
    for (kind, _, _), pod in list(objects.items()):
        meta, spec = pod["metadata"], pod.get("spec") or {}
        if (
            kind != "Pod"
            or spec.get("schedulerName") != c.SCHEDULER_NAME
            or c.POD_GROUP_ANNOTATION in (meta.get("annotations") or {})
            or meta.get("deletionTimestamp")
        ):
            continue
        try:
            plan = plan_for(pod, lambda k, name, ns: objects.get((k, ns, name)), classes)
        except RayGroupingError:
            continue  # reported on the RayCluster; the pod waits
        plans.append((pod, plan))
    return plans


def group_pods(
    api: KubeApi, pool: Executor, objects: Objects, remember: Callable[[Obj], None]
) -> None:
    """Create the missing PodGroups, then annotate the pods; ``remember`` (called on this
    thread) puts each written object into the cache."""
    plans = ungrouped_plans(objects)
    missing = {
        (plan.namespace, plan.name): plan
        for _, plan in plans
        if ("PodGroup", plan.namespace, plan.name) not in objects
    }
    # a PodGroup made by an earlier run is fine (None: it exists)
    create = KINDS["PodGroup"]
    for created in pool.map(
        lambda plan: api.create_if_absent(create, plan.to_object()), missing.values()
    ):
        if created is not None:
            remember(created)
    for patched in pool.map(lambda item: _annotate(api, *item), plans):
        remember(patched)


def _annotate(api: KubeApi, pod: Obj, plan: GroupPlan) -> Obj:
    patch: Obj = {"metadata": {"annotations": {c.POD_GROUP_ANNOTATION: plan.name}}}
    if plan.subgroup_of_pod:
        patch["metadata"]["labels"] = {c.SUBGROUP_LABEL: plan.subgroup_of_pod}
    return api.patch(KINDS["Pod"], pod["metadata"]["name"], patch, plan.namespace)
