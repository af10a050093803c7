"""Why a job waits and what would let it run: scheduling cycles tried on copies of a cluster.

Each trial builds a new engine state from the cluster's objects, changed as the trial says
(nothing else is touched), runs one cycle with the cluster's configuration and looks at what it
decided for the job: its pods bound, or placed on room that evictions made for it (a reclaim or
a preemption), or the reasons it still waits. The trials:

- as it is: would the next cycle run it, and what would it evict;
- on an empty cluster (only this job's pods): can it ever run as asked — if not, the reason is
  why never (no node big enough, a limit below the request, a missing queue);
- fewer pods (a smaller minMember), fewer GPUs per pod, another leaf queue: the first change of
  each kind that would let it run now.

From these, ``explain_job`` names the rule that holds it: a missing queue, the gang (pods still
missing), a queue limit, the non-preemptible quota, node constraints (it can never fit), fair
share (its queue would pass its fair share while other queues hold what it asks for, so it may
not reclaim from them) or capacity (the room is held by jobs it may not take from: its own
queue's, or of queues within their fair share, or not of lower priority).
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from pykai.engine.actions.allocate import tasks_to_allocate
from pykai.engine.decisions import Reason
from pykai.engine.jobs import Job
from pykai.engine.positions import pending_positions
from pykai.engine.scheduler import Scheduler
from pykai.engine.session import Session
from pykai.engine.settings import SchedulerConfig
from pykai.engine.state import STATE_KINDS, ClusterState
from pykai.model import constants as c
from pykai.model.meta import Obj
from pykai.model.positions import NOT_READY, Position
from pykai.model.quantity import parse_quantity
from pykai.model.resources import EPS, RESOURCE_NAMES, Resources

Edit = Callable[[Obj], Obj | None]  # an object as the trial has it: a changed copy, or None


def load_state(objects: Iterable[Obj]) -> ClusterState:
    """A new engine state holding ``objects`` (those of kinds it does not read are skipped)."""
    by_kind: dict[str, list[Obj]] = {kind: [] for kind in STATE_KINDS}
    for obj in objects:
        kind = obj.get("kind")
        if isinstance(kind, str) and kind in by_kind:
            by_kind[kind].append(obj)
    state = ClusterState()
    for kind in STATE_KINDS:
        for obj in by_kind[kind]:
            state.upsert(obj)
    return state


@dataclass(frozen=True, slots=True)
class Trial:
    """One cycle tried on a changed copy of the cluster."""

    change: str  # what was changed ("" for the cluster as it is)
    runs: bool  # the cycle binds the job's pods, or places them on room it frees for it
    bound: bool = False  # bound at once (else placed on room being released: once it is free)
    evictions: tuple[str, ...] = ()  # "namespace/pod: message", evicted for the job
    reasons: tuple[Reason, ...] = ()  # why it still waits


@dataclass(frozen=True, slots=True)
class QueueFigures:
    """A queue of the job's chain as the cycle sees it (engine units; inf = unlimited)."""

    name: str
    deserved: Resources
    fair_share: Resources
    limit: Resources
    allocated: Resources


@dataclass(frozen=True, slots=True)
class JobExplanation:
    """Why a pending job waits and what would let it run."""

    job: str  # "namespace/name" of its PodGroup
    queue: str
    pending_pods: int
    request: Resources  # what its next try asks for (the gang up to its minimum)
    position: Position | None
    rule: str  # missing queue, gang, limit, quota, node constraints, fair share, capacity, none
    verdict: str  # one line for people
    now: Trial
    ever: Trial
    alternatives: tuple[Trial, ...] = ()  # changes that would let it run now
    queues: tuple[QueueFigures, ...] = field(default=())  # its queue and its ancestors


class Trials:
    """Cycles tried on changed copies of one cluster's objects."""

    def __init__(self, objects: list[Obj], config: SchedulerConfig, now: float) -> None:
        self.objects = objects
        self.config = config
        self.now = now

    def run(self, job_key: str, change: str = "", edit: Edit | None = None) -> Trial:
        """One cycle on the objects, each as ``edit`` gives it (the objects are not changed)."""
        objects: Iterable[Obj] = self.objects
        if edit is not None:
            objects = [found for obj in self.objects if (found := edit(obj)) is not None]
        return self.run_on(load_state(objects), job_key, change)

    def run_on(self, state: ClusterState, job_key: str, change: str = "") -> Trial:
        """One cycle on ``state``, a state of the objects as changed (the cycle changes it)."""
        result = Scheduler(self.config).run_cycle(state, self.now)
        job = state.jobs.get(job_key)
        if job is None:
            return Trial(change, False)
        pods = {t.pod.meta.key for t in job.tasks.values()}
        bound = any(f"{b.namespace}/{b.name}" in pods for b in result.binds)
        runs = bound or any(key in pods for key in result.pipelined)
        mention = re.compile(rf"(?<![\w./-]){re.escape(job_key)}(?![\w./-])")
        evictions = tuple(
            f"{e.namespace}/{e.name}: {e.message}"
            for e in result.evictions
            if mention.search(e.message)
        )
        reasons = () if runs else tuple(result.unschedulable.get(job_key, ()))
        return Trial(change, runs, bound, evictions if runs else (), reasons)


