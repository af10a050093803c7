"""What the KubeRay operator makes of the public guides' manifests, in one normal form for the
real operator and for pykai's emulator (src/pykai/standins/kuberay.py).

The real operator's answers are recorded by ``scripts/record-kuberay-pods``
(tests/standins/kuberay_live.py) into ``tests/data/kuberay/CASE.yaml``. The embedded test
(tests/standins/test_kuberay_conformance.py) applies the same manifests to an embedded cluster
and compares what the emulator made with the record; the live test (tests/kube/
test_kuberay_record.py) records again on a local control plane and compares with the committed
files, so a KubeRay upgrade that changes what it makes fails loudly. Both sides go through
``observe`` below, and nothing here is an expected outcome written by hand: what the normal form
keeps, drops or rewrites, and why, is said where it does so; where the embedded cluster departs
from the recorded operator on purpose, ``expected_on_embedded`` says how and why.

Collected per case: the Ray objects, batch/v1 Jobs and pods in the case's namespace once
settled (and after a suspend and a resume, for the cases that do it), and the status of the
suspended object as it went. Not collected: Services (the head Service and Ray Serve's: the
embedded cluster has no networking, and neither the scheduler nor a Ray pod's placement reads
them), Events (the operator's are a log of its own steps, which the emulator does not take one
by one).
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from pykai.model.meta import Obj
from pykai.model.quantity import format_quantity, parse_quantity

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
RECORDS = ROOT / "tests/data/kuberay"
KUBERAY_MODULE = "github.com/ray-project/kuberay/ray-operator"

KAI = "kai-scheduler"
"""The operator's ``--batch-scheduler`` as KAI's guide installs KubeRay."""

EMBEDDED_BATCH_SCHEDULER = KAI
"""The configuration the embedded cluster's emulator stands for: KubeRay started with
``--batch-scheduler=kai-scheduler`` (the KAI guide's install), but for RayJobs (see
``expected_on_embedded``)."""

RAY_KINDS = ("RayJob", "RayService", "RayCluster")
COLLECTED = ("RayJob", "RayService", "RayCluster", "Job", "Pod")
RANDOM_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"  # Kubernetes' (and KubeRay's) random suffixes


@dataclass(frozen=True)
class Case:
    """Manifests of the guides applied together in a namespace of their own, to an operator
    started with ``--batch-scheduler=batch_scheduler`` (none if empty); with ``suspend``, the
    case's RayJob or RayCluster is then suspended (``spec.suspend: true``) and resumed."""

    name: str
    manifests: tuple[str, ...]
    batch_scheduler: str = KAI
    suspend: bool = False

    @property
    def namespace(self) -> str:
        return "kr-" + re.sub(r"[^a-z0-9]+", "-", self.name.lower())[:55].strip("-")

    @property
    def path(self) -> Path:
        return RECORDS / f"{self.name}.yaml"

    def objects(self) -> list[Obj]:
        """The manifests' objects, in the case's namespace (as ``kubectl apply -n`` puts them;
        the kueue guides' say ``namespace: default``)."""
        found: list[Obj] = []
        for manifest in self.manifests:
            for obj in yaml.safe_load_all((EXAMPLES / manifest).read_text()):
                if isinstance(obj, dict) and obj.get("kind"):
                    obj["metadata"]["namespace"] = self.namespace
                    found.append(obj)
        return found

    def rayjob_refused(self) -> bool:
        """A RayJob given to an operator whose batch scheduler is kai-scheduler: KubeRay
        v1.5.0's kai-scheduler plugin refuses every RayJob ("currently only RayCluster is
        supported"), so the RayJob stays Initializing and never gets a RayCluster."""
        return self.batch_scheduler == KAI and any(o["kind"] == "RayJob" for o in self.objects())


