"""What Kueue's jobframework makes of a job (kubernetes-sigs/kueue ``pkg/controller/jobframework``
and ``pkg/controller/jobs/``): which jobs it manages, the Workload's name and PodSets, and the
priority it carries. Pure functions over objects; the controller is controllers/kueue/jobs.py."""

from __future__ import annotations

import copy
import hashlib
from dataclasses import dataclass

from pykai.model.errors import PykaiError
from pykai.model.kinds import BY_KIND
from pykai.model.kueue.api import GROUP, PRIORITY_CLASS_LABEL, QUEUE_NAME_LABEL, V1BETA2
from pykai.model.meta import Obj, mapping, objects

MANAGED_KINDS = ("RayJob", "RayCluster", "Job")
"""The integrations pykai enables (Kueue's defaults for the guides: batch/job, ray.io/rayjob,
ray.io/raycluster; a RayService is managed through the RayCluster it makes)."""
JOB_UID_LABEL = "kueue.x-k8s.io/job-uid"
MAX_NAME = 253
HASH_LENGTH = 5
SUBMITTER_RESOURCES = {
    "requests": {"cpu": "500m", "memory": "200Mi"},
    "limits": {"cpu": "1", "memory": "1Gi"},
}
"""KubeRay's default submitter container resources, which Kueue counts since v0.10 (K:
``jobs/rayjob/rayjob_controller.go`` ``defaultSubmitterResources``)."""


def queue_name(job: Obj) -> str:
    """The LocalQueue a job names (label ``kueue.x-k8s.io/queue-name``), or ""."""
    return str(mapping(mapping(job.get("metadata")).get("labels")).get(QUEUE_NAME_LABEL) or "")


def is_managed(job: Obj) -> bool:
    """A job of an enabled kind that names a queue (manageJobsWithoutQueueName is false)."""
    return job.get("kind") in MANAGED_KINDS and bool(queue_name(job))


def suspended_on_create(job: Obj) -> Obj:
    """Kueue's defaulting webhook on create: a managed job without a managed owner starts
    suspended (a copy; other objects come back unchanged). Owners are checked by the
    controller: what a RayJob makes is created by its controller, never applied."""
    if not is_managed(job) or objects(mapping(job.get("metadata")).get("ownerReferences")):
        return job
    out = copy.deepcopy(job)
    out.setdefault("spec", {})["suspend"] = True
    return out


def workload_name(job: Obj) -> str:
    """``<kind>-<name>-<hash>`` as Kueue names a job's Workload (``workload_names.go``): the
    prefix cut to 247 characters, the hash the first 5 hex digits of
    sha1(kind \\n group \\n name \\n uid)."""
    kind, meta = str(job["kind"]), job["metadata"]
    group = BY_KIND[kind].group
    name, uid = str(meta["name"]), str(meta.get("uid") or "")
    digest = hashlib.sha1(f"{kind}\n{group}\n{name}\n{uid}".encode()).hexdigest()
    prefix = f"{kind.lower()}-{name}"[: MAX_NAME - 1 - HASH_LENGTH]
    return f"{prefix}-{digest[:HASH_LENGTH]}"


def pod_sets(job: Obj) -> list[Obj]:
    """The Workload's PodSets: a Job's ``main`` (min(parallelism, completions)); a
    RayCluster's ``head`` and one per worker group (``replicas`` × ``numOfHosts``, not
    minReplicas); a RayJob's cluster PodSets, then ``submitter`` in K8sJobMode."""
    spec = mapping(job.get("spec"))
    kind = job.get("kind")
    if kind == "Job":
        parallelism = _int(spec.get("parallelism"), 1)
        completions = spec.get("completions")
        count = min(parallelism, _int(completions, parallelism))
        return [_pod_set("main", count, spec.get("template"))]
    if kind == "RayCluster":
        return _ray_pod_sets(spec)
    if kind == "RayJob":
        sets = _ray_pod_sets(mapping(spec.get("rayClusterSpec")))
        if spec.get("submissionMode", "K8sJobMode") == "K8sJobMode":
            sets.append(_pod_set("submitter", 1, submitter_template(job)))
        return sets
    return []


