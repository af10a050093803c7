"""Kueue's admission (kubernetes-sigs/kueue ``pkg/scheduler/scheduler.go``, ``pkg/cache/queue``,
``pkg/scheduler/preemption``) as one pass over the Workloads: per ClusterQueue the pending
Workloads in Kueue's order (priority, then creation), one head per ClusterQueue per cycle;
heads that do not borrow first; quota reserved for all PodSets at once; StrictFIFO blocks
behind a head that does not fit, BestEffortFIFO moves on; preemption by Kueue's classic
candidate order, carried out by suspension. Before admitting, the engine's placement checks
that the whole gang fits on the current nodes (beyond Kueue). Pure: objects and the engine's
state in, decisions out; the state is left as it was."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from pykai.engine.actions.gang import place_gang
from pykai.engine.jobs import ON_NODE, Task
from pykai.engine.kueue.positions import queue_order
from pykai.engine.kueue.quota import (
    Assignment,
    ClusterQueueView,
    Flavor,
    FlavorResource,
    Mode,
    PodSetRequests,
    amount,
    assign_flavors,
    build_tree,
    fits,
    quantity,
    read_flavor,
    reserve,
)
from pykai.engine.session import Session
from pykai.engine.settings import SchedulerConfig
from pykai.engine.state import ClusterState
from pykai.model import constants as c
from pykai.model.conditions import condition_of, is_true
from pykai.model.constraints import NodeConstraints
from pykai.model.kueue.jobs import with_pod_set_info
from pykai.model.meta import Obj, mapping, objects, parse_time
from pykai.model.pod import PodView, read_pod

JOB_UID_LABEL = "kueue.x-k8s.io/job-uid"
NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"
NAMESPACE_MISMATCH = "workload namespace doesn't match ClusterQueue selector"
PREEMPTION_CAUSES = {
    "InClusterQueue": "prioritization in the ClusterQueue",
    "InCohortReclamation": "reclamation within the cohort",
    "InCohortReclaimWhileBorrowing": "reclamation within the cohort while borrowing",
}


@dataclass(slots=True)
class WorkloadView:
    """What admission reads of a Workload."""

    obj: Obj
    namespace: str
    name: str
    uid: str
    priority: int
    creation: float
    queue_name: str
    pod_sets: list[tuple[str, int, PodSetRequests, NodeConstraints]]  # name, count, total, nodes
    templates: list[tuple[str, int, Obj]]  # name, count, pod template
    cluster_queue: str  # where it holds quota, "" when it holds none
    usage: dict[FlavorResource, float]
    assigned: dict[str, list[str]]  # pod set -> the flavors it holds quota in
    reserved_at: float
    evicted: bool

    @property
    def key(self) -> str:
        """``namespace/name``."""
        return f"{self.namespace}/{self.name}"

    @property
    def job_uid(self) -> str:
        """The UID of the job it stands for."""
        return str(mapping(self.obj["metadata"].get("labels")).get(JOB_UID_LABEL) or "")


_VIEWS: dict[str, tuple[str, WorkloadView]] = {}  # uid -> (resourceVersion, its view)
_VIEWS_KEPT = 100_000
# (uid, resourceVersion, per pod set its flavors) -> the pods NodeFit places for the Workload
_PODS: dict[tuple[str, str, tuple[tuple[str, tuple[str, ...]], ...]], list[PodView]] = {}


def read_workload(obj: Obj) -> WorkloadView:
    """A Workload as admission sees it: read once per version of the object (a pass reads
    every Workload, twice, each cycle), a fresh view each time, since a pass changes its own
    views' quota fields."""
    meta = obj["metadata"]
    uid, version = str(meta.get("uid") or ""), str(meta.get("resourceVersion") or "")
    if not uid or not version:
        return _read_workload(obj)
    known = _VIEWS.get(uid)
    if known is None or known[0] != version:
        if len(_VIEWS) >= _VIEWS_KEPT:
            _VIEWS.clear()
        known = (version, _read_workload(obj))
        _VIEWS[uid] = known
    return replace(known[1], obj=obj)