TOY = "kueue/kuberay-samples/ray-job.kueue-toy-sample.yaml"
CASES = (
    Case("ray-cluster.kai-scheduler", ("ray-cluster.kai-scheduler.yaml",), suspend=True),
    Case("ray-cluster.kai-gpu-sharing", ("ray-cluster.kai-gpu-sharing.yaml",)),
    Case("blog-raycluster-train", ("blog-raycluster-train.yaml",)),
    Case("blog-rayservice-inference", ("blog-rayservice-inference.yaml",)),
    Case("kueue-docs.ray-cluster-sample", ("kueue/kueue-docs/ray-cluster-sample.yaml",)),
    Case(
        "ray-kind.raycluster-kueue-autoscaler",
        ("kueue/ray-kind/raycluster-kueue-autoscaler.yaml",),
    ),
    Case(
        "ray-kind.rayservice-kueue-autoscaler",
        ("kueue/ray-kind/rayservice-kueue-autoscaler.yaml",),
    ),
    Case("kuberay-samples.ray-job.kueue-toy-sample.kai-scheduler", (TOY,)),
    Case("kuberay-samples.ray-job.kueue-toy-sample", (TOY,), batch_scheduler="", suspend=True),
    Case(
        "kueue-docs.ray-job-sample",
        ("kueue/kueue-docs/ray-job-code-sample.yaml", "kueue/kueue-docs/ray-job-sample.yaml"),
        batch_scheduler="",
    ),
    Case(
        "kuberay-samples.ray-job.pytorch-distributed-training",
        ("kueue/kuberay-samples/ray-job.pytorch-distributed-training.yaml",),
        batch_scheduler="",
    ),
)


def operator_flags(batch_scheduler: str) -> str:
    return f"--batch-scheduler={batch_scheduler}" if batch_scheduler else "(no --batch-scheduler)"


# ---- when a case has settled (the same test on both sides) ------------------------------------