def submitter_template(rayjob: Obj) -> Obj:
    """The submitter Job's pod template: ``submitterPodTemplate``, else KubeRay's default (the
    head's image, 500m/200Mi requested)."""
    spec = mapping(rayjob.get("spec"))
    if isinstance(spec.get("submitterPodTemplate"), dict):
        return copy.deepcopy(spec["submitterPodTemplate"])
    head = mapping(
        mapping(mapping(spec.get("rayClusterSpec")).get("headGroupSpec")).get("template")
    )
    containers = objects(mapping(head.get("spec")).get("containers"))
    image = str(containers[0].get("image") or "") if containers else ""
    return {
        "spec": {
            "containers": [
                {
                    "name": "ray-job-submitter",
                    "image": image,
                    "resources": copy.deepcopy(SUBMITTER_RESOURCES),
                }
            ],
            "restartPolicy": "Never",
        }
    }


def with_pod_set_info(template: Obj, node_selector: dict[str, str], tolerations: list[Obj]) -> Obj:
    """A pod template as Kueue starts an admitted PodSet (``podset.Merge``): the flavors'
    node labels added to its nodeSelector, their tolerations added to its own (a copy)."""
    out = copy.deepcopy(template)
    spec = out.setdefault("spec", {})
    if node_selector:
        spec["nodeSelector"] = {**mapping(spec.get("nodeSelector")), **node_selector}
    own = objects(spec.get("tolerations"))
    added = [t for t in tolerations if t not in own]
    if added:
        spec["tolerations"] = [*own, *copy.deepcopy(added)]
    return out


PodSetInfo = tuple[dict[str, str], list[Obj]]
"""What a PodSet's flavors add to its pods: node selector, tolerations."""


def started(job: Obj, infos: dict[str, PodSetInfo]) -> Obj:
    """The job as Kueue starts it (``RunWithPodSetsInfo``; a copy): unsuspended, and each
    PodSet's pod template with its flavors' node labels and tolerations (``infos`` by PodSet
    name); a RayJob's submitter, when its flavors add something, gets KubeRay's default
    ``submitterPodTemplate`` if it has none."""
    out = copy.deepcopy(job)
    spec = out.setdefault("spec", {})
    spec["suspend"] = False
    submitter = infos.get("submitter", ({}, []))
    if out.get("kind") == "RayJob" and any(submitter) and "submitterPodTemplate" not in spec:
        spec["submitterPodTemplate"] = submitter_template(job)
    for name, template in _template_slots(out):
        selector, tolerations = infos.get(name, ({}, []))
        merged = with_pod_set_info(template, selector, tolerations)
        template.clear()
        template.update(merged)
    return out


def restored(job: Obj, workload: Obj) -> Obj:
    """The job as Kueue stops it (``RestorePodSetsInfo``; a copy): suspended, and each pod
    template's nodeSelector and tolerations back to those of the Workload's PodSet."""
    out = copy.deepcopy(job)
    out.setdefault("spec", {})["suspend"] = True
    originals = {
        str(p.get("name")): mapping(mapping(p.get("template")).get("spec"))
        for p in objects(mapping(workload.get("spec")).get("podSets"))
    }
    for name, template in _template_slots(out):
        if name not in originals:
            continue
        spec = template.setdefault("spec", {})
        for field in ("nodeSelector", "tolerations"):
            if field in originals[name]:
                spec[field] = copy.deepcopy(originals[name][field])
            else:
                spec.pop(field, None)
    return out