def _read_workload(obj: Obj) -> WorkloadView:
    meta, spec, status = obj["metadata"], mapping(obj.get("spec")), mapping(obj.get("status"))
    pod_sets: list[tuple[str, int, PodSetRequests, NodeConstraints]] = []
    templates: list[tuple[str, int, Obj]] = []
    for pod_set in objects(spec.get("podSets")):
        name, count = str(pod_set.get("name")), int(pod_set.get("count") or 0)
        template = mapping(pod_set.get("template"))
        pod, _ = read_pod(_pod(template, meta, f"{name}-0"))
        per_pod: PodSetRequests = {
            "cpu": pod.requests.cpu,
            "memory": pod.requests.memory,
            c.GPU_RESOURCE: pod.requests.gpu,
            **dict(pod.extended),
        }
        pod_sets.append((name, count, {r: v * count for r, v in per_pod.items()}, pod.constraints))
        templates.append((name, count, template))
    reserving = is_true(obj, "QuotaReserved")
    admission = mapping(status.get("admission")) if reserving else {}
    usage: dict[FlavorResource, float] = {}
    assigned: dict[str, list[str]] = {}
    for assignment in objects(admission.get("podSetAssignments")):
        flavors = mapping(assignment.get("flavors"))
        assigned[str(assignment.get("name"))] = sorted({str(f) for f in flavors.values()})
        for resource, value in mapping(assignment.get("resourceUsage")).items():
            fr = (str(flavors.get(resource, "")), str(resource))
            usage[fr] = usage.get(fr, 0.0) + amount(str(resource), value)
    reserved = condition_of(obj, "QuotaReserved").get("lastTransitionTime")
    return WorkloadView(
        obj=obj,
        namespace=str(meta.get("namespace") or "default"),
        name=str(meta["name"]),
        uid=str(meta.get("uid") or ""),
        priority=int(spec.get("priority") or 0),
        creation=parse_time(meta["creationTimestamp"]) if meta.get("creationTimestamp") else 0.0,
        queue_name=str(spec.get("queueName") or ""),
        pod_sets=pod_sets,
        templates=templates,
        cluster_queue=str(admission.get("clusterQueue") or ""),
        usage=usage,
        assigned=assigned,
        reserved_at=parse_time(reserved) if reserved else 0.0,
        evicted=is_true(obj, "Evicted"),
    )


def _pod(template: Obj, meta: Obj, name: str) -> Obj:
    """A pod of a PodSet, as its job's controller would make it, for pykai's placement."""
    spec = dict(mapping(template.get("spec")))
    spec["schedulerName"] = c.SCHEDULER_NAME
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            **mapping(template.get("metadata")),
            "name": f"{meta['name']}-{name}",
            "namespace": meta.get("namespace") or "default",
            "uid": f"{meta.get('uid', '')}-{name}",
        },
        "spec": spec,
    }


@dataclass(slots=True)
class Pending:
    """A Workload that stays without quota this pass: QuotaReserved False."""

    workload: WorkloadView
    reason: str
    message: str


@dataclass(slots=True)
class Admit:
    """Quota reserved in a ClusterQueue: ``status.admission``."""

    workload: WorkloadView
    admission: Obj


@dataclass(slots=True)
class Preempt:
    """A Workload to evict (suspend) for a preemptor."""

    workload: WorkloadView
    reason: str  # InClusterQueue | InCohortReclamation | InCohortReclaimWhileBorrowing
    message: str
    preemptor: WorkloadView


@dataclass(slots=True)
class Decisions:
    """What one admission pass decided."""

    admitted: list[Admit] = field(default_factory=list)
    pending: list[Pending] = field(default_factory=list)
    preempted: list[Preempt] = field(default_factory=list)
    queued: dict[str, list[WorkloadView]] = field(default_factory=dict)  # by ClusterQueue
    queues: dict[str, ClusterQueueView] = field(default_factory=dict)


