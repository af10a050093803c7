"""What a Kueue run decided, read back from the apiserver as fields, and the differences between
two runs (the real Kueue's and pykai's) as fields.

Contract:

- ``read(api, node_classes)`` is the decision of the cluster as it stands: per Kueue-managed
  job (a Job, RayJob or RayCluster labelled ``kueue.x-k8s.io/queue-name``, or owning a
  Workload), keyed
  ``Kind namespace/name``; a job made by another one (a RayJob's RayCluster and submitter Job,
  whose names KubeRay makes with a random suffix) is keyed by its maker,
  ``Kind of <maker's key>``: ``spec.suspend`` (absent counts as false: KubeRay's RayJob
  declares it ``omitempty``, so the real Kueue's unsuspend leaves no field, where a patch
  leaves ``false``), its Workload (the one it owns: whether it exists,
  its ClusterQueue, the flavors per pod set, the status and reason of QuotaReserved, Admitted,
  Evicted, Preempted and Requeued; messages are not compared), its pods: the node class of
  each bound pod (``node_class``: nodes equal in allocatable, labels less the hostname, and
  taints are interchangeable; classed from the manifests given, else as the apiserver holds
  them) and how many wait unbound; pods being deleted are not counted,
  they are released. Per ClusterQueue: ``status.flavorsReservation`` / ``flavorsUsage``
  (quantities canonical, so ``"2"`` equals ``"2000m"``) and the pending, reserving and admitted
  Workload counts. Workload names (Kueue's hash of the job's UID) never appear: a Workload is
  known by its job.
- ``differences(expected, actual)`` lists every field where ``actual`` differs from
  ``expected`` (a job or ClusterQueue missing on one side is one difference); empty when they
  agree. Its ``str`` is for people; tests compare the fields."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, fields

from pykai.kube.api import KubeApi
from pykai.model.kinds import BY_KIND
from pykai.model.meta import Obj
from pykai.model.quantity import parse_quantity

HOSTNAME = "kubernetes.io/hostname"
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
JOB_KINDS = ("Job", "RayJob", "RayCluster")
CONDITIONS = ("QuotaReserved", "Admitted", "Evicted", "Preempted", "Requeued")


@dataclass(frozen=True)
class Condition:
    """A Workload condition's status and reason ("" and "" when it is absent)."""

    status: str = ""
    reason: str = ""

    def __str__(self) -> str:
        return f"{self.status} {self.reason}".strip() or "absent"


@dataclass(frozen=True)
class WorkloadDecision:
    """What Kueue decided for one job's Workload."""

    exists: bool = False
    cluster_queue: str = ""  # status.admission.clusterQueue ("" if not admitted)
    flavors: tuple[
        tuple[str, tuple[tuple[str, str], ...]], ...
    ] = ()  # pod set -> resource -> flavor
    quota_reserved: Condition = Condition()
    admitted: Condition = Condition()
    evicted: Condition = Condition()
    preempted: Condition = Condition()
    requeued: Condition = Condition()


@dataclass(frozen=True)
class JobDecision:
    """One Kueue-managed job: its suspension, its Workload, its pods."""

    suspended: bool  # spec.suspend (absent is false)
    workload: WorkloadDecision
    bound: tuple[str, ...]  # the node class of each bound pod, sorted
    unbound: int  # pods not bound and not being deleted


@dataclass(frozen=True)
class Usage:
    """One flavor's quantity of one resource in a ClusterQueue's status."""

    flavor: str
    resource: str
    total: str
    borrowed: str


@dataclass(frozen=True)
class ClusterQueueDecision:
    """A ClusterQueue's status as Kueue writes it."""

    reservation: tuple[Usage, ...]  # status.flavorsReservation (zero rows left out)
    usage: tuple[Usage, ...]  # status.flavorsUsage (zero rows left out)
    pending: int
    reserving: int
    admitted: int


@dataclass(frozen=True)
class KueueDecision:
    """Everything compared of one run."""

    jobs: dict[str, JobDecision]
    cluster_queues: dict[str, ClusterQueueDecision]


