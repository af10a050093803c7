"""Declarative scenarios: every folder tests/scenarios/<NN>-<slug>/ holds Kubernetes manifests
and a scenario.yaml (description, semantics, optional config, steps). Each folder is one test
case, run through the embedded cluster — the same path as `pykai apply` — and its last
expectations are checked again after two extra rounds, so that a flapping outcome fails.

Expected outcomes are written from KAI's rules (/work/shared/guide/semantics.md), never from
running the engine. ``test_every_scenario_is_well_formed`` checks the folders themselves and
needs no cluster.

scenario.yaml, in short::

    description: ...
    semantics: "§3 allocate — gang all-or-nothing"
    config: {placementStrategy: {gpu: spread}}     # optional SchedulerConfig (aliases allowed)
    steps:
      - apply: [cluster.yaml, jobs.yaml]           # applied together, in file order
        expect:
          pods: {default/a-0: n1, default/a-1: Bound, default/b-0: Pending, default/c: Absent}
          same_node: [[default/a-0, default/a-1]]
          different_nodes: [[default/x, default/y]]
          queues: {team: {fairShare: {gpu: 70}, allocated: {gpu: 4, cpu: 1500}}}
          podgroups: {default/g: {reasons: [OverLimit]}, default/h: {reasons: []}}
          message_contains: {default/g: "needs 4"}  # a string, or a list all in one message
      - delete: [{kind: Pod, name: a-0, namespace: default}]
      - advance: 61s
      - reject: [bad.yaml]                          # must raise ValidationError, change nothing
        error_contains: spec.parentQueue            # a string, or a list all in the error

Additions beyond that: ``podgroups: {ns/name: {unschedulable: true}}`` (some unschedulable
reason, whatever its name) and, for shared GPUs, ``same_gpu_group``, ``different_gpu_groups``
and ``gpu_groups: {ns/pod: N}`` (read from the ``runai-gpu-group`` labels).

Folders may be nested: ``tests/scenarios/kai/<go-file-stem>/<NN>-<slug>/`` holds KAI's own
integration tests (pkg/scheduler/actions/integration_tests in KAI-Scheduler), one folder per Go
test case; numbers are unique within a folder. Their scenario.yaml has more keys:

    source: {repository: kai-scheduler/KAI-Scheduler, commit: <sha>, file: <go file>,
             test: <Go test function>, case: <1-based index in its table>, name: <case name>}
    recreate_evicted: true     # the harness plays the pods' controller (below)
    ages: file-order           # PodGroups, and queues, a minute apart in file order
    xfail: "<cause>"            # pykai fails this KAI case today, for the named reason (strict)
    pykai_differs:              # pykai differs from KAI on purpose (docs/engine.md):
      reason: "..."             #   why, and pykai's own outcome, checked in place of the
      expect: {pods: ...}       #   last step's expect (which stays KAI's, for the record)

and the expectations ``pods: {ns/p: Releasing}`` (the pod is bound and terminating: it has a
deletionTimestamp) and ``evictions: N`` (how many pods the scheduler evicted in the whole
scenario; needs ``recreate_evicted``).

How KAI's test framework maps onto this (integration_tests_utils.go, test_utils*.go):

- Every fake pod of KAI's tests has a controlling owner, and after each scheduling round a task
  the round left Releasing comes back Pending with no node (unless its job is being deleted,
  DeleteJobInTest), a Pipelined one becomes Pending and a Binding one Running. With
  ``recreate_evicted`` the harness does the same: pods are applied without settling, then rounds
  run one by one, and after each round every pod of the manifests with a controlling
  ownerReference that is gone (evicted) is created again from its manifest, Pending (no nodeName,
  no status). Rounds run until one changes nothing (50 at most, else the test fails).
- KAI runs RoundsUntilMatch rounds, checks, then RoundsAfterMatch more rounds (5 by default),
  checking after each that nothing moved (a new bind, pipeline or eviction would change a task's
  status). A KAI expectation is therefore a fixed point, and settling reaches the same one; the
  two extra rounds after the last step check that it holds.
- Statuses: KAI Running on node X = pod bound to X (``X``; ``Bound`` when KAI names no node);
  Pending = pod exists, not bound (an evicted victim is recreated Pending); Releasing (job
  being deleted) and StuckInReleasing = ``Releasing``; Pipelined on X never survives a round in
  KAI's framework (it becomes Pending, and the next round binds it once the victims are gone),
  so it is checked as the bound pod it becomes. KAI's GPUsRequired, MilliCpuRequired and
  MemoryRequired repeat the inputs and are not ported; its GPUGroups check compares only when
  the groups are already equal, so it never fails and is not ported either.
- KAI's cache mock fails the test on any eviction when NumberOfCacheEvictions is 0:
  ``evictions: 0``. Nonzero NumberOf* figures are per-round upper bounds (gomock MaxTimes) and
  are not ported.

Kueue's rules: ``tests/scenarios/kueue/<NN>-<slug>/`` (run like the others). Each cites its
``source`` (repository, commit, file, and for a port of one of Kueue's test cases its test and
name). Jobs labelled ``kueue.x-k8s.io/queue-name`` are checked through more expectations:

    jobs:                                  # "<Kind> <namespace>/<name>" of the job
      Job default/a:
        workload: {QuotaReserved: "False WaitingForQuota", Admitted: "True"}  # or Absent
        messages: {QuotaReserved: "insufficient unused quota"}  # substring(s) per condition
        flavors: {main: {cpu: default}}    # its admission's flavors per pod set
        checks: {gpu: Ready}               # its admission checks' states
        suspended: true                    # spec.suspend
        status: {state: suspended}         # a subset of the job's status
        running: 0                         # its pods on a node, not terminating
        nodes: [n1]                        # the nodes they are on
        events: ["Started: Admitted by"]   # "<reason>[: <part of the message>]"
    clusterqueues: {cq: {pendingWorkloads: 1}}   # a subset of the status
    localqueues: {default/lq: {admittedWorkloads: 1}}
"""