def _template_slots(job: Obj) -> list[tuple[str, Obj]]:
    """(PodSet name, the pod template inside ``job`` itself) for each PodSet whose template
    the job holds (a RayJob's submitter only with ``submitterPodTemplate``)."""
    spec = mapping(job.get("spec"))
    kind = job.get("kind")
    if kind == "Job":
        return [("main", spec["template"])] if isinstance(spec.get("template"), dict) else []
    cluster = spec if kind == "RayCluster" else mapping(spec.get("rayClusterSpec"))
    groups = [("head", mapping(cluster.get("headGroupSpec")))] + [
        (str(g.get("groupName", "")).lower(), g) for g in objects(cluster.get("workerGroupSpecs"))
    ]
    slots = [(name, g["template"]) for name, g in groups if isinstance(g.get("template"), dict)]
    if kind == "RayJob" and isinstance(spec.get("submitterPodTemplate"), dict):
        slots.append(("submitter", spec["submitterPodTemplate"]))
    return slots


def _ray_pod_sets(spec: Obj) -> list[Obj]:
    head = mapping(spec.get("headGroupSpec")).get("template")
    sets = [_pod_set("head", 1, head)]
    for group in objects(spec.get("workerGroupSpecs")):
        count = _int(group.get("replicas"), 1)
        hosts = _int(group.get("numOfHosts"), 1)
        sets.append(
            _pod_set(
                str(group.get("groupName", "")).lower(),
                count * max(hosts, 1),
                group.get("template"),
            )
        )
    return sets


def _pod_set(name: str, count: int, template: object) -> Obj:
    return {"name": name, "count": count, "template": copy.deepcopy(mapping(template))}


def _int(value: object, default: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


@dataclass(frozen=True, slots=True)
class Priority:
    """A Workload's priority and where it came from (None: no class, priority 0)."""

    value: int
    ref: Obj | None = None


class MissingPriorityClass(PykaiError, LookupError):
    """The class a job names does not exist: Kueue makes no Workload (no fallback)."""

    def __init__(self, kind: str, name: str) -> None:
        self.kind, self.name = kind, name
        super().__init__(f'{kind} "{name}" not found')


def priority(job: Obj, workload_classes: dict[str, int], pod_classes: dict[str, Obj]) -> Priority:
    """Kueue's ``ExtractPriority``: label ``kueue.x-k8s.io/priority-class`` → that
    WorkloadPriorityClass (missing: MissingPriorityClass); else the first PodSet's pod
    ``priorityClassName`` → that PriorityClass (missing: MissingPriorityClass); else the
    lowest-valued global default PriorityClass; else 0."""
    labels = mapping(mapping(job.get("metadata")).get("labels"))
    wanted = str(labels.get(PRIORITY_CLASS_LABEL) or "")
    if wanted:
        if wanted not in workload_classes:
            raise MissingPriorityClass("WorkloadPriorityClass", wanted)
        ref = {"group": GROUP, "kind": "WorkloadPriorityClass", "name": wanted}
        return Priority(workload_classes[wanted], ref)
    sets = pod_sets(job)
    first = mapping(sets[0]["template"].get("spec")) if sets else {}
    pod_class = str(first.get("priorityClassName") or "")
    if pod_class:
        if pod_class not in pod_classes:
            raise MissingPriorityClass("PriorityClass", pod_class)
        ref = {"group": "scheduling.k8s.io", "kind": "PriorityClass", "name": pod_class}
        return Priority(int(pod_classes[pod_class].get("value", 0)), ref)
    defaults = [int(o.get("value", 0)) for o in pod_classes.values() if o.get("globalDefault")]
    return Priority(min(defaults)) if defaults else Priority(0)


def new_workload(job: Obj, found: Priority, owner: Obj) -> Obj:
    """The Workload Kueue creates for a job: owned by it (``owner``: its ownerReference),
    labelled with its uid, the job's PodSets, queue and priority."""
    meta = job["metadata"]
    spec: Obj = {
        "podSets": pod_sets(job),
        "queueName": queue_name(job),
        "priority": found.value,
        "active": True,
    }
    if found.ref is not None:
        spec["priorityClassRef"] = found.ref
    return {
        "apiVersion": V1BETA2,
        "kind": "Workload",
        "metadata": {
            "name": workload_name(job),
            "namespace": meta.get("namespace") or "default",
            "labels": {JOB_UID_LABEL: str(meta.get("uid") or "")},
            "ownerReferences": [owner],
        },
        "spec": spec,
    }