@dataclass(frozen=True)
class Difference:
    """One field on which two runs differ."""

    subject: str  # "Job default/a", "ClusterQueue cq"
    field: str  # "workload.quota_reserved", "bound", ... ("" for a missing subject)
    expected: object
    actual: object

    def __str__(self) -> str:
        return f"{self.subject} {self.field or '(present)'}: {self.expected} ≠ {self.actual}"


def node_class(node: Obj) -> str:
    """Allocatable, labels (less the hostname) and taints: nodes equal in these are
    interchangeable."""
    labels = {k: v for k, v in node["metadata"].get("labels", {}).items() if k != HOSTNAME}
    key = [node.get("status", {}).get("allocatable", {}), labels, node["spec"].get("taints", [])]
    return hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:12]


def _condition(obj: Obj, kind: str) -> Condition:
    for found in obj.get("status", {}).get("conditions", []):
        if found.get("type") == kind:
            return Condition(str(found.get("status", "")), str(found.get("reason", "")))
    return Condition()


def _workload(workload: Obj | None) -> WorkloadDecision:
    if workload is None:
        return WorkloadDecision()
    admission = workload.get("status", {}).get("admission") or {}
    flavors = tuple(
        sorted(
            (str(a.get("name", "")), tuple(sorted((a.get("flavors") or {}).items())))
            for a in admission.get("podSetAssignments", [])
        )
    )
    found = {kind: _condition(workload, kind) for kind in CONDITIONS}
    return WorkloadDecision(
        exists=True,
        cluster_queue=str(admission.get("clusterQueue", "")),
        flavors=flavors,
        quota_reserved=found["QuotaReserved"],
        admitted=found["Admitted"],
        evicted=found["Evicted"],
        preempted=found["Preempted"],
        requeued=found["Requeued"],
    )


def _canonical(quantity: object) -> str:
    return format(parse_quantity(str(quantity)).normalize(), "f")


def usages(rows: list[Obj]) -> tuple[Usage, ...]:
    """A ClusterQueue's ``flavorsReservation`` or ``flavorsUsage`` as rows, zero rows left out,
    quantities canonical."""
    found = []
    for flavor in rows:
        for resource in flavor.get("resources", []):
            total, borrowed = resource.get("total", "0"), resource.get("borrowed", "0")
            if parse_quantity(str(total)) or parse_quantity(str(borrowed)):
                found.append(
                    Usage(
                        str(flavor.get("name", "")),
                        str(resource.get("name", "")),
                        _canonical(total),
                        _canonical(borrowed),
                    )
                )
    return tuple(sorted(found, key=lambda u: (u.flavor, u.resource)))


def _key(obj: Obj, by_uid: Mapping[str, Obj] | None = None, depth: int = 0) -> str:
    """``Kind namespace/name``, or ``Kind of <maker's key>`` for a job another job made."""
    for owner in obj["metadata"].get("ownerReferences", []) if by_uid else []:
        maker = (by_uid or {}).get(str(owner.get("uid", "")))
        if maker is not None and depth < len(JOB_KINDS):
            return f"{obj['kind']} of {_key(maker, by_uid, depth + 1)}"
    return f"{obj['kind']} {obj['metadata'].get('namespace', '')}/{obj['metadata']['name']}"