from __future__ import annotations

import copy
import math
import re
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
import yaml
from pydantic import ValidationError as PydanticError

from pykai.compare.scenario import read_document, read_manifests
from pykai.controllers.status import queue_figures
from pykai.engine.settings import SchedulerConfig
from pykai.model.duration import parse_duration
from pykai.model.errors import ValidationError
from pykai.model.kinds import CLUSTER_SCOPED as KIND_CLUSTER_SCOPED
from pykai.model.meta import format_time, parse_time
from pykai.model.podgroup import PodGroupStatus
from pykai.model.quantity import count, cpu_millis, memory_bytes
from pykai.model.queue import QueueStatus

if TYPE_CHECKING:
    from pykai.embedded.cluster import EmbeddedCluster

Obj = dict[str, Any]

ROOT = Path(__file__).parent / "scenarios"
SCENARIOS = sorted(str(p.parent.relative_to(ROOT)) for p in ROOT.rglob("scenario.yaml"))

SNAPSHOT_KINDS = ("Pod", "Node", "Queue", "PodGroup", "PriorityClass")
CLUSTER_SCOPED = KIND_CLUSTER_SCOPED
DEFAULT_QUEUES = {"default-parent-queue", "default-queue"}

SCENARIO_KEYS = {
    "description",
    "semantics",
    "config",
    "steps",
    "source",
    "recreate_evicted",
    "ages",
    "xfail",
    "pykai_differs",
}
SOURCE_KEYS = {"repository", "commit", "file", "test", "case", "name"}
KUEUE_SOURCE_KEYS = {"repository", "commit", "file"}  # + test and name for a port of a test
ACTIONS = ("apply", "delete", "advance", "reject")
STEP_KEYS = {*ACTIONS, "expect", "error_contains"}
EXPECT_KEYS = {
    "pods",
    "same_node",
    "different_nodes",
    "queues",
    "podgroups",
    "message_contains",
    "same_gpu_group",
    "different_gpu_groups",
    "gpu_groups",
    "evictions",
    "jobs",
    "clusterqueues",
    "localqueues",
}
JOB_FIELDS = {
    "workload",
    "messages",
    "flavors",
    "checks",
    "suspended",
    "status",
    "running",
    "nodes",
    "events",
}
JOB_OWNERS = ("RayJob", "RayService", "RayCluster", "Job")  # what may own a job's pods
POD_STATES = {"Bound", "Pending", "Absent", "Releasing"}
QUEUE_FIELDS = {"fairShare", "allocated", "allocatedNonPreemptible", "requested"}
RESOURCE_KEYS = {"cpu": "cpu", "memory": "memory", "gpu": "nvidia.com/gpu"}
PARSE: dict[str, Callable[[Any], float]] = {
    "cpu": cpu_millis,
    "memory": memory_bytes,
    "gpu": count,
}
GPU_GROUP_LABEL = "runai-gpu-group"
SETTLE_ROUNDS = 50  # rounds a recreate_evicted scenario may take to settle


# ---- reading scenarios -------------------------------------------------------------------------


def load(name: str) -> dict[str, Any]:
    """The scenario.yaml of one folder (pykai.compare.scenario reads the format)."""
    return read_document(ROOT / name)


def read_objects(name: str, files: list[str]) -> list[Obj]:
    """Every object of the given manifest files of a scenario, in file and document order
    (pykai.compare.scenario.read_manifests: a pod that gives no terminationGracePeriodSeconds
    gets 0, so an evicted pod is gone once the kubelet stand-in next runs, in the same
    settling; a scenario about the grace period sets its own; one about a pod stuck
    terminating gives it a finalizer). A scenario with ``ages: file-order`` (every ported KAI
    case) gets KAI's ages."""
    objects = read_manifests(ROOT / name, files)
    if load(name).get("ages") == "file-order":
        age_in_file_order(objects)
    return objects


