"""Reading back from the apiserver what a scheduler wrote, the same way for both sides.

Contract of ``observe(api)``: an ``Observation`` of the pods (but the reservation pods, in
KAI's ``kai-resource-reservation`` or pykai's ``pykai-resv``): node ("" unbound), uid,
whether terminating, the GPU groups its binder's labels name (``gpu_groups``: KAI's
``runai-gpu-group=<g>`` and ``runai-gpu-group/<g>=<g>`` for further devices, which pykai's
binder writes alike; pods without are left out); each Queue's ``status.allocated``,
``allocatedNonPreemptible`` and ``requested`` and each PodGroup's scheduling-condition
reasons and ``resourcesStatus.allocated`` (as ``record`` types); each Queue's and PodGroup's
``creationTimestamp`` (``created``, by ``age_key``); quantities as numbers: cpu in
millicores, memory in bytes, ``nvidia.com/gpu`` in devices, ``run.ai/gpu.memory`` (what KAI's
podgroupcontroller writes for the requests of ``gpu-memory`` pods) in MiB as ``gpu-memory``,
other resources and zeros left out; the actions of the ``Evict`` events on each PodGroup
(pykai's ``action`` field, KAI's ``evictor-action-type`` annotation); and a ``digest`` of all
that plus the BindRequests' phases, which changes whenever any of it does (settling waits on
it).

What controllers made is known by what made it (record's contract): ``made`` gives each pod
whose owners lead to one of ``OWNER_KINDS`` in the cluster its class, ``<top owner key>
<ray.io/group>`` (the top owner: the last of that chain, e.g. a RayService through its
RayCluster, a Deployment through its ReplicaSet); ``podgroups`` are keyed by ``group_key``;
``grouped`` holds, per owner, what the grouper put in each PodGroup that has an owner;
``pod_groups`` names each pod's PodGroup as its ``pod-group-name`` annotation does (the key of
the ``Evict`` events' actions)."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field

from pykai.compare.record import (
    Amounts,
    GroupMade,
    GroupStatus,
    QueueStatus,
    SubGroup,
    group_key,
    owner_key,
    pod_key,
)
from pykai.kube.api import KubeApi
from pykai.kube.binding import RESERVATION_NAMESPACE as PYKAI_RESERVATIONS
from pykai.kube.peer_kai import RESERVATION_NAMESPACE
from pykai.model import constants as c
from pykai.model.kinds import BY_KIND
from pykai.model.meta import Obj
from pykai.model.quantity import count, cpu_millis, memory_bytes

ACTION_ANNOTATION = "evictor-action-type"  # KAI's Evict events (framework/interface.go)
GPU_MEMORY = "run.ai/gpu.memory"  # KAI's podgroupcontroller: gpu-memory requests, in MiB
_PARSE = {"cpu": cpu_millis, "memory": memory_bytes, "nvidia.com/gpu": count, GPU_MEMORY: count}
_NAMES = {"cpu": "cpu", "memory": "memory", "nvidia.com/gpu": "gpu", GPU_MEMORY: "gpu-memory"}
RESERVATIONS = frozenset({RESERVATION_NAMESPACE, PYKAI_RESERVATIONS})
# what may make pods here, the outermost first (a RayService makes a RayCluster, which makes pods)
OWNER_KINDS = ("RayService", "RayJob", "RayCluster", "Deployment", "ReplicaSet", "Job")
GROUP_ANNOTATION = "pod-group-name"  # the grouper's (KAI's and pykai's) note on each pod
RAY_GROUP = "ray.io/group"  # KubeRay's label: headgroup, or the worker group's name


@dataclass(frozen=True)
class Observation:
    """One read of the cluster (see the module's contract)."""

    digest: str
    placed: dict[str, str]
    uids: dict[str, str]
    terminating: frozenset[str]
    queues: dict[str, QueueStatus]
    podgroups: dict[str, GroupStatus]
    evict_actions: dict[str, tuple[str, ...]]
    made: dict[str, str]
    grouped: dict[str, GroupMade]
    pod_groups: dict[str, str]  # pod -> its PodGroup's namespace/name (pod-group-name)
    created: dict[str, str]
    gpu_groups: dict[str, tuple[str, ...]] = field(default_factory=dict)


def amounts(resources: Obj | None) -> Amounts:
    """A ResourceList as numbers (see the module's contract)."""
    found: Amounts = {}
    for name, value in (resources or {}).items():
        if name in _PARSE:
            number = _PARSE[name](value)
            if number:
                found[_NAMES[name]] = number
    return found


def gpu_groups(pod: Obj) -> tuple[str, ...]:
    """The GPU groups a pod's labels name (see the module's contract), sorted."""
    labels = pod["metadata"].get("labels") or {}
    prefix = c.GPU_GROUP_LABEL + "/"
    found = {str(v) for k, v in labels.items() if k == c.GPU_GROUP_LABEL or k.startswith(prefix)}
    return tuple(sorted(found - {""}))


def observe(api: KubeApi) -> Observation:
    """The cluster now (see the module's contract)."""
    pods, _ = api.list(BY_KIND["Pod"])
    placed, uids, terminating, pod_groups, groups_of = {}, {}, set(), {}, {}
    parts: list[object] = []
    for pod in pods:
        meta = pod["metadata"]
        if meta.get("namespace") in RESERVATIONS:
            continue
        key = pod_key(pod)
        if gpu_groups(pod):
            groups_of[key] = gpu_groups(pod)
        placed[key] = str(pod["spec"].get("nodeName") or "")
        uids[key] = str(meta.get("uid", ""))
        if meta.get("deletionTimestamp"):
            terminating.add(key)
        group = (meta.get("annotations") or {}).get(GROUP_ANNOTATION)
        if group:
            pod_groups[key] = f"{meta.get('namespace') or 'default'}/{group}"
        conditions = [(c["type"], c["status"]) for c in pod.get("status", {}).get("conditions", [])]
        shared = groups_of.get(key, ())
        parts.append((key, uids[key], placed[key], key in terminating, sorted(conditions), shared))
    requests, _ = api.list(BY_KIND["BindRequest"])
    parts += [(pod_key(r), (r.get("status") or {}).get("phase")) for r in requests]
    listed = api.list(BY_KIND["Queue"])[0]
    queues = {q["metadata"]["name"]: _queue(q.get("status") or {}) for q in listed}
    podgroups = api.list(BY_KIND["PodGroup"])[0]
    groups = {group_key(g): _group(g.get("status") or {}) for g in podgroups}
    grouped = {
        group_key(g): _made(g.get("spec") or {})
        for g in podgroups
        if g["metadata"].get("ownerReferences")
    }
    made = _made_pods(api, pods)
    created = {age_key(o): str(o["metadata"].get("creationTimestamp", "")) for o in listed}
    created |= {age_key(g): str(g["metadata"].get("creationTimestamp", "")) for g in podgroups}
    actions: dict[str, set[str]] = {}
    for event in api.list(BY_KIND["Event"])[0]:
        involved = event.get("involvedObject") or {}
        if event.get("reason") != "Evict" or involved.get("kind") != "PodGroup":
            continue
        annotations = event["metadata"].get("annotations") or {}
        action = event.get("action") or annotations.get(ACTION_ANNOTATION, "")
        group = f"{involved.get('namespace') or 'default'}/{involved.get('name')}"
        actions.setdefault(group, set()).update([action] if action else [])
    parts += [sorted(queues.items()), sorted(groups.items())]
    parts += [sorted((group, sorted(names)) for group, names in actions.items())]
    parts += [sorted(made.items()), sorted(grouped.items())]
    digest = hashlib.sha256(json.dumps(sorted(map(repr, parts))).encode()).hexdigest()
    return Observation(
        digest,
        placed,
        uids,
        frozenset(terminating),
        queues,
        groups,
        {group: tuple(sorted(names)) for group, names in actions.items()},
        made,
        grouped,
        pod_groups,
        created,
        groups_of,
    )


def _made_pods(api: KubeApi, pods: list[Obj]) -> dict[str, str]:
    """The class of each pod a controller of ``OWNER_KINDS`` made (see the contract); the
    owners are listed only when some pod has one."""
    if not any(p["metadata"].get("ownerReferences") for p in pods):
        return {}
    by_uid = {
        str(o["metadata"].get("uid")): {**o, "kind": kind}
        for kind in OWNER_KINDS
        for o in api.list(BY_KIND[kind])[0]
    }
    made = {}
    for pod in pods:
        meta = pod["metadata"]
        top: Obj | None = None
        owners = meta.get("ownerReferences") or []
        for _ in OWNER_KINDS:
            found = by_uid.get(str(owners[0].get("uid"))) if owners else None
            if found is None:
                break
            top, owners = found, found["metadata"].get("ownerReferences") or []
        if top is not None and meta.get("namespace") != RESERVATION_NAMESPACE:
            key = owner_key(
                top["kind"], top["metadata"].get("namespace", ""), top["metadata"]["name"]
            )
            made[pod_key(pod)] = f"{key} {(meta.get('labels') or {}).get(RAY_GROUP, '')}".strip()
    return made


def _made(spec: Obj) -> GroupMade:
    subs = sorted(
        SubGroup(str(g.get("name", "")), int(g.get("minMember") or 0), str(g.get("parent") or ""))
        for g in spec.get("subGroups") or []
    )
    return GroupMade(
        int(spec.get("minMember") or 0),
        str(spec.get("queue") or ""),
        str(spec.get("priorityClassName") or ""),
        str(spec.get("preemptibility") or ""),
        tuple(subs),
    )


def age_key(obj: Obj) -> str:
    """How ``Observation.created`` names a Queue (``Queue NAME``) or a PodGroup (``PodGroup
    NAMESPACE/NAME``)."""
    if obj["kind"] == "Queue":
        return f"Queue {obj['metadata']['name']}"
    return f"{obj['kind']} {pod_key(obj)}"


def _queue(status: Obj) -> QueueStatus:
    return QueueStatus(
        amounts(status.get("allocated")),
        amounts(status.get("allocatedNonPreemptible")),
        amounts(status.get("requested")),
    )


def _group(status: Obj) -> GroupStatus:
    reasons: set[str] = set()
    for condition in status.get("schedulingConditions") or []:
        listed = [r.get("reason", "") for r in condition.get("reasons") or []]
        reasons.update(r for r in listed or [condition.get("reason", "")] if r)
    allocated = amounts((status.get("resourcesStatus") or {}).get("allocated"))
    return GroupStatus(tuple(sorted(reasons)), allocated)