@dataclass(slots=True)
class Objects:
    """The Kueue objects admission reads."""

    workloads: list[Obj]
    local_queues: list[Obj]
    cluster_queues: list[Obj]
    cohorts: list[Obj]
    flavors: list[Obj]
    makers: dict[str, frozenset[str]]  # Workload key -> UIDs of its job and what the job made
    namespaces: dict[str, dict[str, str]] = field(default_factory=dict)  # name -> labels
    admission_checks: list[Obj] = field(default_factory=list)

    def namespace_labels(self, namespace: str) -> dict[str, str]:
        """A namespace's labels, with the ``kubernetes.io/metadata.name`` label Kubernetes
        gives every namespace."""
        return {**self.namespaces.get(namespace, {}), NAMESPACE_NAME_LABEL: namespace}


def admit(objs: Objects, state: ClusterState, config: SchedulerConfig, now: float) -> Decisions:
    """One admission pass."""
    flavors = {f.name: f for f in map(read_flavor, objs.flavors)}
    checks = {str(a["metadata"]["name"]): is_true(a, "Active") for a in objs.admission_checks}
    views = build_tree(objs.cluster_queues, objs.cohorts, flavors, checks)
    decisions = Decisions(queues=views)
    local = {
        (str(q["metadata"].get("namespace") or "default"), str(q["metadata"]["name"])): str(
            mapping(q.get("spec")).get("clusterQueue") or ""
        )
        for q in objs.local_queues
    }
    workloads = [read_workload(w) for w in objs.workloads]
    for w in workloads:
        if is_true(w.obj, "Finished"):
            w.cluster_queue, w.usage = "", {}  # a finished Workload frees its quota
    reserving = [w for w in workloads if w.cluster_queue]
    for w in reserving:
        if w.cluster_queue in views:
            reserve(views[w.cluster_queue].node, w.usage)
    for w in workloads:
        inactive = mapping(w.obj.get("spec")).get("active") is False
        if w.cluster_queue or is_true(w.obj, "Finished") or inactive:
            continue
        cq_name = local.get((w.namespace, w.queue_name))
        if cq_name is None:
            decisions.pending.append(
                Pending(w, "Misconfigured", f"LocalQueue {w.queue_name} doesn't exist")
            )
        elif cq_name not in views:
            decisions.pending.append(
                Pending(w, "Misconfigured", f"ClusterQueue {cq_name} doesn't exist")
            )
        elif not views[cq_name].active:
            decisions.pending.append(
                Pending(w, "Misconfigured", f"ClusterQueue {cq_name} is inactive")
            )
        else:
            decisions.queued.setdefault(cq_name, []).append(w)
    for queue in decisions.queued.values():
        queue.sort(key=lambda w: queue_order(w.priority, w.creation, w.uid))
    fit = NodeFit(state, config, now, flavors)
    try:
        for w in reserving:
            if is_true(w.obj, "Admitted"):  # its pods are made (or about to be)
                fit.reserve_missing(w, objs.makers.get(w.key, frozenset()))
        _cycles(decisions, reserving, fit, objs)
    finally:
        fit.close()
    return decisions