def read(api: KubeApi, node_classes: Mapping[str, str] | None = None) -> KueueDecision:
    """The decision of the cluster ``api`` reaches (see the module's contract); nodes are
    classed by ``node_classes`` (node -> class, e.g. from the manifests that made them, as what
    runs on a node may add labels), else by what the apiserver holds."""
    jobs: dict[str, Obj] = {}
    by_uid: dict[str, Obj] = {}
    labelled: list[Obj] = []
    for kind in JOB_KINDS:
        items, _ = api.list(BY_KIND[kind])
        for listed in items:
            item = {**listed, "kind": kind}
            by_uid[item["metadata"]["uid"]] = item
            if QUEUE_LABEL in item["metadata"].get("labels", {}):
                labelled.append(item)
    for item in labelled:
        jobs[_key(item, by_uid)] = item
    workloads: dict[str, Obj] = {}
    for workload in api.list(BY_KIND["Workload"])[0]:
        for owner in workload["metadata"].get("ownerReferences", []):
            job = by_uid.get(owner.get("uid", ""))
            if job is not None:
                jobs.setdefault(_key(job, by_uid), job)
                workloads[_key(job, by_uid)] = workload
    classes = dict(node_classes or {})
    if node_classes is None:
        classes = {n["metadata"]["name"]: node_class(n) for n in api.list(BY_KIND["Node"])[0]}
    bound: dict[str, list[str]] = {key: [] for key in jobs}
    unbound = dict.fromkeys(jobs, 0)
    for pod in api.list(BY_KIND["Pod"])[0]:
        if pod["metadata"].get("deletionTimestamp"):
            continue
        top = _top_job(pod, by_uid)
        if top is None or _key(top, by_uid) not in jobs:
            continue
        node = pod["spec"].get("nodeName", "")
        if node:
            bound[_key(top, by_uid)].append(classes.get(node, f"unknown node {node}"))
        else:
            unbound[_key(top, by_uid)] += 1
    decided = {
        key: JobDecision(
            suspended=bool(job.get("spec", {}).get("suspend", False)),
            workload=_workload(workloads.get(key)),
            bound=tuple(sorted(bound[key])),
            unbound=unbound[key],
        )
        for key, job in sorted(jobs.items())
    }
    queues = {}
    for queue in api.list(BY_KIND["ClusterQueue"])[0]:
        status = queue.get("status", {})
        queues[queue["metadata"]["name"]] = ClusterQueueDecision(
            reservation=usages(status.get("flavorsReservation", [])),
            usage=usages(status.get("flavorsUsage", [])),
            pending=int(status.get("pendingWorkloads", 0)),
            reserving=int(status.get("reservingWorkloads", 0)),
            admitted=int(status.get("admittedWorkloads", 0)),
        )
    return KueueDecision(decided, dict(sorted(queues.items())))


def _top_job(pod: Obj, by_uid: dict[str, Obj]) -> Obj | None:
    """The outermost job (of ``JOB_KINDS``) the pod belongs to, through its owners."""
    found: Obj | None = None
    owners = pod["metadata"].get("ownerReferences", [])
    seen: set[str] = set()
    while owners:
        uid = str(owners[0].get("uid", ""))
        owner = by_uid.get(uid)
        if owner is None or uid in seen:
            break
        seen.add(uid)
        found = owner
        owners = owner["metadata"].get("ownerReferences", [])
    return found


def _fields(prefix: str, expected: object, actual: object) -> list[tuple[str, object, object]]:
    """The leaf fields of two equal-typed dataclasses that differ, as dotted names."""
    if type(expected) is not type(actual) or not hasattr(expected, "__dataclass_fields__"):
        return [] if expected == actual else [(prefix, expected, actual)]
    if isinstance(expected, Condition):
        return [] if expected == actual else [(prefix, str(expected), str(actual))]
    found = []
    for item in fields(expected):  # type: ignore[arg-type]
        name = f"{prefix}.{item.name}" if prefix else item.name
        found += _fields(name, getattr(expected, item.name), getattr(actual, item.name))
    return found


def differences(expected: KueueDecision, actual: KueueDecision) -> list[Difference]:
    """Every field where ``actual`` differs from ``expected`` (see the module's contract)."""
    found: list[Difference] = []
    pairs: list[tuple[str, dict[str, object], dict[str, object]]] = [
        ("", dict(expected.jobs), dict(actual.jobs)),
        ("ClusterQueue ", dict(expected.cluster_queues), dict(actual.cluster_queues)),
    ]
    for prefix, left, right in pairs:
        for name in sorted(set(left) | set(right)):
            subject = f"{prefix}{name}"
            if name not in left or name not in right:
                found.append(Difference(subject, "", name in left, name in right))
                continue
            for field, was, now in _fields("", left[name], right[name]):
                found.append(Difference(subject, field, was, now))
    return found
