"""Tasks (pods) and jobs (PodGroups) as the engine tracks them."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

from pykai.model import constants as c
from pykai.model.kueue.api import ADMITTED_QUEUE
from pykai.model.pod import PodView
from pykai.model.podgroup import PodGroupView
from pykai.model.resources import Resources


class TaskStatus(Enum):
    """KAI's pod statuses (pkg/scheduler/api/pod_status)."""

    PENDING = "Pending"
    GATED = "Gated"
    ALLOCATED = "Allocated"
    PIPELINED = "Pipelined"
    BINDING = "Binding"
    BOUND = "Bound"
    RUNNING = "Running"
    RELEASING = "Releasing"
    SUCCEEDED = "Succeeded"
    FAILED = "Failed"

    # members are singletons and compare by identity: hash them by identity too (in C),
    # since every accounting step asks whether a status is in a set
    __hash__ = object.__hash__


# Statuses that hold node resources now.
HOLDS_NODE = frozenset(
    {TaskStatus.ALLOCATED, TaskStatus.BINDING, TaskStatus.BOUND, TaskStatus.RUNNING}
)
# Statuses counted toward the queue's allocation: KAI's AllocatedStatus, plus pipelined tasks,
# which KAI's proportion plugin counts from the moment a statement pipelines them.
COUNTS_FOR_QUEUE = HOLDS_NODE | {TaskStatus.PIPELINED}
# Statuses that count toward a gang's minimum ("active allocated").
ACTIVE = HOLDS_NODE | {TaskStatus.PIPELINED}
# Pods that count toward a gang being ready to start (KAI: alive minus gated).
ALIVE = frozenset(TaskStatus) - {
    TaskStatus.SUCCEEDED,
    TaskStatus.FAILED,
    TaskStatus.RELEASING,
    TaskStatus.GATED,
}
REQUESTING = HOLDS_NODE | {TaskStatus.PENDING, TaskStatus.PIPELINED}
# Statuses a victim's pods may be evicted from: placed before this cycle (a task allocated in
# this cycle is not a victim: it has not even started).
EVICTABLE = frozenset({TaskStatus.BINDING, TaskStatus.BOUND, TaskStatus.RUNNING})
# Statuses whose resources are taken on their node (pipelined ones as a reservation).
ON_NODE = HOLDS_NODE | {TaskStatus.PIPELINED, TaskStatus.RELEASING}


def _accounting_class(status: TaskStatus) -> tuple[bool, ...]:
    return (
        status in HOLDS_NODE,
        status in ON_NODE,
        status is TaskStatus.RELEASING,
        status in ACTIVE,
        status in ALIVE,
        status is TaskStatus.PENDING,
        status in REQUESTING,
    )


# Statuses that every sum treats alike (e.g. Allocated and Binding): moving between them on the
# same node changes no figure.
ACCOUNTING_CLASS = {status: _accounting_class(status) for status in TaskStatus}


@dataclass(slots=True, eq=False)
class Task:
    """One pod of a job."""

    pod: PodView
    job_key: str
    subgroup: str
    request: Resources  # cpu, memory, GPU devices (quota-equivalent, fractions included)
    status: TaskStatus = TaskStatus.PENDING
    node: str = ""  # the node it is placed on, empty when not placed
    gpu_groups: tuple[str, ...] = ()  # shared GPU groups it holds a portion of
    order_key: tuple[int, int, float, str] = (0, 0, 0.0, "")
    problem: str = ""  # why the pod cannot be placed as written (it is held back)

    @property
    def uid(self) -> str:
        """The pod's UID."""
        return self.pod.meta.uid

    @property
    def name(self) -> str:
        """The pod's name."""
        return self.pod.meta.name

    @property
    def namespace(self) -> str:
        """The pod's namespace."""
        return self.pod.meta.namespace


def task_order_key(pod: PodView) -> tuple[int, int, float, str]:
    """KAI's task order: Kubeflow master/launcher and Ray head first, then
    ``kai.scheduler/task-priority`` (labelled first, higher first), then creation time, then UID."""
    labels = pod.meta.labels
    leader = (
        labels.get(c.KUBEFLOW_ROLE_LABEL) in ("master", "launcher")
        or labels.get(c.RAY_NODE_TYPE_LABEL) == "head"
    )
    raw_priority = labels.get(c.TASK_PRIORITY_LABEL)
    try:
        task_priority = -int(raw_priority) if raw_priority is not None else 1 << 62
    except ValueError:
        task_priority = 1 << 62
    return (0 if leader else 1, task_priority, pod.meta.creation, pod.meta.uid)


