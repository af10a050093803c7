"""The cluster state the engine schedules from: an incremental snapshot.

Backends feed it Kubernetes-shaped objects as they change (``upsert`` / ``remove``); it keeps
per-node arrays, per-job counters and per-queue sums up to date, so a scheduling cycle starts
without rebuilding anything. Every change of a task goes through ``set_status``, the one place
where accounting happens, so sessions can change tasks virtually and undo exactly.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from pykai.engine.gpu_sharing import portion_of
from pykai.engine.job_indexes import JobIndexes
from pykai.engine.jobs import (
    ACCOUNTING_CLASS,
    ACTIVE,
    ALIVE,
    COUNTS_FOR_QUEUE,
    HOLDS_NODE,
    ON_NODE,
    REQUESTING,
    Job,
    SubGroup,
    Task,
    TaskStatus,
    task_order_key,
)
from pykai.engine.nodes import NodeTable
from pykai.engine.objects import annotated_time, gpu_groups, preemptible, task_status
from pykai.engine.queue_sums import QueueSums
from pykai.engine.typical import DEFAULT_WINDOW, SeenPods, shape_of
from pykai.model import constants as c
from pykai.model.errors import FieldProblem, ValidationError
from pykai.model.meta import Obj, kind_of
from pykai.model.node import read_node
from pykai.model.pod import PodView, read_pod
from pykai.model.podgroup import PodGroupView, parse_podgroup
from pykai.model.priorityclass import PriorityClassView, default_priority, parse_priority_class
from pykai.model.problems import ObjectProblem, identity
from pykai.model.queue import QueueView, parse_queue
from pykai.model.resources import Resources

STATE_KINDS = ("PriorityClass", "Queue", "Node", "PodGroup", "Pod")
"""The kinds the engine reads, in the order that lets each find what it refers to."""


def gpu_class(task: Task) -> int:
    """A task's GPU class on its node: 0 a share, k for k whole GPUs (up to 8), -1 none."""
    gpu = task.pod.gpu
    if gpu.is_shared:
        return 0
    return min(gpu.whole, 8) if gpu.whole else -1


def _job_counts_alike(job: Job, group: PodGroupView, priority: int) -> bool:
    """True if ``group`` (a new version of the job's PodGroup) leaves every figure the job
    counts as it was: same object, spec, priority and preemptibility."""
    before = job.group
    return (
        before.meta.uid == group.meta.uid
        and before.meta.creation == group.meta.creation
        and before.spec == group.spec
        and job.priority == priority
        and job.preemptible == preemptible(group, priority)
    )


