"""What one side decided, as fields: per settled step, where each pod is, which pods were
evicted (and by which action, where the side says), each queue's allocation and each
PodGroup's status, plus what makes nodes and pods interchangeable.

Contract: a ``Record`` holds only facts read back from the cluster (``observe``); its
canonical views (``bound``, ``packing``, ``sharing``, ``evicted``) name pods by ``pod_class``
and nodes by ``node_class``, and ``sharing`` drops the GPU groups' names (KAI's are random
UUIDs), so two records that differ only by interchanging identical nodes, the devices of a
node, or twin pods of one PodGroup, have equal views. ``failure`` non-empty: the side did
not finish (the text says why, ``log_tail`` what its log ended with); its steps are what it
recorded before.

Pods and PodGroups that a controller made (the KubeRay operator's Ray pods, a Deployment's;
the PodGroups a pod-grouper made for them) have names generated on each side: a pod made by a
controller is known by ``StepRecord.made`` (its class: the top owner that made it and its Ray
group, so the workers of one group are twins), a PodGroup with an owner by that owner
(``group_key``), and the PodGroup the grouper made by ``GroupMade``, keyed by its owner."""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from dataclasses import dataclass, field

from pykai.model.meta import Obj

HOSTNAME = "kubernetes.io/hostname"
Amounts = dict[str, float]  # cpu (millicores), memory (bytes), gpu (devices), gpu-memory
# (MiB); no zeros


@dataclass(frozen=True)
class Eviction:
    """A pod bound and then deleted or re-created, not by the scenario; ``actions``: the KAI
    actions (reclaim, preempt, consolidation, stalegangeviction) its PodGroup's ``Evict``
    events name, sorted (empty: the side said none)."""

    pod: str
    node: str
    actions: tuple[str, ...] = ()


@dataclass(frozen=True)
class QueueStatus:
    """The parts of a Queue's status both KAI's queuecontroller and pykai write."""

    allocated: Amounts
    allocated_non_preemptible: Amounts
    requested: Amounts


@dataclass(frozen=True)
class GroupStatus:
    """The parts of a PodGroup's status both sides write: the reasons of its
    ``UnschedulableOnNodePool`` scheduling condition (sorted, unique) and its
    ``resourcesStatus.allocated``."""

    reasons: tuple[str, ...]
    allocated: Amounts


@dataclass(frozen=True, order=True)
class SubGroup:
    """One of a PodGroup's ``spec.subGroups``."""

    name: str
    min_member: int
    parent: str = ""


@dataclass(frozen=True)
class GroupMade:
    """What a pod-grouper put in the PodGroup it made for an owner: ``minMember``, queue,
    ``priorityClassName``, ``preemptibility`` and sub-groups (sorted by name)."""

    min_member: int
    queue: str
    priority_class: str
    preemptibility: str = ""
    sub_groups: tuple[SubGroup, ...] = ()