def _cycles(
    decisions: Decisions, reserving: list[WorkloadView], fit: NodeFit, objs: Objects
) -> None:
    """Kueue's scheduling cycles until one admits nothing: one head per ClusterQueue; a head
    from a namespace the ClusterQueue's selector does not take is inadmissible
    (``Misconfigured``) and blocks nothing."""
    views = decisions.queues
    done: set[str] = set()
    blocked: set[str] = set()
    while True:
        heads: list[tuple[WorkloadView, ClusterQueueView, Assignment]] = []
        for cq_name, queue in sorted(decisions.queued.items()):
            if cq_name in blocked:
                continue
            cq = views[cq_name]
            for head in (w for w in queue if w.key not in done):
                if cq.admits_namespace(objs.namespace_labels(head.namespace)):
                    heads.append((head, cq, assign_flavors(cq, head.pod_sets)))
                    break
                done.add(head.key)
                decisions.pending.append(Pending(head, "Misconfigured", NAMESPACE_MISMATCH))
        if not heads:
            return
        heads.sort(
            key=lambda e: (
                e[2].mode in (Mode.FIT_BORROWING, Mode.PREEMPT_BORROWING),
                -e[0].priority,
                e[0].creation,
            )
        )
        for w, cq, assignment in heads:
            done.add(w.key)
            usage = assignment.usage()
            if assignment.mode <= Mode.FIT_BORROWING and not fits(cq, usage, borrowing=True):
                done.discard(w.key)  # no longer fits after another admission: next cycle
                continue
            if assignment.mode <= Mode.FIT_BORROWING:
                assigned = {p.name: sorted(set(p.flavors.values())) for p in assignment.pod_sets}
                # with admission checks, the checks (a ProvisioningRequest) decide on nodes
                placed = None if cq.checks else fit.place(w, assigned)
                if placed is None:
                    reserve(cq.node, usage)
                    w.cluster_queue, w.usage = cq.name, usage
                    reserving.append(w)
                    decisions.admitted.append(Admit(w, _admission(cq, assignment)))
                    continue
                outcome = Pending(w, "WaitingForNodes", placed)
            elif assignment.mode < Mode.NO_FIT:
                targets = _targets(views, cq, w, assignment, reserving)
                message = assignment.message()
                if targets:
                    fresh = [(t, why) for t, why in targets if not t.evicted]
                    for target, why in fresh:
                        decisions.preempted.append(
                            Preempt(target, why, _preemption_message(views, cq, w, target, why), w)
                        )
                        target.evicted = True
                    message += f". Pending the preemption of {len(targets)} workload(s)"
                    decisions.pending.append(Pending(w, "WaitingForPreemptedWorkloads", message))
                    blocked.add(cq.name)  # the preemptor stays head
                    continue
                outcome = Pending(w, "WaitingForQuota", message)
            else:
                outcome = Pending(w, assignment.reason(), assignment.message())
            decisions.pending.append(outcome)
            if cq.strategy == "StrictFIFO":
                blocked.add(cq.name)


def _admission(cq: ClusterQueueView, assignment: Assignment) -> Obj:
    return {
        "clusterQueue": cq.name,
        "podSetAssignments": [
            {
                "name": p.name,
                "flavors": dict(sorted(p.flavors.items())),
                "resourceUsage": {r: quantity(r, v) for (_, r), v in sorted(p.usage.items())},
                "count": p.count,
            }
            for p in assignment.pod_sets
        ],
    }