class ClusterState:
    """Nodes, tasks, jobs, queues and priority classes, with usage kept current."""

    def __init__(self) -> None:
        self.nodes = NodeTable()
        self.tasks: dict[str, Task] = {}
        self.jobs: dict[str, Job] = {}
        self.queues: dict[str, QueueView] = {}
        self.priority_classes: dict[str, PriorityClassView] = {}
        self.members: dict[
            str, dict[str, Task]
        ] = {}  # job key -> tasks, even before the job exists
        self.sums = QueueSums(self.queue_chain)
        self.usage = self.sums.own  # per queue, its own jobs
        self.subtree = self.sums.subtree  # per queue, its whole subtree
        self.foreign_used = Resources.ZERO  # pods of other schedulers on nodes
        self.pending_jobs: set[str] = set()  # keys of jobs with pending tasks
        self.held_jobs: dict[str, int] = {}  # job key -> its pending pods held back as invalid
        self.indexes = JobIndexes()
        self.ungrouped: dict[str, Task] = {}  # pykai's live pods that name no PodGroup, by uid
        # jobs whose PodGroup or tasks changed since take_changed_jobs was last called
        self.changed_jobs: set[str] = set()
        # shapes of the pods seen most recently, for fragmentation-aware placement
        self.seen = SeenPods(DEFAULT_WINDOW)
        # objects taken in only in part, or skipped, and why (see model/problems.py)
        self.problems: dict[tuple[str, str, str], ObjectProblem] = {}
        # node name -> the tasks placed on it while it does not exist, by uid (charged to no
        # queue until it does)
        self._stranded: dict[str, dict[str, Task]] = {}
        self._chains: dict[str, tuple[str, ...]] = {}
        self._tasks_by_key: dict[str, str] = {}  # "ns/name" -> uid

    # ---- feeding objects -------------------------------------------------------------------

    def upsert(self, obj: Obj) -> None:
        """Add or replace an object of a kind the engine reads (others are ignored). Never
        raises: an object that cannot be taken as written is recorded in ``problems`` and
        skipped; a pod or node that cannot be read whole still counts for what it holds."""
        kind = kind_of(obj)
        if kind not in STATE_KINDS:
            return
        problems: list[FieldProblem] | list[str]
        try:
            problems = self._read(kind, obj)
        except ValidationError as exc:
            problems = exc.problems
            self._skip(kind, obj)
        except Exception as exc:  # a shape no reader foresaw: skip it, never stop the cycle
            problems = [f"cannot be read ({type(exc).__name__}: {exc})"]
            self._skip(kind, obj)
        key = identity(obj)
        if problems:
            self.problems[key] = ObjectProblem.of(obj, "; ".join(map(str, problems)))
        else:
            self.problems.pop(key, None)

    def _read(self, kind: str, obj: Obj) -> list[FieldProblem]:
        """Take one object in; what is wrong with it (nothing: an empty list)."""
        if kind == "Node":
            node, node_problems = read_node(obj)
            if node.name in self.nodes:
                self.nodes.upsert(node)
            else:  # the tasks already bound to it are charged to their queues from now on
                stranded = list(self._stranded.get(node.name, {}).values())
                self._recharged(stranded, lambda: self.nodes.upsert(node))
            return node_problems
        if kind == "Pod":
            pod, pod_problems = read_pod(obj)
            if pod.scheduler_name != c.SCHEDULER_NAME:
                pod_problems = []  # another scheduler's pod: it only has to count
            self._upsert_pod(pod, "; ".join(map(str, pod_problems)))
            return pod_problems
        if kind == "PodGroup":
            self._upsert_job(parse_podgroup(obj))
        elif kind == "Queue":
            queue = parse_queue(obj)
            self.queues[queue.name] = queue
            self._queues_changed()
        elif kind == "PriorityClass":
            pc = parse_priority_class(obj)
            self.priority_classes[pc.name] = pc
            self._reprioritise()
        return []

    def _skip(self, kind: str, obj: Obj) -> None:
        """Forget an object that cannot be read (an earlier, readable version included),
        except a pod or node: those keep what the last readable version said they hold, and
        such a node takes nothing new (what it offers now is unknown)."""
        _, namespace, name = identity(obj)
        if kind == "Node" and name in self.nodes.index:
            self.nodes.upsert(replace(self.nodes.view(name), unschedulable=True))
        elif kind not in ("Pod", "Node"):
            self.remove(kind, namespace, name)

    def remove(self, kind: str, namespace: str, name: str) -> None:
        """Forget an object."""
        self.problems.pop((kind, namespace, name), None)
        key = f"{namespace}/{name}" if namespace else name
        if kind == "Node" and name in self.nodes:
            placed = [t for t in self.tasks.values() if t.node == name]
            self._recharged(placed, lambda: self.nodes.remove(name))
        elif kind == "Pod":
            uid = self._tasks_by_key.get(key)
            if uid is not None:
                self._remove_task(self.tasks[uid])
        elif kind == "PodGroup":
            self._remove_job(key)
        elif kind == "Queue" and self.queues.pop(name, None) is not None:
            self._queues_changed()
        elif kind == "PriorityClass" and self.priority_classes.pop(name, None) is not None:
            self._reprioritise()

    def _recharged(self, tasks: list[Task], change: Callable[[], None]) -> None:
        """Add or remove a node (``change``) with ``tasks``, those placed on it, taken out of
        every sum before and counted again after, so what their queues are charged follows
        whether their node exists."""
        for task in tasks:
            self._account(task, -1.0)
        change()
        for task in tasks:
            self._account(task, 1.0)

    def ensure_current(self) -> None:
        """Lay out the node arrays again if nodes were added or removed, and recount usage."""
        if not self.nodes.dirty:
            return
        self.nodes.rebuild()
        self.foreign_used = Resources.ZERO
        for task in self.tasks.values():
            self._account_node(task, 1.0)

    # ---- the one mutation of a task ----------------------------------------------------------

    def set_status(
        self, task: Task, status: TaskStatus, node: str, gpu_groups: tuple[str, ...] | None = None
    ) -> None:
        """Move a task to a status, node and GPU groups (None keeps them), keeping every sum
        consistent."""
        groups = task.gpu_groups if gpu_groups is None else gpu_groups
        same_place = node == task.node and groups == task.gpu_groups
        if same_place and ACCOUNTING_CLASS[status] == ACCOUNTING_CLASS[task.status]:
            task.status = status
            return
        # staying on its node and devices, the node's per-device view is laid out once, after
        # both steps
        self._account(task, -1.0, settled=not (same_place and status in ON_NODE))
        task.status = status
        task.node = node
        task.gpu_groups = groups
        self._account(task, 1.0)

    # ---- queries -----------------------------------------------------------------------------

    def queue_chain(self, queue: str) -> tuple[str, ...]:
        """The queue and its ancestors, leaf first; empty if the queue or an ancestor is missing."""
        chain = self._chains.get(queue)
        if chain is None:
            names: list[str] = []
            current = queue
            while current:
                if current not in self.queues or current in names:
                    names = []
                    break
                names.append(current)
                current = self.queues[current].parent
            chain = tuple(names)
            self._chains[queue] = chain
        return chain

    def priority_value(self, class_name: str) -> int:
        """The value of a priority class; unknown names get the global default, else 50."""
        pc = self.priority_classes.get(class_name)
        if pc is not None:
            return pc.value
        return default_priority(self.priority_classes.values())

    def total_capacity(self) -> Resources:
        """Σ allocatable over schedulable nodes, minus what pods of other schedulers use."""
        self.ensure_current()
        nodes = self.nodes
        if not len(nodes):
            return Resources.ZERO
        total = nodes.alloc[nodes.schedulable].sum(axis=0)
        return Resources(float(total[0]), float(total[1]), float(total[2])) - self.foreign_used

    def forget_assumed(self, namespace: str, name: str) -> None:
        """A bind that failed: the task is pending again."""
        task = self.task_by_key(namespace, name)
        if task is not None and task.status == TaskStatus.BINDING:
            self.set_status(task, TaskStatus.PENDING, "", ())

    def task_by_key(self, namespace: str, name: str) -> Task | None:
        """The task of pod ``namespace/name``."""
        uid = self._tasks_by_key.get(f"{namespace}/{name}")
        return self.tasks.get(uid) if uid else None

    # ---- pods --------------------------------------------------------------------------------

    def _upsert_pod(self, pod: PodView, problem: str = "") -> None:
        """Take a pod in; one with a ``problem`` is never placed, but counts where it is."""
        key = pod.meta.key
        uid = pod.meta.uid or key
        old_uid = self._tasks_by_key.get(key)
        if old_uid is not None and old_uid != uid:
            self._remove_task(self.tasks[old_uid])
        ours = pod.scheduler_name == c.SCHEDULER_NAME
        group = pod.meta.annotations.get(c.POD_GROUP_ANNOTATION, "") if ours else ""
        job_key = f"{pod.meta.namespace}/{group}" if group else ""
        status = task_status(pod)
        if problem and status == TaskStatus.PENDING:
            status = TaskStatus.GATED  # not to be placed as written; its gang waits
        node = pod.node_name
        groups = gpu_groups(pod) if node else ()
        task = self.tasks.get(uid)
        seen = False
        if task is not None:
            if status == TaskStatus.PENDING and task.status == TaskStatus.BINDING:
                status, node, groups = task.status, task.node, task.gpu_groups  # assumed bind
            if self._task_counts_alike(task, pod, job_key, problem, status, node, groups):
                task.pod, task.status = pod, status  # a bind, a start: no sum changes
                task.order_key = task_order_key(pod)
                self._mark_ungrouped(task, ours and not group)
                if job_key in self.jobs:
                    self.changed_jobs.add(job_key)
                return
            self._account(task, -1.0)
            if task.job_key != job_key:
                self._detach(task)
            task.pod = pod
            task.job_key = job_key
        else:
            task = Task(pod=pod, job_key=job_key, subgroup="", request=Resources.ZERO)
            self.tasks[uid] = task
            self._tasks_by_key[key] = uid
            seen = True
        task.problem = problem
        task.subgroup = pod.meta.labels.get(c.SUBGROUP_LABEL, "")
        task.request = self._task_request(pod)
        if seen:
            self.seen.add(shape_of(task))
        task.order_key = task_order_key(pod)
        task.status, task.node, task.gpu_groups = status, node, groups
        self.members.setdefault(job_key, {})[uid] = task
        self._mark_ungrouped(task, ours and not group)
        self._account(task, 1.0)

    def _task_counts_alike(
        self,
        task: Task,
        pod: PodView,
        job_key: str,
        problem: str,
        status: TaskStatus,
        node: str,
        groups: tuple[str, ...],
    ) -> bool:
        """True if the task, read again as ``pod``, counts exactly as it did: same job,
        subgroup, place, request, GPU share and accounting class (so no sum changes)."""
        return (
            task.job_key == job_key
            and task.node == node
            and task.gpu_groups == groups
            and ACCOUNTING_CLASS[status] == ACCOUNTING_CLASS[task.status]
            and task.problem == problem
            and task.subgroup == pod.meta.labels.get(c.SUBGROUP_LABEL, "")
            and task.pod.gpu == pod.gpu
            and task.request == self._task_request(pod)
        )

    def _mark_ungrouped(self, task: Task, ungrouped: bool) -> None:
        """Keep a live pod of pykai's that names no PodGroup among the ungrouped."""
        if ungrouped and not task.pod.deleting:
            self.ungrouped[task.uid or task.pod.meta.key] = task
        else:
            self.ungrouped.pop(task.uid or task.pod.meta.key, None)

    def _task_request(self, pod: PodView) -> Resources:
        """A pod's request with GPUs counted as quota-equivalent devices."""
        if not pod.gpu.is_shared:
            return pod.requests
        memories = self.nodes.gpu_memory_mib
        smallest = float(memories[memories > 0].min()) if (memories > 0).any() else 0.0
        return Resources(
            pod.requests.cpu, pod.requests.memory, pod.gpu.devices_equivalent(smallest)
        )

    def _remove_task(self, task: Task) -> None:
        self.ungrouped.pop(task.uid or task.pod.meta.key, None)
        self._account(task, -1.0)
        self._detach(task)
        del self.tasks[task.uid or task.pod.meta.key]
        self._tasks_by_key.pop(task.pod.meta.key, None)

    def _detach(self, task: Task) -> None:
        members = self.members.get(task.job_key)
        if members is not None:
            members.pop(task.uid or task.pod.meta.key, None)
            if not members and task.job_key not in self.jobs:
                del self.members[task.job_key]

    # ---- jobs --------------------------------------------------------------------------------

    def _upsert_job(self, group: PodGroupView) -> None:
        key = group.key
        old = self.jobs.get(key)
        priority = self.priority_value(group.spec.priority_class_name)
        if old is not None and _job_counts_alike(old, group, priority):
            old.group = group  # annotations or status: no sum changes
            old.last_start = annotated_time(group, c.LAST_START_ANNOTATION, old.last_start)
            old.stale_since = annotated_time(group, c.STALE_ANNOTATION, old.stale_since)
            self.changed_jobs.add(key)
            self.indexes.mark_stale(old, old.stale_since)
            return
        members = self.members.setdefault(key, {})
        for task in members.values():
            self._account(task, -1.0)
        job = Job(
            key=key,
            group=group,
            queue=group.spec.queue,
            priority=priority,
            preemptible=preemptible(group, priority),
            subgroups={
                g.name: SubGroup(g.name, g.min_member, parent=g.parent or "")
                for g in group.spec.sub_groups
            },
            tasks=members,
            last_start=annotated_time(
                group, c.LAST_START_ANNOTATION, old.last_start if old else None
            ),
            stale_since=annotated_time(group, c.STALE_ANNOTATION, old.stale_since if old else None),
        )
        self.jobs[key] = job
        self.changed_jobs.add(key)
        self.indexes.mark_stale(job, job.stale_since)
        for task in members.values():
            self._account(task, 1.0)

    def _remove_job(self, key: str) -> None:
        job = self.jobs.get(key)
        if job is None:
            return
        for task in job.tasks.values():
            self._account(task, -1.0)
        del self.jobs[key]
        self.changed_jobs.add(key)
        self.pending_jobs.discard(key)
        self.held_jobs.pop(key, None)
        self.indexes.stale_marked.discard(key)
        for task in job.tasks.values():
            self._account(task, 1.0)
        if not job.tasks:
            self.members.pop(key, None)

    def _reprioritise(self) -> None:
        for job in list(self.jobs.values()):
            self._upsert_job(job.group)

    # ---- queues ------------------------------------------------------------------------------

    def _queues_changed(self) -> None:
        """The tree changed: forget the chains, recount the subtree sums."""
        self._chains.clear()
        self.sums.recount()

    # ---- accounting --------------------------------------------------------------------------

    def _account_node(self, task: Task, sign: float, settled: bool = True) -> None:
        """Node usage: running, bound, allocated and pipelined tasks use their node; releasing
        tasks still do, and their resources also count as releasing. ``settled``: False when
        another change of the same node follows at once (``NodeTable.add_task``)."""
        if task.status not in ON_NODE or task.node not in self.nodes.index:
            return  # on no node, or on one that does not exist: it holds nothing
        shared = (task.gpu_groups, self.portion(task, task.node)) if task.gpu_groups else None
        releasing = task.status is TaskStatus.RELEASING
        self.nodes.add_task(
            task.node, task.request, sign, gpu_class(task), releasing, shared, settled
        )
        if task.status in HOLDS_NODE and (not task.job_key or self._kueue_task(task)):
            request = task.request
            amount = Resources(request.cpu, request.memory, 0.0) if shared else request
            self.foreign_used += amount.scaled(sign)  # outside KAI's queues' fair share

    def _kueue_task(self, task: Task) -> bool:
        """A pod of a job Kueue admitted (KAI's queues do not govern it)."""
        job = self.jobs.get(task.job_key)
        return job is not None and job.kueue_admitted

    def portion(self, task: Task, node: str) -> float:
        """The portion of each device a shared task takes on a node."""
        i = self.nodes.index.get(node)
        memory = float(self.nodes.gpu_memory_mib[i]) if i is not None else 0.0
        return portion_of(task.pod.gpu, memory)

    def _account(self, task: Task, sign: float, settled: bool = True) -> None:
        """Add (+1) or remove (-1) a task's contribution to nodes, its job and its queues
        (``settled`` as for ``_account_node``)."""
        if not self.nodes.dirty:
            self._account_node(task, sign, settled)
        job = self.jobs.get(task.job_key) if task.job_key else None
        if job is None:
            return
        self.changed_jobs.add(job.key)
        status = task.status
        step = int(sign)
        subgroups = job.subgroups
        if status in HOLDS_NODE:
            job.running += step
        if status in ACTIVE:
            job.active += step
            group = subgroups.get(task.subgroup) if subgroups else None
            while group is not None:
                group.active += step
                group = subgroups.get(group.parent)
        if status in ALIVE:
            job.alive += step
            group = subgroups.get(task.subgroup) if subgroups else None
            while group is not None:
                group.alive += step
                group = subgroups.get(group.parent)
        request = task.request if sign > 0 else task.request.scaled(sign)
        if task.problem and status == TaskStatus.GATED:
            held = self.held_jobs.get(job.key, 0) + step
            if held:
                self.held_jobs[job.key] = held
            else:
                self.held_jobs.pop(job.key, None)
        if status is TaskStatus.PENDING:
            job.pending += step
            job.pending_request += request
            if job.pending:
                self.pending_jobs.add(job.key)
            else:
                self.pending_jobs.discard(job.key)
        allocated = status in COUNTS_FOR_QUEUE
        if allocated:
            job.allocated += request
        if status in REQUESTING:
            self._charge(task, job, request, allocated, sign > 0)
        if status in ACTIVE:  # the indexes read only what active tasks change
            self.indexes.update(job)

    def _charge(
        self, task: Task, job: Job, request: Resources, allocated: bool, adding: bool
    ) -> None:
        """Add ``request`` (``adding``; else it is negative and taken away) to the sums of the
        job's queues. A task placed on a node that does not exist is charged nothing, as in
        KAI, whose snapshot gives a pod the resources its queue is charged only when its node
        takes it in; it waits in ``_stranded`` for that node."""
        if allocated and task.node not in self.nodes:
            key = task.uid or task.pod.meta.key
            waiting = self._stranded.setdefault(task.node, {})
            if adding:
                waiting[key] = task
            else:
                waiting.pop(key, None)
                if not waiting:
                    del self._stranded[task.node]
            return
        self.sums.add(job.queue, request, allocated, not job.preemptible)

    def take_changed_jobs(self) -> set[str]:
        """The keys of the jobs that changed since the last call (their status may have)."""
        changed, self.changed_jobs = self.changed_jobs, set()
        return changed

    def running_in(self, queue: str, below_priority: int | None = None) -> list[Job]:
        """Jobs of a queue with pods holding nodes (optionally only those of lower priority),
        in key order."""
        return [self.jobs[k] for k in self.indexes.running_keys(queue, below_priority)]