@dataclass(slots=True, eq=False)
class SubGroup:
    """A named part of a gang with its own minimum."""

    name: str
    min_member: int
    parent: str = ""
    active: int = 0  # tasks in ACTIVE statuses, this subgroup's and its descendants'
    alive: int = 0


@dataclass(slots=True, eq=False)
class Job:
    """A PodGroup and its tasks."""

    key: str
    group: PodGroupView
    queue: str
    priority: int
    preemptible: bool
    subgroups: dict[str, SubGroup]
    tasks: dict[str, Task] = field(default_factory=dict)
    active: int = 0  # tasks in ACTIVE statuses
    running: int = 0  # tasks holding a node (HOLDS_NODE)
    alive: int = 0  # tasks that are neither finished nor releasing
    pending: int = 0
    allocated: Resources = Resources.ZERO  # COUNTS_FOR_QUEUE tasks
    pending_request: Resources = Resources.ZERO
    last_start: float | None = None
    stale_since: float | None = None
    # (-priority, min member, creation, tie): what job order needs besides the live counts,
    # worked out once for the job (a PodGroup or priority change makes a new Job)
    order_parts: tuple[int, int, float, str] | None = None

    def static_order(self) -> tuple[int, int, float, str]:
        """``order_parts``, worked out on first use."""
        if self.order_parts is None:
            meta = self.group.meta
            self.order_parts = (-self.priority, self.group.spec.min_member, meta.creation, self.tie)
        return self.order_parts

    @property
    def tie(self) -> str:
        """The last tie-break of job order: the PodGroup's name (KAI's job ID), then its
        namespace and UID, NUL-separated so that a name sorts before its extensions."""
        meta = self.group.meta
        return f"{meta.name}\0{meta.namespace}\0{meta.uid}"

    @property
    def min_member(self) -> int:
        """The gang's minimum number of pods."""
        return self.group.spec.min_member

    @property
    def creation(self) -> float:
        """The PodGroup's creation time."""
        return self.group.meta.creation

    @property
    def uid(self) -> str:
        """The PodGroup's UID."""
        return self.group.meta.uid

    @property
    def kueue_admitted(self) -> bool:
        """Whether Kueue admitted the job: its PodGroup names ``ADMITTED_QUEUE``, which is no
        KAI Queue, so KAI's queues do not govern it and engine/kueue/place.py places it."""
        return self.queue == ADMITTED_QUEUE

    def gang_satisfied(self) -> bool:
        """True if the job and every subgroup have at least their minimum of active tasks."""
        return self.active >= self.min_member and all(
            g.active >= g.min_member for g in self.subgroups.values()
        )

    def ready_for_scheduling(self) -> bool:
        """KAI's IsReadyForScheduling: enough pods exist to satisfy every minimum."""
        return self.alive >= self.min_member and all(
            g.alive >= g.min_member for g in self.subgroups.values()
        )

    def running_below_minimum(self) -> bool:
        """KAI's stale gang: no pod succeeded, some pod holds a node or releases one, and the
        job or a subgroup with pods has fewer active or releasing pods than its minimum (KAI
        v0.12.0 PodGroupInfo.IsStale counts a gang's "active used" pods, Releasing ones
        among them: pod_status.go activeUsedStatuses, podset.go IsGangSatisfied)."""
        tasks = self.tasks.values()
        if any(t.status == TaskStatus.SUCCEEDED for t in tasks):
            return False
        releasing = [t for t in tasks if t.status is TaskStatus.RELEASING]
        if not releasing and not any(t.status in HOLDS_NODE for t in tasks):
            return False
        used = {name: group.active for name, group in self.subgroups.items()}
        for task in releasing:
            group = self.subgroups.get(task.subgroup)
            while group is not None:
                used[group.name] += 1
                group = self.subgroups.get(group.parent)
        return self.active + len(releasing) < self.min_member or any(
            0 < used[name] < g.min_member for name, g in self.subgroups.items()
        )

    def elastic_state(self) -> int:
        """0 below the minimum, 1 exactly at it, 2 above it (KAI's elastic job order)."""
        if self.active < self.min_member:
            return 0
        return 1 if self.active == self.min_member else 2
