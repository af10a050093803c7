"""Top-owner resolution and one grouper per owner kind (KAI's pkg/podgrouper).

A grouper turns a pod and its top owner into a PodGroup plan. Kinds without a grouper of
their own use the default one: one PodGroup per top owner with minMember 1.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from pykai.model import constants as c
from pykai.model.kueue.api import ADMITTED_QUEUE
from pykai.model.kueue.jobs import is_managed
from pykai.model.meta import Obj
from pykai.model.names import bounded_name

Lookup = Callable[[str, str, str], Obj | None]  # (kind, name, namespace) -> object
_MAX_OWNER_DEPTH = 10  # owner chains longer than this are cut (they are cycles or mistakes)


@dataclass(frozen=True, slots=True)
class GroupPlan:
    """The PodGroup a pod belongs to."""

    name: str
    namespace: str
    min_member: int
    queue: str
    priority_class: str
    preemptibility: str = ""
    sub_groups: tuple[dict[str, Any], ...] = ()
    owner: Obj | None = None  # what the PodGroup's ownerReference names: it goes with it
    subgroup_of_pod: str = ""
    node_pool: str = ""  # the pod's node-pool label, which the PodGroup carries (its shard's)

    def to_object(self) -> Obj:
        """The PodGroup object."""
        spec: dict[str, Any] = {
            "minMember": self.min_member,
            "queue": self.queue,
            "priorityClassName": self.priority_class,
        }
        if self.preemptibility:
            spec["preemptibility"] = self.preemptibility
        if self.sub_groups:
            spec["subGroups"] = [dict(g) for g in self.sub_groups]
        metadata: dict[str, Any] = {"name": self.name, "namespace": self.namespace}
        if self.node_pool:
            metadata["labels"] = {c.NODE_POOL_LABEL: self.node_pool}
        if self.owner is not None:
            meta = self.owner["metadata"]
            metadata["ownerReferences"] = [
                {
                    "apiVersion": self.owner.get("apiVersion", "v1"),
                    "kind": self.owner["kind"],
                    "name": meta["name"],
                    "uid": meta.get("uid", ""),
                    "controller": True,
                }
            ]
        return {
            "apiVersion": c.PODGROUP_API,
            "kind": "PodGroup",
            "metadata": metadata,
            "spec": spec,
        }


@dataclass(frozen=True, slots=True)
class Context:
    """What a grouper may read: the pod, its owner chain, the existing priority classes."""

    pod: Obj
    owners: list[Obj]  # the pod's owners, nearest first, top owner last
    priority_classes: frozenset[str]

    @property
    def top(self) -> Obj:
        """The top owner (the pod itself when it has none)."""
        return self.owners[-1] if self.owners else self.pod


Grouper = Callable[[Context], GroupPlan]
GROUPERS: dict[str, Grouper] = {}  # "group/Kind" of the top owner -> grouper


def register(*kinds: str) -> Callable[[Grouper], Grouper]:
    """Register a grouper for top-owner kinds written as ``apps/Deployment`` or ``v1/Pod``."""

    def decorate(grouper: Grouper) -> Grouper:
        for kind in kinds:
            GROUPERS[kind] = grouper
        return grouper

    return decorate


def group_key(obj: Obj) -> str:
    """``group/Kind`` of an object (``v1/Pod`` for the core group)."""
    api_version = str(obj.get("apiVersion", "v1"))
    group = api_version.split("/", maxsplit=1)[0] if "/" in api_version else "v1"
    return f"{group}/{obj.get('kind', '')}"


def owner_chain(pod: Obj, lookup: Lookup) -> list[Obj]:
    """The pod's controlling owners, nearest first; stops where an owner is missing."""
    chain: list[Obj] = []
    current = pod
    namespace = str(pod["metadata"].get("namespace") or "default")
    while len(chain) < _MAX_OWNER_DEPTH:
        refs = current["metadata"].get("ownerReferences") or []
        ref = next((r for r in refs if r.get("controller")), refs[0] if refs else None)
        if ref is None:
            break
        owner = lookup(str(ref.get("kind")), str(ref.get("name")), namespace)
        if owner is None:
            break
        chain.append(owner)
        current = owner
    return chain


def plan_for(
    pod: Obj,
    lookup: Lookup,
    priority_classes: frozenset[str],
    check: Callable[[Obj], None] = lambda _: None,
) -> GroupPlan:
    """The PodGroup plan for a pod, by its top owner's grouper; ``check`` raises for an owner
    the grouper must not read (one that cannot be run as stored)."""
    context = Context(pod, owner_chain(pod, lookup), priority_classes)
    for owner in context.owners:
        check(owner)
    grouper = GROUPERS.get(group_key(context.top), default_grouper)
    plan = grouper(context)
    pool = labels(pod).get(c.NODE_POOL_LABEL)
    if isinstance(pool, str) and pool:  # as KAI's podgrouper (pod_controller.go addNodePoolLabel)
        plan = replace(plan, node_pool=pool)
    if any(
        is_managed(o) for o in context.owners
    ):  # admitted by Kueue: placed by the engine, outside KAI's queues
        return replace(plan, queue=ADMITTED_QUEUE)
    return plan


def labels(obj: Obj) -> dict[str, str]:
    """An object's labels."""
    return dict((obj.get("metadata") or {}).get("labels") or {})


def queue_of(context: Context) -> str:
    """Label kai.scheduler/queue on the top owner, then the pod; then label ``project``;
    else ``default-queue``."""
    for obj in (context.top, context.pod):
        queue = labels(obj).get(c.QUEUE_LABEL)
        if queue:
            return queue
    for obj in (context.top, context.pod):
        project = labels(obj).get(c.PROJECT_LABEL)
        if project:
            return project
    return c.DEFAULT_QUEUE


def priority_of(context: Context, fallback: str) -> str:
    """Label priorityClassName on the owners (top first), then the pod, then
    spec.priorityClassName — the first that names an existing class; else ``fallback``."""
    candidates = [labels(o).get(c.PRIORITY_CLASS_LABEL, "") for o in reversed(context.owners)]
    candidates.append(labels(context.pod).get(c.PRIORITY_CLASS_LABEL, ""))
    candidates.append(str((context.pod.get("spec") or {}).get("priorityClassName") or ""))
    for name in candidates:
        if name and name in context.priority_classes:
            return name
    return fallback


def preemptibility_of(context: Context) -> str:
    """Label kai.scheduler/preemptibility on an owner or the pod."""
    for obj in (*reversed(context.owners), context.pod):
        value = labels(obj).get(c.PREEMPTIBILITY_LABEL, "")
        if value in ("preemptible", "non-preemptible"):
            return value
    return ""


def podgroup_name(owner: str, uid: str) -> str:
    """KAI's ``pg-<owner name>-<owner uid>``, kept within Kubernetes' name limit."""
    return bounded_name(f"pg-{owner}-{uid}")


def default_grouper(context: Context) -> GroupPlan:
    """One PodGroup per top owner (``pg-<name>-<uid>``), minMember 1, priority train."""
    top = context.top
    meta = top["metadata"]
    return GroupPlan(
        name=podgroup_name(meta["name"], meta.get("uid", "")),
        namespace=str(context.pod["metadata"].get("namespace") or "default"),
        min_member=1,
        queue=queue_of(context),
        priority_class=priority_of(context, "train"),
        preemptibility=preemptibility_of(context),
        owner=top,
    )
