"""A scheduling session: fair shares for this cycle, statements, and the decisions they make.

Statements change tasks in the ClusterState directly and keep an undo log. Committed
allocations stay in the state as assumed binds (status Binding); pipelined placements are
undone when the session closes, since nothing is bound for them this cycle.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import NamedTuple

from pykai.engine.decisions import Bind, Choice, CycleResult, Evict, QueueStatus, Reason
from pykai.engine.fairshare import QueueShare, QueueShareInput, compute_fair_shares
from pykai.engine.jobs import HOLDS_NODE, Job, Task, TaskStatus
from pykai.engine.policies import PlacementPolicy, policy_for
from pykai.engine.queue_sums import QueueUsage
from pykai.engine.settings import PlacementStrategy, SchedulerConfig
from pykai.engine.state import ClusterState
from pykai.model.resources import Resources


class _Why(NamedTuple):
    """Why a task is evicted: the fields of its Evict after the pod's and job's."""

    reason: str
    message: str
    action: str
    preemptor: str


@dataclass(slots=True)
class _Change:
    task: Task
    old_status: TaskStatus
    old_node: str
    old_groups: tuple[str, ...]
    evicted: _Why | None = None  # why, for an eviction
    choice: Choice | None = None  # how an allocation's node was chosen


class Statement:
    """An in-memory transaction over task placements."""

    def __init__(self, session: Session) -> None:
        self._session = session
        self._changes: list[_Change] = []

    def allocate(
        self, task: Task, node: str, gpu_groups: tuple[str, ...] = (), choice: Choice | None = None
    ) -> None:
        """Place a task on idle resources of a node (and shared GPU groups); ``choice`` says
        how the node was chosen."""
        self._change(task, TaskStatus.ALLOCATED, node, gpu_groups, choice=choice)

    def pipeline(self, task: Task, node: str, gpu_groups: tuple[str, ...] = ()) -> None:
        """Place a task on resources of a node that are being released."""
        self._change(task, TaskStatus.PIPELINED, node, gpu_groups)

    def evict(
        self, task: Task, reason: str, message: str, *, action: str = "", preemptor: str = ""
    ) -> None:
        """Release a running task: ``action`` (KAI's name; "": the one that gives ``reason``)
        evicts it to make room for the job ``preemptor`` (its key; "": none). The cycle's
        Evict carries them as they are given."""
        why = _Why(reason, message, action, preemptor)
        self._change(task, TaskStatus.RELEASING, task.node, task.gpu_groups, why)

    def unevict(self, task: Task) -> None:
        """Put a task this statement evicted back as it was (KAI's Unevict)."""
        for change in reversed(self._changes):
            if change.task is task and change.evicted is not None:
                self._change(task, change.old_status, change.old_node, change.old_groups)
                return
        raise ValueError(f"task {task.pod.meta.key} was not evicted in this statement")

    def checkpoint(self) -> int:
        """A point to roll back to."""
        return len(self._changes)

    def rollback(self, checkpoint: int = 0) -> None:
        """Undo every change after ``checkpoint``, newest first."""
        state = self._session.state
        while len(self._changes) > checkpoint:
            change = self._changes.pop()
            state.set_status(change.task, change.old_status, change.old_node, change.old_groups)

    def discard(self) -> None:
        """Undo everything."""
        self.rollback(0)

    def commit(self) -> None:
        """Keep the changes: they become this cycle's decisions. Committed allocations are
        final (a task allocated in this cycle is no victim), so each is told to the session's
        ``on_bind`` at once, as KAI's statement hands its binds to the cache on commit."""
        session = self._session
        session.committed.extend(self._changes)
        if session.on_bind is not None:
            for change in self._changes:
                task = change.task
                if task.status == TaskStatus.ALLOCATED and id(task) not in session.streamed:
                    session.streamed.add(id(task))
                    session.on_bind(session.bind_of(task, change.choice))
        self._changes = []

    def _change(
        self,
        task: Task,
        status: TaskStatus,
        node: str,
        gpu_groups: tuple[str, ...],
        evicted: _Why | None = None,
        choice: Choice | None = None,
    ) -> None:
        change = _Change(task, task.status, task.node, task.gpu_groups, evicted, choice)
        self._changes.append(change)
        self._session.state.set_status(task, status, node, gpu_groups)


@dataclass(slots=True)
class QueueInfo:
    """A queue as one session sees it: its settings, fair share and live usage."""

    name: str
    parent: str
    children: list[str]
    priority: int
    creation: float
    uid: str
    deserved: Resources  # math.inf = unlimited
    limit: Resources  # math.inf = no limit
    fair_share: Resources
    usage: QueueUsage  # live: the state's subtree sums
    share: Resources | None = None  # allocatable share, once computed for the session's total

    def allocatable_share(self, total: Resources) -> Resources:
        """min(limit, max(deserved, fair share)); unlimited quota uses the limit, then the total."""
        values = []
        for deserved, limit, fair, whole in zip(
            self.deserved, self.limit, self.fair_share, total, strict=True
        ):
            if deserved == float("inf"):
                values.append(whole if limit == float("inf") else limit)
            else:
                values.append(min(limit, max(deserved, fair)))
        return Resources(*values)


@dataclass(slots=True)
class Session:
    """One cycle's view: the state, the configuration, fair shares and collected decisions."""

    state: ClusterState
    config: SchedulerConfig
    now: float
    total: Resources = Resources.ZERO
    queues: dict[str, QueueInfo] = field(default_factory=dict)
    committed: list[_Change] = field(default_factory=list)
    reasons: dict[str, list[Reason]] = field(default_factory=dict)
    stale: dict[str, float | None] = field(default_factory=dict)
    moved_jobs: set[str] = field(default_factory=set)  # moved by consolidation this cycle
    out_of_budget: dict[str, int] = field(default_factory=dict)  # action -> jobs not tried
    untried: dict[str, dict[str, int]] = field(default_factory=dict)  # the same, by queue
    placement: PlacementPolicy = field(default_factory=lambda: policy_for(PlacementStrategy()))
    on_bind: Callable[[Bind], None] | None = None  # told each bind as its statement commits
    streamed: set[int] = field(default_factory=set)  # ids of tasks told to on_bind

    @classmethod
    def open(
        cls,
        state: ClusterState,
        config: SchedulerConfig,
        now: float,
        on_bind: Callable[[Bind], None] | None = None,
    ) -> Session:
        """Compute this cycle's fair shares and queue views; ``on_bind`` is told each bind
        when its statement commits (the same binds are in the result at close)."""
        state.ensure_current()
        session = cls(
            state=state,
            config=config,
            now=now,
            total=state.total_capacity(),
            placement=policy_for(config.placement, state.seen),
            on_bind=on_bind,
        )
        inputs = [
            QueueShareInput(
                name=q.name,
                parent=q.parent or None,
                priority=q.spec.priority,
                deserved=q.deserved,
                limit=q.limit,
                over_quota_weight=q.over_quota_weight,
                request=state.usage.get(q.name, QueueUsage()).requested,
                creation=q.meta.creation,
            )
            for q in sorted(state.queues.values(), key=lambda q: q.name)
        ]
        shares: dict[str, QueueShare] = compute_fair_shares(inputs, session.total)
        children: dict[str, list[str]] = {}
        for q in state.queues.values():
            if q.parent:
                children.setdefault(q.parent, []).append(q.name)
        for name, share in shares.items():
            view = state.queues[name]
            session.queues[name] = QueueInfo(
                name=name,
                parent=view.parent,
                children=sorted(c for c in children.get(name, []) if c in shares),
                priority=view.spec.priority,
                creation=view.meta.creation,
                uid=view.meta.uid,
                deserved=view.deserved,
                limit=view.limit,
                fair_share=share.fair_share,
                usage=state.subtree.setdefault(name, QueueUsage()),
            )
        return session

    def statement(self) -> Statement:
        """A new transaction."""
        return Statement(self)

    def chain(self, job: Job) -> list[QueueInfo]:
        """The job's queue and its ancestors (leaf first); empty if any is missing."""
        names = self.state.queue_chain(job.queue)
        if not names or any(n not in self.queues for n in names):
            return []
        return [self.queues[n] for n in names]

    def note(self, job: Job, reason: Reason) -> None:
        """Record why a job could not be scheduled this cycle."""
        self.reasons.setdefault(job.key, []).append(reason)

    def close(self) -> CycleResult:
        """Turn committed changes into decisions; undo pipelined placements."""
        result = CycleResult(
            stale=dict(self.stale),
            out_of_budget=dict(self.out_of_budget),
            untried={action: dict(queues) for action, queues in self.untried.items()},
        )
        first: dict[int, _Change] = {}
        evicted: dict[int, _Why] = {}
        choices: dict[int, Choice | None] = {}
        for change in self.committed:
            first.setdefault(id(change.task), change)
            if change.evicted is not None:
                evicted[id(change.task)] = change.evicted
            choices[id(change.task)] = change.choice
        bound_jobs: dict[str, int] = {}
        for key, change in first.items():
            task = change.task
            if task.status == TaskStatus.ALLOCATED:
                result.binds.append(self.bind_of(task, choices.get(key)))
                self.state.set_status(task, TaskStatus.BINDING, task.node)
                bound_jobs[task.job_key] = bound_jobs.get(task.job_key, 0) + 1
            elif task.status == TaskStatus.PIPELINED:
                result.pipelined.append(task.pod.meta.key)
                self.state.set_status(task, change.old_status, change.old_node, change.old_groups)
            elif task.status == TaskStatus.RELEASING and key in evicted:
                result.evictions.append(
                    Evict(task.namespace, task.name, task.uid, task.job_key, *evicted[key])
                )
        result.binds.sort(key=lambda b: (b.namespace, b.name))
        for job_key, count in sorted(bound_jobs.items()):
            self._mark_started(job_key, count, result)
        for job_key, reasons in self.reasons.items():
            job = self.state.jobs.get(job_key)
            if job is not None and (job.pending or job_key in self.state.held_jobs):
                result.unschedulable[job_key] = reasons
        for name, info in self.queues.items():
            usage = info.usage
            result.queues[name] = QueueStatus(
                deserved=info.deserved,
                fair_share=info.fair_share,
                allocated=usage.allocated,
                allocated_non_preemptible=usage.allocated_non_preemptible,
                requested=usage.requested,
            )
        return result

    def bind_of(self, task: Task, choice: Choice | None) -> Bind:
        """The bind decision for a task allocated in this session."""
        portion = self.state.portion(task, task.node) if task.gpu_groups else 0.0
        return Bind(
            task.namespace, task.name, task.uid, task.node, task.gpu_groups, portion, choice
        )

    def _mark_started(self, job_key: str, newly_bound: int, result: CycleResult) -> None:
        """A job that had nothing running and now runs has (re)started now."""
        job = self.state.jobs.get(job_key)
        if job is None:
            return
        holding = sum(1 for t in job.tasks.values() if t.status in HOLDS_NODE)
        if holding == newly_bound:
            job.last_start = self.now
            result.started[job.key] = self.now