def _mapping(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def cluster_specs(obj: Obj) -> dict[str, Any]:
    """The RayCluster spec a Ray object stands for."""
    spec = _mapping(obj.get("spec"))
    if obj["kind"] == "RayJob":
        return _mapping(spec.get("rayClusterSpec"))
    if obj["kind"] == "RayService":
        return _mapping(spec.get("rayClusterConfig"))
    return spec


def _desired_workers(group: dict[str, Any]) -> int:
    """KubeRay's GetWorkerGroupDesiredReplicas (the CRD's defaults: replicas and minReplicas
    0, maxReplicas 2^31-1, numOfHosts 1)."""
    if group.get("suspend"):
        return 0
    low, high = int(group.get("minReplicas", 0)), int(group.get("maxReplicas", 2**31 - 1))
    replicas = int(group.get("replicas", 0))
    wanted = high if low > high else min(max(replicas, low), high)
    return wanted * int(group.get("numOfHosts", 1))


def expected_pods(case: Case) -> int:
    """How many pods the case makes once settled."""
    total = 0
    for obj in case.objects():
        if obj["kind"] not in RAY_KINDS or (obj["kind"] == "RayJob" and case.rayjob_refused()):
            continue
        groups = cluster_specs(obj).get("workerGroupSpecs") or []
        total += 1 + sum(_desired_workers(g) for g in groups)
        mode = _mapping(obj.get("spec")).get("submissionMode", "K8sJobMode")
        if obj["kind"] == "RayJob" and mode == "K8sJobMode":
            total += 1  # the submitter Job's pod
    return total


def live(objects: Iterable[Obj], kind: str = "") -> list[Obj]:
    """The objects (of ``kind``) not being deleted."""
    return [
        o
        for o in objects
        if not o["metadata"].get("deletionTimestamp") and (not kind or o["kind"] == kind)
    ]


def _status(obj: Obj) -> dict[str, Any]:
    return _mapping(obj.get("status"))


def settled(case: Case, objects: list[Obj]) -> bool:
    """Every pod the case makes exists and runs, every RayCluster is ready, every RayJob runs
    (with its submitter Job in K8sJobMode), every RayService names its RayCluster; a refused
    RayJob is Initializing and has nothing."""
    pods = live(objects, "Pod")
    if len(pods) != expected_pods(case):
        return False
    if any(_status(p).get("phase") != "Running" for p in pods):
        return False
    if any(_status(c).get("state") != "ready" for c in live(objects, "RayCluster")):
        return False
    for job in live(objects, "RayJob"):
        deployment = _status(job).get("jobDeploymentStatus")
        if case.rayjob_refused():
            if deployment != "Initializing" or live(objects, "RayCluster"):
                return False
        elif deployment != "Running":
            return False
        mode = _mapping(job.get("spec")).get("submissionMode", "K8sJobMode")
        if not case.rayjob_refused() and mode == "K8sJobMode" and not live(objects, "Job"):
            return False
    return all(_service_clusters(s) for s in live(objects, "RayService"))


def suspended(case: Case, objects: list[Obj]) -> bool:
    """The suspended object says so, and nothing it made is left running."""
    top = suspended_object(case, objects)
    if top is None:
        return False
    if top["kind"] == "RayJob" and _status(top).get("jobDeploymentStatus") != "Suspended":
        return False
    if top["kind"] == "RayCluster" and _status(top).get("state") != "suspended":
        return False
    return not any(live(objects, kind) for kind in ("Pod", "Job")) and (
        top["kind"] == "RayCluster" or not live(objects, "RayCluster")
    )


def suspended_object(case: Case, objects: list[Obj]) -> Obj | None:
    """The case's RayJob or RayCluster, the one ``suspend`` acts on."""
    kinds = [o["kind"] for o in case.objects()]
    kind = "RayJob" if "RayJob" in kinds else "RayCluster"
    return next((o for o in objects if o["kind"] == kind and _is_top(o)), None)


def _is_top(obj: Obj) -> bool:
    return not obj["metadata"].get("ownerReferences")


def _service_clusters(service: Obj) -> list[str]:
    status = _status(service)
    names = (
        _mapping(status.get(key)).get("rayClusterName")
        for key in ("activeServiceStatus", "pendingServiceStatus")
    )
    return sorted(str(n) for n in names if n)


# ---- observations and their normal form -------------------------------------------------------


@dataclass
class Observed:
    """What one side made of a case: the objects collected once settled, and for a suspend
    case the suspended object's versions from the suspend on (``suspending``), the objects once
    suspended, its versions from the resume on and the objects once settled again."""

    settled: list[Obj]
    suspending: list[Obj] = field(default_factory=list)
    suspended: list[Obj] = field(default_factory=list)
    resuming: list[Obj] = field(default_factory=list)
    resumed: list[Obj] = field(default_factory=list)


_RANDOM = f"[{RANDOM_ALPHABET}]{{5}}"
_AFTER_PLACEHOLDER = re.compile(rf"(?<=\}})-{_RANDOM}(?=$|[-.:/])")
_NAME_END = re.compile(rf"-{_RANDOM}$")
_UID = re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b")

# What a scheduler writes on a pod when it groups and binds it (KAI's pod-grouper and binder
# write the same on a real cluster): the record is made with no scheduler but a plain bind, the
# embedded cluster's pods are grouped and bound by pykai. Not KubeRay's; dropped.
_SCHEDULER_ANNOTATIONS = frozenset(
    {"pod-group-name", "pykai.io/gpu-portion", "pykai.io/visible-devices"}
)
_SCHEDULER_LABELS = frozenset({"kai.scheduler/subgroup-name"})
_SCHEDULER_LABEL_PREFIX = "runai-gpu-group"
# The API server's own: kubectl's record of the last applied manifest (how an object was
# applied, not what the operator made of it).
_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
# A hash of the RayCluster's spec that KubeRay keeps to notice changes (RayService): its key is
# compared, its value is KubeRay's own hash function's, which the emulator does not reproduce.
_HASHED = frozenset({"ray.io/hash-without-replicas-and-workers-to-delete"})
# The API server's generated Job selector, written into the Job's template; the embedded
# cluster stores the template as the operator wrote it (its Job stand-in gives the pods the same
# labels, as kube's Job controller does, and those are compared on the pods).
_JOB_SELECTOR_LABELS = frozenset(
    {
        "controller-uid",
        "job-name",
        "batch.kubernetes.io/controller-uid",
        "batch.kubernetes.io/job-name",
    }
)
# The API server's DefaultTolerationSeconds admission adds these to every pod.
_DEFAULT_TOLERATIONS = frozenset({"node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"})


class _Names:
    """Concrete names in an observation and the placeholders they are written as: the case's
    namespace, and each object the manifests made (``{rayjob}``, ``{rayservice}``,
    ``{raycluster}``). What an operator generates from them keeps its shape: a random suffix is
    ``{random5}`` (``{rayjob}-{random5}-head-{random5}``)."""

    def __init__(self, namespace: str, objects: Iterable[Obj]) -> None:
        self.pairs = {namespace: "{namespace}"}
        for obj in objects:
            if obj["kind"] in RAY_KINDS and _is_top(obj):
                self.pairs[obj["metadata"]["name"]] = "{" + obj["kind"].lower() + "}"

    def text(self, value: str, own: str = "") -> str:
        for concrete in sorted(self.pairs, key=len, reverse=True):
            if concrete != own:
                value = value.replace(concrete, self.pairs[concrete])
        value = _AFTER_PLACEHOLDER.sub("-{random5}", value)
        return _UID.sub("{uid}", value)

    def shape(self, name: str, top: bool = False) -> str:
        """A name as its pattern: placeholders for the names of the objects the manifests made
        (but its own, for one of those: ``top``), ``{random5}`` for a generated suffix."""
        return _NAME_END.sub("-{random5}", self.text(name, own=name if top else ""))


def _quantity(value: object) -> str:
    """A quantity in canonical form (the API server rewrites what it stores, the embedded
    cluster keeps what was written)."""
    return format_quantity(parse_quantity(value), binary=True)  # type: ignore[arg-type]


def _resources(resources: object) -> dict[str, Any]:
    found = {}
    for part in ("requests", "limits"):
        amounts = _mapping(_mapping(resources).get(part))
        if amounts:
            found[part] = {k: _quantity(v) for k, v in sorted(amounts.items())}
    return found


def _container(container: dict[str, Any]) -> dict[str, Any]:
    """Name, image and resources. Not compared: command, args, env, ports, probes, volume
    mounts: they start and check Ray's processes (the ``ray start`` line, the head's address),
    which do not run on the embedded cluster, and the scheduler reads none of them."""
    view: dict[str, Any] = {"name": container.get("name"), "image": container.get("image")}
    if _resources(container.get("resources")):
        view["resources"] = _resources(container.get("resources"))
    return view


def _labels(
    meta: dict[str, Any], names: _Names, drop: frozenset[str] = frozenset()
) -> dict[str, str]:
    return {
        k: names.text(str(v))
        for k, v in sorted(_mapping(meta.get("labels")).items())
        if not k.startswith(_SCHEDULER_LABEL_PREFIX) and k not in _SCHEDULER_LABELS | drop
    }


def _annotations(meta: dict[str, Any], names: _Names) -> dict[str, str]:
    return {
        k: "{hash}" if k in _HASHED else names.text(str(v))
        for k, v in sorted(_mapping(meta.get("annotations")).items())
        if k not in _SCHEDULER_ANNOTATIONS and k != _APPLIED
    }


def _owners(meta: dict[str, Any], names: _Names) -> list[dict[str, Any]]:
    return [
        {
            "apiVersion": ref.get("apiVersion"),
            "kind": ref.get("kind"),
            "name": names.text(str(ref.get("name"))),
            "controller": bool(ref.get("controller")),
            "blockOwnerDeletion": bool(ref.get("blockOwnerDeletion")),
        }
        for ref in meta.get("ownerReferences") or []
    ]


def _pod_spec(spec: dict[str, Any], names: _Names) -> dict[str, Any]:
    """What placement reads (scheduler, priority, constraints, every container's resources)
    and the pod's identity and restarts; API-server defaults filled in where the embedded
    cluster stores none (``default-scheduler``, ``Always``, the ``default`` service account)."""
    view: dict[str, Any] = {
        "schedulerName": spec.get("schedulerName") or "default-scheduler",
        "restartPolicy": spec.get("restartPolicy") or "Always",
    }
    if spec.get("serviceAccountName") not in (None, "", "default"):
        view["serviceAccountName"] = names.text(str(spec["serviceAccountName"]))
    for key in ("priorityClassName", "nodeSelector", "affinity"):
        if spec.get(key):
            view[key] = spec[key]
    tolerations = [
        t for t in spec.get("tolerations") or [] if t.get("key") not in _DEFAULT_TOLERATIONS
    ]
    if tolerations:
        view["tolerations"] = tolerations
    view["containers"] = [_container(c) for c in spec.get("containers") or []]
    if spec.get("initContainers"):
        view["initContainers"] = [_container(c) for c in spec["initContainers"]]
    return view


def _pod(pod: Obj, names: _Names) -> dict[str, Any]:
    """A pod: name shape, labels, annotations, owners, spec. Its finalizers are not compared:
    a Job's pods carry kube's Job controller's tracking finalizer, which it removes as each
    pod ends (the embedded Job stand-in needs none)."""
    meta = pod["metadata"]
    return {
        "name": names.shape(meta["name"]),
        "labels": _labels(meta, names),
        "annotations": _annotations(meta, names),
        "ownerReferences": _owners(meta, names),
        **_pod_spec(_mapping(pod.get("spec")), names),
    }


def _conditions(status: dict[str, Any]) -> dict[str, str]:
    return {
        str(c.get("type")): f"{c.get('status')} {c.get('reason', '')}".strip()
        for c in sorted(status.get("conditions") or [], key=lambda c: str(c.get("type")))
    }


def _raycluster_status(status: dict[str, Any]) -> dict[str, Any]:
    """State, conditions, worker counts and the resources asked for. Not compared: ``head``
    and ``endpoints`` (the head pod's and Service's addresses and ports: networking, which the
    embedded cluster has not), times and ``observedGeneration``."""
    view: dict[str, Any] = {"state": status.get("state", ""), "conditions": _conditions(status)}
    for key in (
        "desiredWorkerReplicas",
        "minWorkerReplicas",
        "maxWorkerReplicas",
        "readyWorkerReplicas",
        "availableWorkerReplicas",
    ):
        view[key] = int(status.get(key) or 0)
    for key in ("desiredCPU", "desiredMemory", "desiredGPU", "desiredTPU"):
        view[key] = _quantity(status.get(key) or 0)
    if status.get("reason"):
        view["reason"] = status["reason"]
    return view


def _rayjob_status(status: dict[str, Any], names: _Names) -> dict[str, Any]:
    """KubeRay's own fields. Not compared: ``jobStatus``, ``rayJobInfo``, ``rayClusterStatus``
    and ``endTime``, which come from the Ray dashboard of a running Ray (on the recording
    cluster nothing answers, so they stay empty; the emulator stands for a Ray that runs)."""
    view: dict[str, Any] = {
        "jobDeploymentStatus": status.get("jobDeploymentStatus", ""),
        "startTime": bool(status.get("startTime")),
        "failed": int(status.get("failed") or 0),
        "succeeded": int(status.get("succeeded") or 0),
    }
    for key in ("jobId", "rayClusterName", "dashboardURL", "reason", "message"):
        if status.get(key):
            view[key] = names.text(str(status[key]))
    return view


def _object(obj: Obj, names: _Names) -> dict[str, Any]:
    """A RayJob, RayService, RayCluster or Job. A RayJob's finalizer is not compared: KubeRay
    adds it to stop the Ray job when the RayJob is deleted, and takes it away then; the RayJob
    goes as without it."""
    meta, status = obj["metadata"], _status(obj)
    view: dict[str, Any] = {
        "kind": obj["kind"],
        "name": names.shape(meta["name"], top=_is_top(obj)),
        "labels": _labels(meta, names),
        "annotations": _annotations(meta, names),
        "ownerReferences": _owners(meta, names),
    }
    if obj["kind"] == "RayCluster":
        view["status"] = _raycluster_status(status)
    elif obj["kind"] == "RayJob":
        view["status"] = _rayjob_status(status, names)
    elif obj["kind"] == "RayService":
        # Which of pending and active: the RayService makes its cluster active once Ray Serve
        # reports its applications healthy (a running Ray); the name it gives it is compared.
        view["status"] = {"rayClusterNames": [names.text(n) for n in _service_clusters(obj)]}
    elif obj["kind"] == "Job":
        spec = _mapping(obj.get("spec"))
        template = _mapping(spec.get("template"))
        view["spec"] = {
            "backoffLimit": spec.get("backoffLimit", 6),
            "parallelism": spec.get("parallelism", 1),
            "completions": spec.get("completions", 1),
            "template": {
                "labels": _labels(_mapping(template.get("metadata")), names, _JOB_SELECTOR_LABELS),
                "annotations": _annotations(_mapping(template.get("metadata")), names),
                **_pod_spec(_mapping(template.get("spec")), names),
            },
        }
    return view


_KIND_ORDER = {kind: index for index, kind in enumerate(COLLECTED)}


def _snapshot(objects: list[Obj], names: _Names) -> dict[str, Any]:
    """The live objects and pods, in an order that does not depend on timing or names."""
    found = live(objects)
    others = [_object(o, names) for o in found if o["kind"] != "Pod"]
    others.sort(key=lambda v: (_KIND_ORDER[v["kind"]], v["name"]))
    pods = [_pod(p, names) for p in found if p["kind"] == "Pod"]
    pods.sort(
        key=lambda v: (
            v["labels"].get("ray.io/node-type", "~"),
            v["labels"].get("ray.io/group", ""),
            v["name"],
            json.dumps(v, sort_keys=True),
        )
    )
    return {"objects": others, "pods": pods}


def _progress(obj: Obj) -> str:
    """Where a suspended RayJob or RayCluster stands: a RayJob's ``jobDeploymentStatus``
    (``New`` for none); a RayCluster's ``state`` with its true suspend conditions (the others,
    HeadPodReady and RayClusterProvisioned, follow pods starting one by one, which depends on
    timing; they are compared in the snapshot once settled)."""
    status = _status(obj)
    if obj["kind"] == "RayJob":
        return str(status.get("jobDeploymentStatus") or "New")
    true = [
        str(c.get("type"))
        for c in status.get("conditions") or []
        if c.get("status") == "True"
        and c.get("type") in ("RayClusterSuspending", "RayClusterSuspended")
    ]
    return "; ".join([str(status.get("state") or "-"), *sorted(true)])


def _progression(start: Obj | None, versions: list[Obj]) -> list[str]:
    """The distinct steps, in order, from ``start`` through ``versions``."""
    steps: list[str] = []
    for version in [*([start] if start else []), *versions]:
        step = _progress(version)
        if not steps or steps[-1] != step:
            steps.append(step)
    return steps


def _renamed(before: list[Obj], after: list[Obj]) -> dict[str, str]:
    """Per kind, whether the objects after the resume are the ones from before (``same``) or
    new ones (``new``)."""
    found = {}
    for kind in ("RayCluster", "Job", "Pod"):
        old = {o["metadata"]["name"] for o in live(before, kind)}
        new = {o["metadata"]["name"] for o in live(after, kind)}
        if old or new:
            found[kind] = "same" if old == new else "new" if not old & new else "some new"
    return found


def observe(case: Case, observed: Observed) -> dict[str, Any]:
    """The normal form of what one side made of ``case``."""
    names = _Names(case.namespace, observed.settled)
    found: dict[str, Any] = {"settled": _snapshot(observed.settled, names)}
    if case.suspend:
        top = suspended_object(case, observed.settled)
        after = suspended_object(case, observed.suspended)
        found["suspend"] = {
            "progress": _progression(top, observed.suspending),
            "then": _snapshot(observed.suspended, names),
        }
        found["resume"] = {
            "progress": _progression(after, observed.resuming),
            "then": _snapshot(observed.resumed, names),
            "names": _renamed(observed.settled, observed.resumed),
        }
    return found


# ---- the record files ---------------------------------------------------------------------------

HEADER = (
    "# Recorded by scripts/record-kuberay-pods from the real KubeRay operator (never edited by\n"
    "# hand): what it made of the manifests, in the normal form of\n"
    "# tests/standins/kuberay_conformance.py.\n"
)


def record_text(case: Case, kuberay: str, found: dict[str, Any]) -> str:
    document = {
        "kuberay": kuberay,
        "operator": operator_flags(case.batch_scheduler),
        "manifests": [f"examples/{m}" for m in case.manifests],
        "observed": found,
    }
    return HEADER + yaml.safe_dump(document, sort_keys=False, width=100)


def read_record(case: Case) -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load(case.path.read_text())
    return loaded


# ---- where the embedded cluster departs from the record, on purpose ----------------------------

NOT_EMULATED = {
    "kuberay-samples.ray-job.kueue-toy-sample.kai-scheduler": (
        "KubeRay v1.5.0 with --batch-scheduler=kai-scheduler never runs a RayJob (its "
        "kai-scheduler plugin refuses all but RayClusters): the embedded cluster runs RayJobs "
        "as the operator does without a batch scheduler, so that Kueue's RayJob guides and "
        "pykai's demo run (expected_on_embedded)"
    ),
}


def expected_on_embedded(case: Case, record: dict[str, Any]) -> dict[str, Any] | None:
    """What the embedded cluster must make of ``case``, from its record; None for a case it
    does not emulate (``NOT_EMULATED`` says why).

    The embedded cluster's KubeRay is the operator started with ``--batch-scheduler=
    kai-scheduler`` (the KAI guide's install): RayCluster and RayService cases are compared
    with their records as they are. Such an operator never runs a RayJob, so RayJobs run there
    as the operator without a batch scheduler runs them (their records), with what the
    kai-scheduler plugin gives every pod of a RayCluster and the submitter's pod template
    (``AddMetadataToChildResource``, recorded on the RayCluster cases): ``schedulerName:
    kai-scheduler``, and the queue label of the parent (the RayCluster, which has the RayJob's
    labels; the RayJob for the submitter) when it has one. The embedded cluster has no other
    scheduler to leave those pods to."""
    if case.name in NOT_EMULATED:
        return None
    observed: dict[str, Any] = copy.deepcopy(record["observed"])
    if case.batch_scheduler == EMBEDDED_BATCH_SCHEDULER:
        return observed
    for snapshot in _snapshots(observed):
        objects = snapshot["objects"]
        clusters = {o["name"]: o["labels"] for o in objects if o["kind"] == "RayCluster"}
        rayjob = next((o["labels"] for o in objects if o["kind"] == "RayJob"), {})
        for pod in snapshot["pods"]:
            owner = pod["ownerReferences"][0]
            parent = clusters.get(owner["name"], {}) if owner["kind"] == "RayCluster" else rayjob
            _stamp(pod, parent.get("kai.scheduler/queue"))
        for job in (o for o in objects if o["kind"] == "Job"):
            _stamp(job["spec"]["template"], rayjob.get("kai.scheduler/queue"))
    return observed


def _stamp(pod: dict[str, Any], queue: str | None) -> None:
    pod["schedulerName"] = KAI
    if queue:
        pod["labels"] = dict(sorted({**pod["labels"], "kai.scheduler/queue": queue}.items()))


def _snapshots(observed: dict[str, Any]) -> list[dict[str, Any]]:
    found = [observed["settled"]]
    found += [observed[step]["then"] for step in ("suspend", "resume") if step in observed]
    return found


def differences(expected: Any, actual: Any, where: str = "") -> list[str]:
    """Where two normal forms differ, one line each (``where``: the path so far)."""
    if isinstance(expected, dict) and isinstance(actual, dict):
        lines = []
        for key in sorted(set(expected) | set(actual), key=str):
            lines += differences(
                expected.get(key, "<missing>"), actual.get(key, "<missing>"), f"{where}.{key}"
            )
        return lines
    if isinstance(expected, list) and isinstance(actual, list) and len(expected) == len(actual):
        return [
            line
            for i, (e, a) in enumerate(zip(expected, actual, strict=True))
            for line in differences(e, a, f"{where}[{i}]")
        ]
    if expected != actual:
        return [f"{where or '.'}: recorded {json.dumps(expected)}, got {json.dumps(actual)}"]
    return []