def explain_job(
    objects: list[Obj], job_key: str, config: SchedulerConfig, now: float
) -> JobExplanation | None:
    """Why the job ``job_key`` waits and what would let it run (None if it has no such
    PodGroup or nothing pending). The state built from the objects is read first, then the
    as-is trial runs on it (a cycle changes it): one state fewer to build."""
    state = load_state(objects)
    job = state.jobs.get(job_key)
    if job is None or not job.pending:
        return None
    queue, pending = job.queue, job.pending
    request = Resources.ZERO
    for task in tasks_to_allocate(job):
        request += task.request
    positions = {p.job: p for p in pending_positions(state, now)}
    session = Session.open(state, config, now)
    chain = tuple(
        QueueFigures(q.name, q.deserved, q.fair_share, q.limit, q.usage.allocated)
        for q in session.chain(job)
    )
    elsewhere = _elsewhere(session, queue)
    changes = _changes(session, job, request)
    trials = Trials(objects, config, now)
    namespace, name = job_key.split("/", 1)
    ever = trials.run(job_key, "an empty cluster", _only_job(namespace, name))
    as_is = trials.run_on(state, job_key)
    alternatives: list[Trial] = []
    if not as_is.runs and ever.runs:
        alternatives = _alternatives(trials, job_key, changes)
    rule, verdict = _verdict(as_is, ever, chain, request, elsewhere)
    return JobExplanation(
        job_key,
        queue,
        pending,
        request,
        positions.get(job_key),
        rule,
        verdict,
        as_is,
        ever,
        tuple(alternatives),
        chain,
    )


@dataclass(frozen=True, slots=True)
class _Changes:
    """What the alternatives may change, read from the state before a cycle changes it."""

    min_member: int  # the job's
    most_gpus: int  # the most whole GPUs one of its pods asks for
    leaves: tuple[str, ...]  # the other leaf queues whose limits leave room for its request


def _changes(session: Session, job: Job, request: Resources) -> _Changes:
    leaves = []
    for leaf in sorted(session.queues):
        chain = [session.queues[q] for q in session.state.queue_chain(leaf)]
        if leaf == job.queue or session.queues[leaf].children or not chain:
            continue
        if all((q.usage.allocated + request).fits_in(q.limit) for q in chain):
            leaves.append(leaf)
    most = max((int(t.pod.gpu.whole) for t in job.tasks.values()), default=0)
    return _Changes(job.min_member, most, tuple(leaves))


def _alternatives(trials: Trials, job_key: str, changes: _Changes) -> list[Trial]:
    """The largest smaller minMember and the most GPUs per pod (fewer than asked) with which
    the job would run now, each found by bisection (fewer never makes a job harder to place),
    and every other leaf queue whose limits leave room for it."""
    namespace, name = job_key.split("/", 1)
    smaller = _largest(
        changes.min_member - 1,
        lambda members: trials.run(
            job_key, f"minMember {members}", _min_member(namespace, name, members)
        ),
    )
    fewer = _largest(
        changes.most_gpus - 1,
        lambda gpus: trials.run(
            job_key, f"{gpus} GPU(s) per pod", _gpus_per_pod(namespace, name, gpus)
        ),
    )
    found = [t for t in (smaller, fewer) if t is not None]
    for leaf in changes.leaves:
        trial = trials.run(job_key, f"queue {leaf}", _queue(namespace, name, leaf))
        if trial.runs:
            found.append(trial)
    return found


def _largest(most: int, attempt: Callable[[int], Trial]) -> Trial | None:
    """The trial of the largest value in 1..``most`` that runs, by bisection (a value runs if
    every smaller one does); None if even 1 does not."""
    low, high, best = 1, most, None
    while low <= high:
        middle = (low + high) // 2
        trial = attempt(middle)
        if trial.runs:
            best, low = trial, middle + 1
        else:
            high = middle - 1
    return best


def _elsewhere(session: Session, queue: str) -> Resources:
    """What the queues beside the job's chain hold (the siblings of its queue and of each
    ancestor, with their subtrees): all a reclaim could take from."""
    chain = session.state.queue_chain(queue)
    held = Resources.ZERO
    for name in chain:
        parent = session.queues[name].parent if name in session.queues else ""
        siblings = (
            session.queues[parent].children
            if parent in session.queues
            else [q.name for q in session.queues.values() if not q.parent]
        )
        for sibling in siblings:
            if sibling != name and sibling in session.queues:
                held += session.queues[sibling].usage.allocated
    return held