AGES_FROM = parse_time("2026-01-01T00:00:00Z")


def age_in_file_order(objects: list[Obj]) -> None:
    """Give the PodGroups of a ported KAI case the ages KAI's fakes give its jobs: each one a
    minute younger than the one before it (jobs_fake/jobs.go: job i of n is n - i minutes old),
    so equal-priority jobs go in file order, as in KAI's test, and not by name, which is KAI's
    tie-break for jobs of equal age (cluster_info.go: a job's ID is its PodGroup's name); and
    the queues theirs: each a minute younger than the queue before it (test_utils_builder.go:
    queue i and department i are created i minutes after the first), KAI's last tie-break
    between queues (proportion/queue_order.go prioritizeBasedOnCreationTime; equal ages are
    no tie-break there, so the order of its queue heap decides)."""
    for kind in ("PodGroup", "Queue"):
        aged = [o for o in objects if o.get("kind") == kind]
        for minute, obj in enumerate(aged):
            stamp = format_time(AGES_FROM + 60.0 * minute)
            obj["metadata"].setdefault("creationTimestamp", stamp)


def namespace_of(kind: str, obj_or_namespace: Obj | str | None) -> str:
    """Empty for cluster-scoped kinds; the object's namespace (default ``default``) otherwise."""
    if kind in CLUSTER_SCOPED:
        return ""
    if isinstance(obj_or_namespace, dict):
        return str((obj_or_namespace.get("metadata") or {}).get("namespace") or "default")
    return obj_or_namespace or "default"


def key_of(obj: Obj) -> str:
    """``namespace/name`` (or ``name`` for cluster-scoped objects)."""
    kind = str(obj.get("kind"))
    name = str(obj["metadata"]["name"])
    namespace = namespace_of(kind, obj)
    return f"{namespace}/{name}" if namespace else name


def substrings(value: str | list[str]) -> list[str]:
    """error_contains / message_contains: one substring or a list of them."""
    return [value] if isinstance(value, str) else list(value)


# ---- checking the cluster ----------------------------------------------------------------------


def snapshot(cluster: EmbeddedCluster) -> dict[str, list[Obj]]:
    """Every object of the kinds a rejected apply must leave alone, in a stable order."""
    return {
        kind: sorted(cluster.list(kind), key=lambda o: (namespace_of(kind, o), key_of(o)))
        for kind in SNAPSHOT_KINDS
    }


def node_of(pod: Obj | None) -> str | None:
    """The node a pod is bound to, or None."""
    if pod is None:
        return None
    node = (pod.get("spec") or {}).get("nodeName")
    return str(node) if node else None


def gpu_groups_of(pod: Obj) -> frozenset[str]:
    """The shared-GPU groups a pod holds (labels runai-gpu-group and runai-gpu-group/<g>)."""
    labels = (pod.get("metadata") or {}).get("labels") or {}
    return frozenset(
        str(v)
        for k, v in labels.items()
        if k == GPU_GROUP_LABEL or k.startswith("runai-gpu-group/")
    )


def scheduling_reasons(cluster: EmbeddedCluster, key: str) -> list[tuple[str, str]]:
    """(reason, message) of every unschedulable reason of a PodGroup ``namespace/name``."""
    namespace, name = key.split("/")
    group = cluster.get("PodGroup", name, namespace)
    assert group is not None, f"podgroup {key} does not exist"
    conditions = (group.get("status") or {}).get("schedulingConditions") or []
    return [
        (str(r.get("reason", "")), str(r.get("message", "")))
        for condition in conditions
        for r in condition.get("reasons") or []
    ]


