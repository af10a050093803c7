"""The pod-grouper on a real cluster: every kai-scheduler pod without a PodGroup gets one (by
its top owner's grouper) and the ``pod-group-name`` annotation. Writes go out in parallel, in
two waves: the missing PodGroups, then the pod annotations."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Executor

from pykai.controllers.faults import Isolation
from pykai.grouping.podgrouper import GroupPlan, plan_for
from pykai.grouping.ray import RayGroupingError
from pykai.kube.api import KINDS, KubeApi
from pykai.model import constants as c
from pykai.model.meta import Obj, mapping

Objects = dict[tuple[str, str, str], Obj]


def ungrouped_plans(objects: Objects, isolation: Isolation) -> list[tuple[Obj, GroupPlan]]:
    """(pod, plan) for each live kai-scheduler pod without a PodGroup annotation (a pod whose
    plan cannot be made is reported and skipped)."""
    classes = frozenset(name for kind, _, name in objects if kind == "PriorityClass")
    plans = []
    for (kind, _, _), pod in list(objects.items()):
        meta, spec = pod["metadata"], mapping(pod.get("spec"))
        if (
            kind != "Pod"
            or spec.get("schedulerName") != c.SCHEDULER_NAME
            or c.POD_GROUP_ANNOTATION in mapping(meta.get("annotations"))
            or meta.get("deletionTimestamp")
        ):
            continue
        with isolation.isolated(pod):
            try:
                plan = plan_for(pod, lambda k, name, ns: objects.get((k, ns, name)), classes)
            except RayGroupingError:
                continue  # reported on the RayCluster; the pod waits
            plans.append((pod, plan))
    return plans


def group_pods(
    api: KubeApi,
    pool: Executor,
    objects: Objects,
    remember: Callable[[Obj], None],
    isolation: Isolation,
) -> None:
    """Create the missing PodGroups, then annotate the pods; ``remember`` (called on this
    thread) puts each written object into the cache. A write refused for one pod is reported
    on that pod; the others go on."""
    plans = ungrouped_plans(objects, isolation)
    missing: dict[tuple[str, str], tuple[Obj, GroupPlan]] = {}
    for pod, plan in plans:
        if ("PodGroup", plan.namespace, plan.name) not in objects:
            missing.setdefault((plan.namespace, plan.name), (pod, plan))
    # a PodGroup made by an earlier run is fine (None: it exists)
    create = KINDS["PodGroup"]
    created = [
        (key, pod, pool.submit(api.create_if_absent, create, plan.to_object()))
        for key, (pod, plan) in missing.items()
    ]
    failed: set[tuple[str, str]] = set()
    for key, pod, future in created:
        with isolation.isolated(pod) as attempt:
            group = future.result()
            if group is not None:
                remember(group)
        if attempt.failed:
            failed.add(key)  # its pods wait for the next pass
    annotated = [
        (pod, pool.submit(_annotate, api, pod, plan))
        for pod, plan in plans
        if (plan.namespace, plan.name) not in failed
    ]
    for pod, patched in annotated:
        with isolation.isolated(pod):
            remember(patched.result())


def _annotate(api: KubeApi, pod: Obj, plan: GroupPlan) -> Obj:
    patch: Obj = {"metadata": {"annotations": {c.POD_GROUP_ANNOTATION: plan.name}}}
    if plan.subgroup_of_pod:
        patch["metadata"]["labels"] = {c.SUBGROUP_LABEL: plan.subgroup_of_pod}
    return api.patch(KINDS["Pod"], pod["metadata"]["name"], patch, plan.namespace)