def _verdict(
    now: Trial,
    ever: Trial,
    chain: tuple[QueueFigures, ...],
    request: Resources,
    elsewhere: Resources,
) -> tuple[str, str]:
    """The rule that holds the job and a line saying so."""
    if now.runs and now.bound:
        return "none", "it runs in the next cycle"
    if now.runs:
        freed = f"the {len(now.evictions)} pod(s) evicted for it" if now.evictions else "pods"
        return "none", f"it runs once {freed} terminating on its nodes have left"
    codes = [r.reason for r in (now.reasons or ever.reasons)]
    first = codes[0] if codes else ""
    if first == "QueueDoesNotExist":
        return "missing queue", "it cannot run until its queue exists: " + _message(now, ever)
    if first == NOT_READY:
        return "gang", "it waits for its gang's pods: " + _message(now, ever)
    if not ever.runs:
        rule = {"OverLimit": "limit", "NonPreemptibleOverQuota": "quota"}.get(first)
        return (
            rule or "node constraints",
            "it can never run as asked, even on an empty cluster: " + _message(ever, now),
        )
    if first == "OverLimit":
        return "limit", "it waits for its queue's usage to fall under its limit: " + _message(
            now, ever
        )
    if first == "NonPreemptibleOverQuota":
        return "quota", "it waits: a non-preemptible job must stay within its queue's quota: " + (
            _message(now, ever)
        )
    over = [
        (q.name, resource)
        for q in chain
        for resource, asked, used, fair, held in zip(
            RESOURCE_NAMES, request, q.allocated, q.fair_share, elsewhere, strict=True
        )
        if asked > 0 and used + asked > fair + EPS and held > 0
    ]
    if over:
        queue, resource = over[0]
        return "fair share", (
            f"it waits: with it, queue {queue} would pass its fair share of {resource}, so it "
            "may not reclaim from other queues; it runs when room frees up or their usage falls"
        )
    return "capacity", (
        "it waits: the room it needs is held by jobs it may not take from (their queues are "
        "within their fair share, or their priority is not lower): " + _message(now, ever)
    )


def _message(first: Trial, second: Trial) -> str:
    reasons = first.reasons or second.reasons
    return reasons[0].message if reasons else "no reason recorded"


def _is_job_pod(obj: Obj, namespace: str, name: str) -> bool:
    meta = obj.get("metadata") or {}
    return (
        obj.get("kind") == "Pod"
        and (meta.get("namespace") or "default") == namespace
        and (meta.get("annotations") or {}).get(c.POD_GROUP_ANNOTATION) == name
    )


def _is_group(obj: Obj, namespace: str, name: str) -> bool:
    meta = obj.get("metadata") or {}
    return (
        obj.get("kind") == "PodGroup"
        and (meta.get("namespace") or "default") == namespace
        and meta.get("name") == name
    )


def _only_job(namespace: str, name: str) -> Edit:
    """Every other pod and PodGroup removed."""

    def edit(obj: Obj) -> Obj | None:
        if obj.get("kind") not in ("Pod", "PodGroup"):
            return obj
        mine = _is_job_pod(obj, namespace, name) or _is_group(obj, namespace, name)
        return obj if mine else None

    return edit


def _group_spec(namespace: str, name: str, field: str, value: object) -> Edit:
    """The job's PodGroup with ``spec.field`` set to ``value``."""

    def edit(obj: Obj) -> Obj | None:
        if not _is_group(obj, namespace, name):
            return obj
        changed = copy.deepcopy(obj)
        changed.setdefault("spec", {})[field] = value
        return changed

    return edit


def _min_member(namespace: str, name: str, members: int) -> Edit:
    return _group_spec(namespace, name, "minMember", members)


def _queue(namespace: str, name: str, queue: str) -> Edit:
    return _group_spec(namespace, name, "queue", queue)


def _gpus_per_pod(namespace: str, name: str, gpus: int) -> Edit:
    """Each container of the job's pending pods asks at most ``gpus`` whole GPUs."""

    def edit(obj: Obj) -> Obj | None:
        if not _is_job_pod(obj, namespace, name) or (obj.get("spec") or {}).get("nodeName"):
            return obj
        changed = copy.deepcopy(obj)
        for container in (changed.get("spec") or {}).get("containers") or []:
            resources = container.get("resources") or {}
            for part in ("requests", "limits"):
                amounts = resources.get(part) or {}
                try:
                    more = parse_quantity(str(amounts.get(c.GPU_RESOURCE, 0))) > gpus
                except ValueError:
                    more = False  # unreadable: the trial sees it as the scheduler does
                if more:
                    amounts[c.GPU_RESOURCE] = str(gpus)
        return changed

    return edit