def check(
    cluster: EmbeddedCluster, expect: dict[str, Any], where: str, evicted: int | None = None
) -> None:
    """Assert every expectation of one step (``evicted``: pods evicted so far, if counted),
    and that every Queue and PodGroup status written so far fits KAI's schemas."""
    pods = {key_of(p): p for p in cluster.list("Pod")}
    for kind, model in (("Queue", QueueStatus), ("PodGroup", PodGroupStatus)):
        for obj in cluster.list(kind):
            try:  # the models are KAI's schemas (tests/model/test_crds.py)
                model.model_validate(obj.get("status") or {})
            except PydanticError as exc:
                raise AssertionError(f"{where}: {kind} {key_of(obj)} status: {exc}") from exc

    def bound(key: str) -> str:
        node = node_of(pods.get(key))
        assert node, f"{where}: {key} should be bound, is {'pending' if key in pods else 'gone'}"
        return node

    for key, wanted in (expect.get("pods") or {}).items():
        pod = pods.get(key)
        node = node_of(pod)
        if wanted == "Absent":
            assert pod is None, f"{where}: {key} should be gone, is {node or 'pending'}"
        elif wanted == "Pending":
            assert pod is not None, f"{where}: {key} should be pending, is gone"
            assert node is None, f"{where}: {key} should be pending, is on {node}"
        elif wanted == "Bound":
            bound(key)
        elif wanted == "Releasing":
            bound(key)
            terminating = bool((pods[key].get("metadata") or {}).get("deletionTimestamp"))
            assert terminating, f"{where}: {key} should be terminating, has no deletionTimestamp"
        else:
            assert pod is not None, f"{where}: {key} should be on {wanted}, is gone"
            assert node == wanted, f"{where}: {key} should be on {wanted}, is on {node}"

    if "evictions" in expect:
        assert evicted == expect["evictions"], (
            f"{where}: {evicted} pods were evicted, expected {expect['evictions']}"
        )

    for group in expect.get("same_node") or []:
        nodes = {k: bound(k) for k in group}
        assert len(set(nodes.values())) == 1, f"{where}: should share a node: {nodes}"
    for group in expect.get("different_nodes") or []:
        nodes = {k: bound(k) for k in group}
        assert len(set(nodes.values())) == len(nodes), f"{where}: should not share: {nodes}"

    for group in expect.get("same_gpu_group") or []:
        found = {k: gpu_groups_of(pods[k]) if k in pods else frozenset() for k in group}
        first = next(iter(found.values()))
        assert first and all(f == first for f in found.values()), (
            f"{where}: should share a GPU group: {found}"
        )
    for group in expect.get("different_gpu_groups") or []:
        found = {k: gpu_groups_of(pods[k]) if k in pods else frozenset() for k in group}
        assert all(found.values()), f"{where}: each should hold a GPU group: {found}"
        assert len(set(found.values())) == len(found), f"{where}: should not share: {found}"
    for key, wanted in (expect.get("gpu_groups") or {}).items():
        held = gpu_groups_of(pods[key]) if key in pods else frozenset()
        assert len(held) == wanted, f"{where}: {key} holds {sorted(held)}, expected {wanted}"

    for name, fields in (expect.get("queues") or {}).items():
        queue = cluster.get("Queue", name)
        assert queue is not None, f"{where}: queue {name} does not exist"
        status = queue.get("status") or {}
        status = {**status, **queue_figures(status)}  # fairShare is in pykai's condition
        for field, amounts in fields.items():
            figures = status.get(field) or {}
            for resource, value in amounts.items():
                actual = PARSE[resource](figures.get(RESOURCE_KEYS[resource], 0))
                assert math.isclose(actual, float(value), rel_tol=1e-6, abs_tol=1e-9), (
                    f"{where}: queue {name} status.{field}.{resource} is {actual:g}, "
                    f"expected {value} (status.{field} = {figures})"
                )

    for key, wanted in (expect.get("jobs") or {}).items():
        check_job(cluster, key, wanted, where)
    for plural, kind in (("clusterqueues", "ClusterQueue"), ("localqueues", "LocalQueue")):
        for key, fields in (expect.get(plural) or {}).items():
            namespace, _, name = key.rpartition("/")
            queue = cluster.get(kind, name, namespace)
            assert queue is not None, f"{where}: {kind} {key} does not exist"
            status = queue.get("status") or {}
            found = {field: status.get(field) for field in fields}
            assert found == fields, f"{where}: {kind} {key} status {found}, expected {fields}"

    for key, wanted in (expect.get("podgroups") or {}).items():
        reasons = scheduling_reasons(cluster, key)
        names = [r for r, _ in reasons]
        if "reasons" in wanted and not wanted["reasons"]:
            assert not reasons, f"{where}: {key} should have no unschedulable reason: {reasons}"
        for reason in wanted.get("reasons") or []:
            assert reason in names, f"{where}: {key} lacks reason {reason}; has {reasons}"
        if wanted.get("unschedulable"):
            assert reasons, f"{where}: {key} should carry an unschedulable reason"

    for key, texts in (expect.get("message_contains") or {}).items():
        messages = [m for _, m in scheduling_reasons(cluster, key)]
        parts = substrings(texts)
        assert any(all(p in m for p in parts) for m in messages), (
            f"{where}: no message of {key} contains all of {parts}: {messages}"
        )


def job_key(key: str) -> tuple[str, str, str]:
    """``"<Kind> <namespace>/<name>"`` as (kind, namespace, name)."""
    kind, _, rest = key.partition(" ")
    namespace, _, name = rest.partition("/")
    return kind, namespace, name