def _targets(
    views: dict[str, ClusterQueueView],
    cq: ClusterQueueView,
    w: WorkloadView,
    assignment: Assignment,
    reserving: list[WorkloadView],
) -> list[tuple[WorkloadView, str]]:
    """Kueue's classic preemption: candidates in ``CandidatesOrdering``, taken until the
    preemptor fits, then the minimal set (fill back)."""
    needed = {fr for p in assignment.pod_sets if p.mode >= Mode.PREEMPT for fr in p.usage}
    policy = cq.preemption
    within = str(policy.get("withinClusterQueue") or "Never")
    reclaim = str(policy.get("reclaimWithinCohort") or "Never")
    borrow_policy = mapping(policy.get("borrowWithinCohort"))
    while_borrowing_on = borrow_policy.get("policy", "Never") != "Never"
    threshold = borrow_policy.get("maxPriorityThreshold")
    candidates: list[tuple[WorkloadView, str]] = []
    for other in reserving:
        if other is w or not set(other.usage) & needed or other.cluster_queue not in views:
            continue
        lower = other.priority < w.priority
        if other.cluster_queue == cq.name:
            newer = other.priority == w.priority and other.creation > w.creation
            if (within == "LowerPriority" and lower) or (
                within == "LowerOrNewerEqualPriority" and (lower or newer)
            ):
                candidates.append((other, "InClusterQueue"))
        elif reclaim != "Never" and cq.node.parent is not None:
            if views[other.cluster_queue].node.root() is not cq.node.root():
                continue
            if reclaim == "LowerPriority" and not lower:
                continue
            borrowing = while_borrowing_on and lower
            borrowing = borrowing and (threshold is None or other.priority <= int(threshold))
            reason = "InCohortReclaimWhileBorrowing" if borrowing else "InCohortReclamation"
            candidates.append((other, reason))
    candidates.sort(
        key=lambda t: (
            not t[0].evicted,
            t[0].cluster_queue == cq.name,
            t[0].priority,
            -t[0].reserved_at,
            t[0].uid,
        )
    )
    usage = assignment.usage()
    attempts = (True, False) if while_borrowing_on else (False, True)
    for allow_borrowing in attempts:
        # reclaiming without borrowing is no candidate when the preemptor may borrow
        usable = [t for t in candidates if not allow_borrowing or t[1] != "InCohortReclamation"]
        found = _take_until_fits(views, cq, usage, needed, usable, allow_borrowing)
        if found:
            return found
    return []


def _take_until_fits(
    views: dict[str, ClusterQueueView],
    cq: ClusterQueueView,
    usage: dict[FlavorResource, float],
    needed: set[FlavorResource],
    candidates: list[tuple[WorkloadView, str]],
    borrowing: bool,
) -> list[tuple[WorkloadView, str]]:
    taken: list[tuple[WorkloadView, str]] = []
    try:
        for target, why in candidates:
            node = views[target.cluster_queue].node
            if why != "InClusterQueue" and not any(node.borrowing(fr) for fr in needed):
                continue  # its ClusterQueue is back within its nominal quota
            reserve(node, target.usage, -1.0)
            taken.append((target, why))
            if fits(cq, usage, borrowing=borrowing):
                break
        else:
            return []
        for target, why in reversed(taken[:-1]):  # fill back: the minimal set
            reserve(views[target.cluster_queue].node, target.usage)
            if fits(cq, usage, borrowing=borrowing):
                taken.remove((target, why))
            else:
                reserve(views[target.cluster_queue].node, target.usage, -1.0)
        return taken
    finally:
        for target, _ in taken:
            reserve(views[target.cluster_queue].node, target.usage)


def _preemption_message(
    views: dict[str, ClusterQueueView],
    cq: ClusterQueueView,
    preemptor: WorkloadView,
    target: WorkloadView,
    why: str,
) -> str:
    return (
        f"Preempted to accommodate a workload (UID: {preemptor.uid}, JobUID: "
        f"{preemptor.job_uid}) due to {PREEMPTION_CAUSES[why]}; preemptor path: "
        f"{cq.node.path()}; preemptee path: {views[target.cluster_queue].node.path()}"
    )