@dataclass(frozen=True)
class StepRecord:
    """The cluster once step ``number`` settled: ``placed`` pod -> node ("" pending; a pod
    gone is absent), the evictions during the step, queues by name, PodGroups by key
    (``group_key``), the class of each pod a controller made during the step or before
    (``made``), the PodGroups a grouper made, by owner (``grouped``), and ``gpu_groups``:
    pod -> the GPU groups (shared devices) its labels name, sorted (pods without are
    absent); ``recreated``: the pods the harness's controller created again during the step
    (``recreate_evicted``: one per evicted controlled pod, bound or not); ``created``: each
    Queue's and PodGroup's ``creationTimestamp`` (``Queue NAME``, ``PodGroup NS/NAME``: their
    ages, KAI's last tie-breaks between queues and between jobs)."""

    number: int
    placed: dict[str, str]
    evictions: tuple[Eviction, ...] = ()
    queues: dict[str, QueueStatus] = field(default_factory=dict)
    podgroups: dict[str, GroupStatus] = field(default_factory=dict)
    made: dict[str, str] = field(default_factory=dict)
    grouped: dict[str, GroupMade] = field(default_factory=dict)
    gpu_groups: dict[str, tuple[str, ...]] = field(default_factory=dict)
    recreated: int = 0
    created: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Record:
    """One side's run of a scenario (see the module's contract)."""

    side: str
    steps: tuple[StepRecord, ...]
    node_class: dict[str, str]
    pod_class: dict[str, str]
    failure: str = ""
    log_tail: str = ""
    seconds: float = 0.0

    def klass(self, step: StepRecord, pod: str) -> str:
        """The class of ``pod`` (a controller's pods by ``step.made``)."""
        return step.made.get(pod) or self.pod_class.get(pod, pod)

    def bound(self, step: StepRecord) -> list[str]:
        """The classes of the pods bound once ``step`` settled, sorted."""
        return sorted(self.klass(step, p) for p, node in step.placed.items() if node)

    def packing(self, step: StepRecord) -> list[tuple[str, tuple[str, ...]]]:
        """Each used node's class and its pods' classes, sorted."""
        by_node: dict[str, list[str]] = {}
        for pod, node in step.placed.items():
            if node:
                by_node.setdefault(node, []).append(self.klass(step, pod))
        return sorted(
            (self.node_class.get(node, f"unknown node {node}"), tuple(sorted(pods)))
            for node, pods in by_node.items()
        )

    def sharing(self, step: StepRecord) -> list[tuple[str, tuple[tuple[str, ...], ...]]]:
        """Each node with shared GPUs: its class and, per GPU group on it (a shared device),
        the classes of the bound pods in that group, sorted; a pod on several devices is in
        each. Groups' names are left out: devices of one node are interchangeable."""
        devices: dict[tuple[str, str], list[str]] = {}
        for pod, groups in step.gpu_groups.items():
            node = step.placed.get(pod, "")
            for group in groups if node else ():
                devices.setdefault((node, group), []).append(self.klass(step, pod))
        by_node: dict[str, list[tuple[str, ...]]] = {}
        for (node, _), pods in devices.items():
            by_node.setdefault(node, []).append(tuple(sorted(pods)))
        return sorted(
            (self.node_class.get(node, f"unknown node {node}"), tuple(sorted(shared)))
            for node, shared in by_node.items()
        )

    def evicted(self, step: StepRecord) -> list[tuple[str, str, tuple[str, ...]]]:
        """The step's evictions as (pod class, node class, actions), sorted."""
        return sorted(
            (self.klass(step, e.pod), self.node_class.get(e.node, e.node), e.actions)
            for e in step.evictions
        )


def node_class(node: Obj) -> str:
    """Capacity, labels (less the hostname) and taints: nodes equal in these are
    interchangeable."""
    labels = {k: v for k, v in (node["metadata"].get("labels") or {}).items() if k != HOSTNAME}
    status = node.get("status") or {}
    key = [status.get("allocatable", {}), labels, (node.get("spec") or {}).get("taints", [])]
    return "node-" + hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:8]


def pod_key(obj: Obj) -> str:
    """``namespace/name``."""
    return f"{obj['metadata'].get('namespace') or 'default'}/{obj['metadata']['name']}"


def pod_classes(pods: list[Obj]) -> dict[str, str]:
    """Each pod's key, or, for pods KAI cannot tell apart, a name for the class they share:
    pods of one PodGroup (``pod-group-name``) with the same spec, labels and annotations
    (created in the same second, KAI orders a job's tasks by their UID, at random:
    pod_info.go). Pods of different PodGroups are never twins: KAI's PodGroupInfo.UID is the
    PodGroup's name (cluster_info.go), so equal-age jobs go in name order."""
    keys: dict[str, str] = {}
    grouped: dict[str, bool] = {}
    for pod in pods:
        meta = pod["metadata"]
        shape = [
            meta.get("namespace") or "default",
            pod["spec"],
            meta.get("labels") or {},
            meta.get("annotations") or {},
        ]
        digest = hashlib.sha256(json.dumps(shape, sort_keys=True).encode()).hexdigest()[:8]
        keys[pod_key(pod)] = f"twin-{digest}"
        grouped[pod_key(pod)] = bool((meta.get("annotations") or {}).get("pod-group-name"))
    counts = Counter(keys.values())
    return {pod: key if counts[key] > 1 and grouped[pod] else pod for pod, key in keys.items()}


def owner_key(kind: str, namespace: str, name: str) -> str:
    """``Kind namespace/name`` of an owner."""
    return f"{kind} {namespace or 'default'}/{name}"


def group_key(group: Obj) -> str:
    """A PodGroup's key: its owner's (``owner_key``) when it has one, as its name is made
    from the owner's uid, else ``namespace/name``."""
    meta = group["metadata"]
    for owner in meta.get("ownerReferences") or []:
        return owner_key(str(owner.get("kind")), meta.get("namespace") or "", str(owner["name"]))
    return pod_key(group)