def check_job(cluster: EmbeddedCluster, key: str, wanted: Obj, where: str) -> None:
    """A Kueue-managed job and its Workload (the one the job owns): ``workload`` Absent or
    {condition type: "<status>[ <reason>]"}, ``messages`` {condition type: substring(s)},
    ``flavors`` {pod set: {resource: flavor}} of its admission, ``checks`` {check: state},
    ``suspended``, ``status`` (a
    subset of the job's status), ``running`` (its pods on a node, not terminating, through
    any chain of owners), ``nodes`` (where those are) and ``events`` (events on the job:
    "<reason>[: <message part>]")."""
    kind, namespace, name = job_key(key)
    job = cluster.get(kind, name, namespace)
    assert job is not None, f"{where}: {key} does not exist"
    uid = job["metadata"]["uid"]
    owned = [
        w
        for w in cluster.list("Workload", namespace)
        if any(r.get("uid") == uid for r in w["metadata"].get("ownerReferences") or [])
    ]
    if wanted.get("workload") == "Absent":
        assert not owned, f"{where}: {key} should have no Workload, has {len(owned)}"
    elif set(wanted) & {"workload", "messages", "flavors", "checks"}:
        assert len(owned) == 1, f"{where}: {key} should have one Workload, has {len(owned)}"
        status = owned[0].get("status") or {}
        found = {c["type"]: c for c in status.get("conditions") or []}
        for kind_of, expected in (wanted.get("workload") or {}).items():
            condition = found.get(kind_of, {})
            actual = f"{condition.get('status', '')} {condition.get('reason', '')}"
            assert actual.startswith(str(expected)), (
                f"{where}: {key} Workload {kind_of} is {actual.strip() or 'unset'}, "
                f"expected {expected} ({condition.get('message', '')})"
            )
        for kind_of, texts in (wanted.get("messages") or {}).items():
            message = str(found.get(kind_of, {}).get("message", ""))
            for part in substrings(texts):
                assert part in message, f"{where}: {key} {kind_of}: {part!r} not in {message!r}"
        assignments = (status.get("admission") or {}).get("podSetAssignments") or []
        flavors = {a["name"]: a.get("flavors") for a in assignments}
        states = {c["name"]: c.get("state") for c in status.get("admissionChecks") or []}
        for check_name, state in (wanted.get("checks") or {}).items():
            assert states.get(check_name) == state, f"{where}: {key} checks are {states}"
        for pod_set, expected_flavors in (wanted.get("flavors") or {}).items():
            assert flavors.get(pod_set) == expected_flavors, (
                f"{where}: {key} pod set {pod_set} flavors {flavors.get(pod_set)}"
            )
    if "suspended" in wanted:
        suspended = (job.get("spec") or {}).get("suspend") is True
        assert suspended is wanted["suspended"], f"{where}: {key} suspended is {suspended}"
    for field, value in (wanted.get("status") or {}).items():
        actual = (job.get("status") or {}).get(field)
        assert actual == value, f"{where}: {key} status.{field} is {actual!r}, expected {value!r}"
    running = {
        p["metadata"]["name"]: node_of(p)
        for p in pods_under(cluster, job)
        if node_of(p) and not p["metadata"].get("deletionTimestamp")
    }
    if "running" in wanted:
        assert len(running) == wanted["running"], f"{where}: {key} runs {running}"
    if "nodes" in wanted:
        nodes = sorted(set(running.values()))
        assert nodes == sorted(wanted["nodes"]), f"{where}: {key} runs on {nodes}"
    said = [
        (str(e.get("reason")), str(e.get("message")))
        for e in cluster.list("Event", namespace)
        if (e.get("involvedObject") or {}).get("uid") == uid
    ]
    for event in wanted.get("events") or []:
        reason, _, text = str(event).partition(": ")
        assert any(r == reason and text in m for r, m in said), (
            f"{where}: {key} has no event {event!r}; has {said}"
        )


def pods_under(cluster: EmbeddedCluster, job: Obj) -> list[Obj]:
    """The pods a job owns, directly or through what it made (a RayJob's RayCluster...)."""
    namespace = job["metadata"].get("namespace") or "default"
    parents = {
        o["metadata"]["uid"]: [r.get("uid") for r in o["metadata"].get("ownerReferences") or []]
        for kind in (*JOB_OWNERS, "Pod")
        for o in cluster.list(kind, namespace)
    }
    root = job["metadata"]["uid"]

    def descends(uid: str, depth: int = 0) -> bool:
        return uid == root or (
            depth < len(JOB_OWNERS) and any(descends(p, depth + 1) for p in parents.get(uid, []))
        )

    return [p for p in cluster.list("Pod", namespace) if descends(p["metadata"]["uid"])]


# ---- running scenarios -------------------------------------------------------------------------


def scheduler_config(scenario: dict[str, Any]) -> SchedulerConfig | None:
    """The scenario's scheduler config, if it has one."""
    config = scenario.get("config")
    return SchedulerConfig.model_validate(config) if config else None