class NodeFit:
    """The engine's placement over the current nodes, inside one statement that is undone at
    the end: the pods of admitted Workloads that are not on nodes yet are placed first, then
    each candidate's whole gang (all PodSets) must be placed to be admitted."""

    def __init__(
        self, state: ClusterState, config: SchedulerConfig, now: float, flavors: dict[str, Flavor]
    ) -> None:
        state.ensure_current()  # nodes added or removed since the last cycle
        self._state = state
        self._flavors = flavors
        self._session = Session(state=state, config=config, now=now)
        self._statement = self._session.statement()
        self._on_node: dict[str, int] = {}  # owner UID -> its pods on nodes
        for task in state.tasks.values():
            if task.status in ON_NODE:
                for owner in task.pod.meta.owners:
                    self._on_node[owner.uid] = self._on_node.get(owner.uid, 0) + 1

    def reserve_missing(self, w: WorkloadView, makers: frozenset[str]) -> None:
        """Hold room for an admitted Workload's pods that are not on a node yet (``makers``:
        the UIDs of what owns its pods)."""
        present = sum(self._on_node.get(uid, 0) for uid in makers)
        if present >= sum(count for _, count, _ in w.templates):
            return  # all its pods are on nodes: nothing to hold
        tasks = self._workload_tasks(w, w.assigned)
        if tasks[present:]:
            place_gang(self._session, self._statement, tasks[present:], satisfied=True)

    def place(self, w: WorkloadView, assigned: dict[str, list[str]]) -> str | None:
        """Place a Workload's gang (kept placed) with the flavors ``assigned`` to each pod
        set; None if it fits, else why not."""
        return self._place(self._workload_tasks(w, assigned))

    def place_pods(self, meta: Obj, templates: list[tuple[str, int, Obj]]) -> str | None:
        """Place the pods of (pod set, count, pod template) all at once (kept placed); None if
        they fit, else why not (``meta``: of the object they stand for, for names)."""
        return self._place(self._tasks(meta, templates))

    def _place(self, tasks: list[Task]) -> str | None:
        failed = place_gang(self._session, self._statement, tasks, satisfied=False)
        if failed is None:
            return None
        name = tasks[failed].pod.meta.labels.get("kueue.pykai.io/pod-set", "")
        return (
            f"the gang does not fit on the current nodes: no node for a pod of pod set {name} "
            f"({failed} of {len(tasks)} pods placed)"
        )

    def _workload_tasks(self, w: WorkloadView, assigned: dict[str, list[str]]) -> list[Task]:
        """Fresh tasks for a Workload's pods with the flavors ``assigned``: their pods read
        once per version of the Workload and of the flavors' node labels and tolerations (a
        pass places each candidate, and holds room for each admitted one, every cycle)."""
        meta = w.obj["metadata"]
        uid, version = str(meta.get("uid") or ""), str(meta.get("resourceVersion") or "")
        flavored = tuple(
            (name, tuple(repr(self._flavors.get(f)) for f in assigned.get(name, [])))
            for name, _, _ in w.templates
        )
        key = (uid, version, flavored)
        pods = _PODS.get(key) if uid and version else None
        if pods is None:
            tasks = self._tasks(meta, self._flavored(w.templates, assigned))
            if uid and version:
                if len(_PODS) >= _VIEWS_KEPT:
                    _PODS.clear()
                _PODS[key] = [task.pod for task in tasks]
            return tasks
        return [Task(pod=pod, job_key="", subgroup="", request=pod.requests) for pod in pods]

    def close(self) -> None:
        """Undo every placement."""
        self._statement.discard()

    def _flavored(
        self, templates: list[tuple[str, int, Obj]], assigned: dict[str, list[str]]
    ) -> list[tuple[str, int, Obj]]:
        """The templates as the job will start them: with their flavors' node labels and
        tolerations."""
        out: list[tuple[str, int, Obj]] = []
        for name, count, template in templates:
            flavors = [self._flavors[f] for f in assigned.get(name, []) if f in self._flavors]
            selector = {k: v for f in flavors for k, v in f.node_labels.items()}
            tolerations = [t for f in flavors for t in f.tolerations]
            out.append((name, count, with_pod_set_info(template, selector, tolerations)))
        return out

    def _tasks(self, meta: Obj, templates: list[tuple[str, int, Obj]]) -> list[Task]:
        tasks: list[Task] = []
        for name, count, template in templates:
            labelled = {
                **template,
                "metadata": {
                    **mapping(template.get("metadata")),
                    "labels": {
                        **mapping(mapping(template.get("metadata")).get("labels")),
                        "kueue.pykai.io/pod-set": name,
                    },
                },
            }
            for i in range(count):
                pod, _ = read_pod(_pod(labelled, meta, f"{name}-{i}"))
                tasks.append(Task(pod=pod, job_key="", subgroup="", request=pod.requests))
        return tasks