class Controller:
    """The controller of the scenario's pods, for ``recreate_evicted``: a pod of the applied
    manifests with a controlling ownerReference that is gone is created again, Pending."""

    def __init__(self, cluster: EmbeddedCluster) -> None:
        self.cluster = cluster
        self.manifests: dict[str, Obj] = {}
        self.recreated = 0

    def track(self, objects: list[Obj]) -> None:
        """Remember the controlled pods among applied objects."""
        for obj in objects:
            refs = obj["metadata"].get("ownerReferences") or []
            if obj.get("kind") == "Pod" and any(r.get("controller") for r in refs):
                self.manifests[key_of(obj)] = obj

    def restore(self) -> bool:
        """Recreate the controlled pods that are gone; True if any was."""
        present = {key_of(p) for p in self.cluster.list("Pod")}
        missing = [pending(m) for k, m in self.manifests.items() if k not in present]
        if missing:
            self.cluster.apply(missing, max_cycles=0)
            self.recreated += len(missing)
        return bool(missing)

    def rounds(self, count: int) -> None:
        """Exactly ``count`` rounds, each followed by the controller's."""
        for _ in range(count):
            self.cluster.schedule(1)
            self.restore()

    def settle(self, where: str) -> None:
        """Rounds until one changes nothing, as KAI's RoundsUntilMatch / RoundsAfterMatch."""
        for _ in range(SETTLE_ROUNDS):
            before = snapshot(self.cluster)
            self.cluster.schedule(1)
            if not self.restore() and snapshot(self.cluster) == before:
                return
        pytest.fail(f"{where}: not settled after {SETTLE_ROUNDS} rounds")


def pending(manifest: Obj) -> Obj:
    """A pod's manifest as its controller creates it again: not bound, no status."""
    pod = copy.deepcopy(manifest)
    pod["spec"].pop("nodeName", None)
    pod.pop("status", None)
    return pod


@pytest.mark.parametrize("host", ["file", "memory"])
@pytest.mark.parametrize("name", SCENARIOS)
def test_scenario(name: str, host: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    """Run one scenario folder on a fresh embedded cluster, in a SQLite file or in memory (the
    host the trace replays use)."""
    from pykai.embedded.cluster import EmbeddedCluster

    scenario = load(name)
    if scenario.get("xfail"):
        request.applymarker(pytest.mark.xfail(reason=scenario["xfail"], strict=True))
    path = tmp_path / "cluster.db" if host == "file" else None
    cluster = EmbeddedCluster.open(path, config=scheduler_config(scenario))
    controller = Controller(cluster) if scenario.get("recreate_evicted") else None
    settling = 0 if controller else 100  # rounds each action settles for; else the controller's
    try:
        last: dict[str, Any] = {}
        steps = scenario["steps"]
        for number, step in enumerate(steps, start=1):
            where = f"{name} step {number}"
            if "apply" in step:
                objects = read_objects(name, step["apply"])
                cluster.apply(objects, max_cycles=settling)
                if controller:
                    controller.track(objects)
            if "delete" in step:
                for target in step["delete"]:
                    kind = target["kind"]
                    namespace = namespace_of(kind, target.get("namespace"))
                    assert cluster.get(kind, target["name"], namespace) is not None, (
                        f"{where}: {kind} {namespace}/{target['name']} to delete does not exist"
                    )
                    cluster.delete(kind, target["name"], namespace, max_cycles=settling)
            if "advance" in step:
                cluster.advance(parse_duration(str(step["advance"])), max_cycles=settling)
            if "reject" in step:
                before = snapshot(cluster)
                with pytest.raises(ValidationError) as error:
                    cluster.apply(read_objects(name, step["reject"]))
                for part in substrings(step["error_contains"]):
                    assert part in str(error.value), f"{where}: {part!r} not in: {error.value}"
                assert snapshot(cluster) == before, f"{where}: a rejected apply changed objects"
            if controller:
                controller.settle(where)
            if step.get("expect") is not None:
                last = step["expect"]
                if number == len(steps) and scenario.get("pykai_differs"):
                    last = scenario["pykai_differs"]["expect"]
                check(cluster, last, where, controller.recreated if controller else None)
        if controller:
            controller.rounds(2)
        else:
            cluster.schedule(cycles=2)
        check(
            cluster,
            last,
            f"{name}, after 2 more rounds",
            controller.recreated if controller else None,
        )
    finally:
        close = getattr(cluster, "close", None)  # not part of the API the harness relies on
        if close is not None:
            close()


# ---- the folders themselves --------------------------------------------------------------------


def _problems(name: str) -> list[str]:
    """Everything wrong with one scenario folder's structure (empty when it is well formed)."""
    problems: list[str] = []
    if not re.fullmatch(r"\d{2,3}-[a-z0-9]+(-[a-z0-9]+)*", Path(name).name):
        problems.append("folder name is not <NN>-<slug>")
    try:
        scenario: Any = load(name)  # whatever the file holds, checked below
    except yaml.YAMLError as exc:
        return [f"scenario.yaml does not parse: {exc}"]
    if not isinstance(scenario, dict):
        return ["scenario.yaml is not a mapping"]
    problems += [f"unknown key {k!r}" for k in sorted(set(scenario) - SCENARIO_KEYS)]
    for key in ("description", "semantics"):
        if not isinstance(scenario.get(key), str) or not scenario[key].strip():
            problems.append(f"{key} missing")
    if scenario.get("config"):
        try:
            scheduler_config(scenario)
        except ValueError as exc:
            problems.append(f"config invalid: {exc}")
    problems += _kai_problems(name, scenario)
    steps = scenario.get("steps")
    if not isinstance(steps, list) or not steps:
        return [*problems, "no steps"]
    if not steps[-1].get("expect"):
        problems.append("the last step has no expect")

    # What the applied manifests define so far (rejected manifests define nothing).
    defined: dict[str, set[str]] = {"Pod": set(), "PodGroup": set(), "Queue": set(DEFAULT_QUEUES)}
    nodes: set[str] = set()
    for number, step in enumerate(steps, start=1):
        at = f"step {number}"
        if not isinstance(step, dict):
            problems.append(f"{at} is not a mapping")
            continue
        problems += [f"{at}: unknown key {k!r}" for k in sorted(set(step) - STEP_KEYS)]
        actions = [a for a in ACTIONS if a in step]
        if len(actions) != 1:
            problems.append(f"{at}: needs exactly one of {', '.join(ACTIONS)}, has {actions}")
        if ("reject" in step) != ("error_contains" in step):
            problems.append(f"{at}: reject and error_contains go together")
        for action in ("apply", "reject"):
            files = step.get(action) or []
            for file in files:
                path = ROOT / name / file
                if not path.is_file():
                    problems.append(f"{at}: {file} does not exist")
                    continue
                try:
                    objects = read_objects(name, [file])
                except yaml.YAMLError as exc:
                    problems.append(f"{at}: {file} does not parse: {exc}")
                    continue
                for obj in objects:
                    problems += [f"{at}: {file}: {p}" for p in _manifest_problems(obj, action)]
                    if action == "apply" and isinstance(obj.get("metadata"), dict):
                        kind = str(obj.get("kind"))
                        defined.setdefault(kind, set()).add(key_of(obj))
                        if kind == "Node":
                            nodes.add(str(obj["metadata"]["name"]))
        for target in step.get("delete") or []:
            kind = str(target.get("kind"))
            key = f"{namespace_of(kind, target.get('namespace'))}/{target.get('name')}"
            if key.lstrip("/") not in defined.get(kind, set()):
                problems.append(f"{at}: deletes {kind} {key}, which no applied manifest defines")
        if "advance" in step:
            try:
                parse_duration(str(step["advance"]))
            except ValueError as exc:
                problems.append(f"{at}: {exc}")
        if step.get("expect"):
            problems += [f"{at}: {p}" for p in _expect_problems(step["expect"], defined, nodes)]
    return problems


def _kai_problems(name: str, scenario: dict[str, Any]) -> list[str]:
    """A port of a KAI test cites its source; xfail and pykai_differs give their reasons."""
    problems: list[str] = []
    source = scenario.get("source")
    if name.startswith("kai/"):
        if scenario.get("ages") != "file-order":
            problems.append("a port of a KAI test has ages: file-order (KAI's fakes' ages)")
        if not isinstance(source, dict) or not set(source) >= SOURCE_KEYS:
            problems.append(f"source must give {', '.join(sorted(SOURCE_KEYS))}")
        elif not str(source["file"]).endswith(f"/{Path(name).parent.name}.go"):
            problems.append(f"source.file {source['file']} is not in folder {Path(name).parent}")
    if name.startswith("kueue/") and (
        not isinstance(source, dict) or not set(source) >= KUEUE_SOURCE_KEYS
    ):
        problems.append(f"source must give {', '.join(sorted(KUEUE_SOURCE_KEYS))}")
    for key in ("xfail", "pykai_differs"):
        if key in scenario and "source" not in scenario:
            problems.append(f"{key} is for ports of KAI's tests (with a source)")
    if "xfail" in scenario and (not isinstance(scenario["xfail"], str) or not scenario["xfail"]):
        problems.append("xfail must be the reason, a string")
    steps = scenario.get("steps") if isinstance(scenario.get("steps"), list) else []
    counted = any(isinstance(s, dict) and "evictions" in (s.get("expect") or {}) for s in steps)
    if counted and not scenario.get("recreate_evicted"):
        problems.append("evictions are counted only with recreate_evicted")
    differs = scenario.get("pykai_differs")
    if differs is not None and (
        not isinstance(differs, dict)
        or set(differs) != {"reason", "expect"}
        or not isinstance(differs["reason"], str)
        or not isinstance(differs["expect"], dict)
    ):
        problems.append("pykai_differs must be {reason: <text>, expect: <expectations>}")
    return problems


def _manifest_problems(obj: Any, action: str) -> list[str]:
    """Problems of one manifest object that would make a scenario test something else."""
    if not isinstance(obj, dict):
        return ["a document is not a mapping"]
    meta = obj.get("metadata")
    if not obj.get("apiVersion") or not obj.get("kind") or not isinstance(meta, dict):
        return ["a document lacks apiVersion, kind or metadata"]
    if not meta.get("name"):
        return [f"a {obj['kind']} has no metadata.name"]
    if obj["kind"] != "Pod" or action == "reject":
        return []
    problems: list[str] = []
    for container in (obj.get("spec") or {}).get("containers") or []:
        resources = container.get("resources") or {}
        requests = resources.get("requests") or {}
        limits = resources.get("limits") or {}
        gpu = RESOURCE_KEYS["gpu"]
        if gpu in requests and (gpu not in limits or count(requests[gpu]) != count(limits[gpu])):
            problems.append(f"pod {meta['name']}: {gpu} request without an equal limit")
    return problems


def _expect_problems(expect: Obj, defined: dict[str, set[str]], nodes: set[str]) -> list[str]:
    """Expectations that name pods, podgroups, queues or nodes the manifests do not define."""
    problems = [f"unknown expect key {k!r}" for k in sorted(set(expect) - EXPECT_KEYS)]
    pods, groups, queues = defined["Pod"], defined["PodGroup"], defined["Queue"]

    def need_pod(key: str) -> None:
        if key not in pods:
            problems.append(f"pod {key} is not defined by any applied manifest")

    for key, wanted in (expect.get("pods") or {}).items():
        need_pod(key)
        if wanted not in POD_STATES and wanted not in nodes:
            problems.append(f"pod {key}: {wanted!r} is neither a state nor a defined node")
    for field in ("same_node", "different_nodes", "same_gpu_group", "different_gpu_groups"):
        for group in expect.get(field) or []:
            if not isinstance(group, list) or len(group) < 2:
                problems.append(f"{field}: {group!r} is not a list of two pods or more")
                continue
            for key in group:
                need_pod(key)
    for key in expect.get("gpu_groups") or {}:
        need_pod(key)
    for name, fields in (expect.get("queues") or {}).items():
        if name not in queues:
            problems.append(f"queue {name} is not defined")
        for field, amounts in (fields or {}).items():
            if field not in QUEUE_FIELDS:
                problems.append(f"queue {name}: unknown status field {field!r}")
            for resource, value in (amounts or {}).items():
                if resource not in RESOURCE_KEYS or not isinstance(value, int | float):
                    problems.append(f"queue {name}: {field}.{resource}: {value!r}")
    for key, wanted in (expect.get("podgroups") or {}).items():
        if key not in groups:
            problems.append(f"podgroup {key} is not defined by any applied manifest")
        if not isinstance(wanted, dict) or not set(wanted) & {"reasons", "unschedulable"}:
            problems.append(f"podgroup {key}: give reasons or unschedulable")
    for key, wanted in (expect.get("jobs") or {}).items():
        kind, namespace, name = job_key(key)
        if f"{namespace}/{name}" not in defined.get(kind, set()):
            problems.append(f"jobs: {key} is not defined by any applied manifest")
        if not isinstance(wanted, dict) or not wanted or set(wanted) - JOB_FIELDS:
            problems.append(f"jobs: {key}: give some of {', '.join(sorted(JOB_FIELDS))}")
    for plural, kind in (("clusterqueues", "ClusterQueue"), ("localqueues", "LocalQueue")):
        for key in expect.get(plural) or {}:
            if key not in defined.get(kind, set()):
                problems.append(f"{plural}: {key} is not defined by any applied manifest")
    if "evictions" in expect and not isinstance(expect["evictions"], int):
        problems.append(f"evictions: {expect['evictions']!r} is not a number of pods")
    for key, texts in (expect.get("message_contains") or {}).items():
        if key not in groups:
            problems.append(f"message_contains: podgroup {key} is not defined")
        if not texts:
            problems.append(f"message_contains: {key}: empty")
    return problems


def test_every_scenario_is_well_formed() -> None:
    assert len(SCENARIOS) >= 34, f"only {len(SCENARIOS)} scenarios"
    numbers = [str(Path(name).parent / Path(name).name.split("-", 1)[0]) for name in SCENARIOS]
    assert len(set(numbers)) == len(numbers), "two scenarios in one folder share a number"
    leaves = {p.parent for p in ROOT.rglob("*") if p.is_file()} | {
        p for p in ROOT.rglob("*") if p.is_dir() and not any(p.iterdir())
    }
    strays = sorted(str(p.relative_to(ROOT)) for p in leaves - {ROOT / n for n in SCENARIOS})
    strays = [s for s in strays if s not in ("kai",)]  # kai/ holds its README
    assert not strays, f"folders without scenario.yaml: {strays}"
    problems = {name: found for name in SCENARIOS if (found := _problems(name))}
    assert not problems, "\n".join(f"{n}: {p}" for n, found in problems.items() for p in found)
