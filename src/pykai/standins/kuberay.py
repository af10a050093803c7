"""The KubeRay emulator: what the KubeRay operator (v1.5.0) makes of RayClusters, RayJobs and
RayServices, where no operator runs (the embedded cluster).

It stands for the operator started with ``--batch-scheduler=kai-scheduler``, as KAI's guide
installs KubeRay: a RayCluster's pods get ``schedulerName: kai-scheduler`` and the cluster's
``kai.scheduler/queue`` label. With one departure: that operator never runs a RayJob (its
kai-scheduler plugin refuses every object but a RayCluster, so a RayJob stays Initializing);
here a RayJob runs as the operator without a batch scheduler runs it (as the Ray + Kueue guides
install KubeRay), and its pods, the submitter's too, are stamped as the plugin stamps a
RayCluster's, since the embedded cluster has no other scheduler to leave them to.

What it makes is what the real operator makes, as far as the scheduler or a user sees it: pod
names, labels and annotations, owners, scheduler, containers with their resources (the
``wait-gcs-ready`` init container of workers, the autoscaler sidecar of an autoscaling head),
the RayCluster of a RayJob or RayService and the submitter Job, the RayCluster's status and
conditions, the suspend and resume state machines. Not made: Services, Ray's process set-up
(command, env, ports, probes, volumes) and events; and what needs a running Ray is answered as
if Ray ran (a RayJob's ``jobStatus`` is RUNNING once it runs; a RayService makes its cluster
active once the cluster is ready). tests/standins/test_kuberay_conformance.py compares it with
what the real operator made of the guides' manifests (tests/data/kuberay/, recorded by
scripts/record-kuberay-pods; docs/standins.md)."""

from __future__ import annotations

import base64
import copy
import hashlib
import json
from typing import Any

from pykai.controllers.events import WARNING
from pykai.controllers.host import Host
from pykai.grouping.ray import RayGroupingError, worker_groups
from pykai.model import constants as c
from pykai.model.conditions import (
    Condition,
    condition_of,
    find_condition,
    is_true,
    set_condition,
    with_conditions,
)
from pykai.model.kueue.jobs import submitter_template
from pykai.model.meta import Obj, format_time, mapping, objects
from pykai.model.names import generated_name
from pykai.model.owners import owner_ref
from pykai.model.quantity import format_quantity, parse_quantity
from pykai.standins.pods import merge_status, reconcile_pods, suffix

KUBERAY_VERSION = "v1.5.0"
"""The operator version the emulator follows (tools/peers pins the same)."""

BATCH_SCHEDULER = c.SCHEDULER_NAME
"""The operator's ``--batch-scheduler`` the emulator stands for (module docstring)."""

CLUSTER_LABEL = "ray.io/cluster"
NODE_TYPE_LABEL = "ray.io/node-type"
GROUP_LABEL = "ray.io/group"
HEAD_GROUP = "headgroup"
ORIGIN_NAME_LABEL = "ray.io/originated-from-cr-name"
ORIGIN_KIND_LABEL = "ray.io/originated-from-crd"
SERVE_LABEL = "ray.io/serve"
FT_ANNOTATION = "ray.io/ft-enabled"
STORAGE_NAMESPACE_ANNOTATION = "ray.io/external-storage-namespace"
OVERWRITE_COMMAND_ANNOTATION = "ray.io/overwrite-container-cmd"
HASH_ANNOTATION = "ray.io/hash-without-replicas-and-workers-to-delete"
MAX_REPLICAS = 2**31 - 1  # the CRD's default maxReplicas
_FIXED_LABELS = (NODE_TYPE_LABEL, GROUP_LABEL, CLUSTER_LABEL)  # a template may not override
_INIT_RESOURCES = {"cpu": "200m", "memory": "256Mi"}
_AUTOSCALER_RESOURCES = {"cpu": "500m", "memory": "512Mi"}
SUSPENDING, SUSPENDED = "RayClusterSuspending", "RayClusterSuspended"
HEAD_READY, PROVISIONED = "HeadPodReady", "RayClusterProvisioned"


# ---- RayCluster -------------------------------------------------------------------------------


def reconcile_raycluster(host: Host, raycluster: Obj) -> None:
    """A RayCluster's pods and status, one reconcile as KubeRay's: pods are made unless the
    cluster suspends (Suspending: every pod deleted; Suspended: none made, until a resume has
    been seen), then the status is worked out from the pods there are."""
    spec = mapping(raycluster.get("spec"))
    try:
        worker_groups(spec)
    except RayGroupingError as exc:
        host.record(raycluster, "InvalidWorkerGroup", str(exc), WARNING, once=True)
        return
    suspend_state = next((t for t in (SUSPENDING, SUSPENDED) if is_true(raycluster, t)), "")
    if suspend_state == SUSPENDING:
        for pod in host.owned(raycluster, "Pod"):
            if not pod["metadata"].get("deletionTimestamp"):
                host.delete(pod)
    elif not suspend_state and spec.get("suspend") is not True:
        reconcile_pods(host, raycluster, _wanted_pods(raycluster), GROUP_LABEL)
    _raycluster_status(host, raycluster, host.owned(raycluster, "Pod"), suspend_state)


def _wanted_pods(raycluster: Obj) -> dict[str, tuple[int, Obj]]:
    """Group -> (pods it should have, the pod to make)."""
    spec = mapping(raycluster.get("spec"))
    wanted = {HEAD_GROUP: (1, _head_pod(raycluster))}
    for index, group in enumerate(objects(spec.get("workerGroupSpecs"))):
        name = str(group.get("groupName") or f"worker-group-{index}")
        wanted[name] = (desired_workers(group), _worker_pod(raycluster, group, name))
    return wanted


def desired_workers(group: dict[str, Any]) -> int:
    """A worker group's pods: replicas kept within minReplicas and maxReplicas (maxReplicas
    when they cross), times numOfHosts; none while the group is suspended."""
    if group.get("suspend"):
        return 0
    low = int(group.get("minReplicas", 0) or 0)
    high = int(group.get("maxReplicas", MAX_REPLICAS) or 0)
    replicas = int(group.get("replicas", 0) or 0)
    wanted = high if low > high else min(max(replicas, low), high)
    return wanted * int(group.get("numOfHosts", 1) or 1)


def _pod_name(prefix: str, node_type: str) -> str:
    """KubeRay's PodName: the prefix cut to 50 characters, ``-head-`` or ``-worker-``."""
    return f"{prefix[:50]}-{node_type}-".lower()


def _label_value(value: str) -> str:
    """KubeRay's CheckLabel: the last 63 characters; a leading punctuation mark becomes r."""
    value = value[-63:]
    return "r" + value[1:] if value and not value[0].isalnum() else value


def _short_name(value: str) -> str:
    """KubeRay's CheckName: the last 50 characters; a leading digit or punctuation mark
    becomes r."""
    value = value[-50:]
    return "r" + value[1:] if value and not value[0].isalpha() else value


def _ray_pod(raycluster: Obj, group: dict[str, Any], node_type: str, group_name: str) -> Obj:
    """A head or worker pod from its group's template: KubeRay's labels over the template's
    (which may not replace node type, group and cluster), its annotations, the cluster as
    controlling owner, and what the kai-scheduler plugin adds."""
    meta = raycluster["metadata"]
    cluster = str(meta["name"])
    template = copy.deepcopy(mapping(group.get("template")))
    template_meta = mapping(template.get("metadata"))
    given = {**mapping(template_meta.get("labels")), **mapping(group.get("labels"))}
    labels = {
        "ray.io/is-ray-node": "yes",
        CLUSTER_LABEL: cluster,
        NODE_TYPE_LABEL: node_type,
        GROUP_LABEL: group_name,
        "ray.io/identifier": _label_value(f"{cluster}-{node_type}"),
        "app.kubernetes.io/name": "kuberay",
        "app.kubernetes.io/created-by": "kuberay-operator",
    }
    labels.update({k: str(v) for k, v in given.items() if k not in _FIXED_LABELS})
    if mapping(meta.get("labels")).get(ORIGIN_KIND_LABEL) == "RayService":
        labels[SERVE_LABEL] = "false" if node_type == "head" else "true"
    annotations = {k: str(v) for k, v in mapping(template_meta.get("annotations")).items()}
    cluster_annotations = mapping(meta.get("annotations"))
    if str(cluster_annotations.get(OVERWRITE_COMMAND_ANNOTATION, "")).lower() == "true":
        annotations[OVERWRITE_COMMAND_ANNOTATION] = "true"
    spec: dict[str, Any] = mapping(template.get("spec"))
    _stamp(labels, spec, mapping(meta.get("labels")))
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": _pod_name(
                cluster if node_type == "head" else f"{cluster}-{group_name}", node_type
            ),
            "namespace": meta.get("namespace", "default"),
            "labels": labels,
            "annotations": annotations,
            "ownerReferences": [owner_ref(raycluster)],
        },
        "spec": spec,
    }


def _stamp(labels: dict[str, str], spec: dict[str, Any], parent_labels: dict[str, Any]) -> None:
    """What KubeRay's kai-scheduler plugin adds to a pod (or a pod template) it makes for
    ``parent``: the scheduler's name, and the parent's queue label when it has a queue."""
    spec["schedulerName"] = BATCH_SCHEDULER
    queue = parent_labels.get(c.QUEUE_LABEL)
    if queue:
        labels[c.QUEUE_LABEL] = str(queue)


def _ft_enabled(raycluster: Obj) -> bool:
    """GCS fault tolerance: the cluster's ``ray.io/ft-enabled: "true"`` or its options."""
    annotations = mapping(raycluster["metadata"].get("annotations"))
    spec = mapping(raycluster.get("spec"))
    flag = str(annotations.get(FT_ANNOTATION, "")).lower() == "true"
    return flag or spec.get("gcsFaultToleranceOptions") is not None


def _head_pod(raycluster: Obj) -> Obj:
    """The head: with GCS fault tolerance recorded in an annotation, and in an autoscaling
    cluster the autoscaler container beside Ray's (the head's service account the cluster's)."""
    spec = mapping(raycluster.get("spec"))
    head_group = mapping(spec.get("headGroupSpec"))
    pod = _ray_pod(raycluster, head_group, "head", HEAD_GROUP)
    annotations = pod["metadata"]["annotations"]
    annotations[FT_ANNOTATION] = "true" if _ft_enabled(raycluster) else "false"
    if _ft_enabled(raycluster):
        options = mapping(spec.get("gcsFaultToleranceOptions"))
        storage = str(
            options.get("externalStorageNamespace")
            or mapping(raycluster["metadata"].get("annotations")).get(STORAGE_NAMESPACE_ANNOTATION)
            or raycluster["metadata"].get("uid", "")
        )
        annotations[STORAGE_NAMESPACE_ANNOTATION] = storage
    if spec.get("enableInTreeAutoscaling") is True:
        pod_spec = pod["spec"]
        account = str(pod_spec.get("serviceAccountName") or raycluster["metadata"]["name"])
        pod_spec["serviceAccountName"] = _short_name(account)
        pod_spec["containers"] = [*objects(pod_spec.get("containers")), _autoscaler(spec)]
        if _autoscaler_v2(spec):
            pod_spec["restartPolicy"] = "Never"
    return pod


def _autoscaler_v2(spec: dict[str, Any]) -> bool:
    return mapping(spec.get("autoscalerOptions")).get("version") == "v2"


def _ray_container(pod: Obj) -> dict[str, Any]:
    containers = objects(pod["spec"].get("containers"))
    return containers[0] if containers else {}


def _autoscaler(spec: dict[str, Any]) -> dict[str, Any]:
    """KubeRay's autoscaler container (the Ray container's image; 500m and 512Mi, requested
    and limited), with the cluster's ``autoscalerOptions`` over it."""
    head = mapping(mapping(spec.get("headGroupSpec")).get("template"))
    containers = objects(mapping(head.get("spec")).get("containers"))
    image = containers[0].get("image") if containers else None
    container: dict[str, Any] = {
        "name": "autoscaler",
        "image": image,
        "imagePullPolicy": "IfNotPresent",
        "resources": {
            "limits": dict(_AUTOSCALER_RESOURCES),
            "requests": dict(_AUTOSCALER_RESOURCES),
        },
    }
    options = mapping(spec.get("autoscalerOptions"))
    for key in ("resources", "image", "imagePullPolicy"):
        if options.get(key) is not None:
            container[key] = copy.deepcopy(options[key])
    return container


def _worker_pod(raycluster: Obj, group: dict[str, Any], name: str) -> Obj:
    """A worker: its init container waits for the head's GCS (the Ray container's image and
    pull policy; 200m and 256Mi, requested and limited)."""
    pod = _ray_pod(raycluster, group, "worker", name)
    ray = _ray_container(pod)
    wait = {
        "name": "wait-gcs-ready",
        "image": ray.get("image"),
        "resources": {"limits": dict(_INIT_RESOURCES), "requests": dict(_INIT_RESOURCES)},
    }
    if ray.get("imagePullPolicy"):
        wait["imagePullPolicy"] = ray["imagePullPolicy"]
    pod["spec"]["initContainers"] = [*objects(pod["spec"].get("initContainers")), wait]
    spec = mapping(raycluster.get("spec"))
    if spec.get("enableInTreeAutoscaling") is True and _autoscaler_v2(spec):
        pod["spec"]["restartPolicy"] = "Never"
    return pod


def _phase(pod: Obj) -> str:
    return str(mapping(pod.get("status")).get("phase") or "Pending")


def _running_and_ready(pod: Obj) -> bool:
    return _phase(pod) == "Running" and is_true(pod, "Ready")


def _all_running(pods: list[Obj]) -> bool:
    """KubeRay's CheckAllPodsRunning: some pods, all Running, none with Ready not True."""
    return bool(pods) and all(
        _phase(p) == "Running" and condition_of(p, "Ready").get("status", "True") == "True"
        for p in pods
    )


def _raycluster_status(
    host: Host,
    raycluster: Obj,
    pods: list[Obj],
    suspend_state: str,
) -> None:
    """KubeRay's calculateStatus: worker counts, the resources asked for, ``state`` (ready once
    every pod runs and is ready; suspended once a suspended cluster has no pod; otherwise as it
    was) and the conditions."""
    spec = mapping(raycluster.get("spec"))
    status = mapping(raycluster.get("status"))
    groups = objects(spec.get("workerGroupSpecs"))
    workers = [
        p for p in pods if mapping(p["metadata"].get("labels")).get(NODE_TYPE_LABEL) == "worker"
    ]
    desired = sum(desired_workers(g) for g in groups)
    awake = [(g, int(g.get("numOfHosts", 1) or 1)) for g in groups if not g.get("suspend")]
    suspend = spec.get("suspend") is True
    state = str(status.get("state") or "")
    if len(pods) == desired + 1 and _all_running(pods):
        state = "ready"
    if suspend and not pods:
        state = "suspended"
    now = host.now()
    new = with_conditions(raycluster, now)

    def put(kind: str, value: bool, reason: str, message: str = "") -> None:
        set_condition(new, Condition(kind, "True" if value else "False", reason, message), now)

    head = next(
        (p for p in pods if mapping(p["metadata"].get("labels")).get(NODE_TYPE_LABEL) == "head"),
        None,
    )
    if head is None:
        put(HEAD_READY, False, "HeadPodNotFound", "Head Pod not found")
    else:
        ready = condition_of(head, "Ready")
        reason = str(ready.get("reason") or "")
        if ready.get("status") == "True" and not reason:
            reason = "HeadPodRunningAndReady"
        put(
            HEAD_READY,
            ready.get("status") == "True",
            reason or "Unknown",
            str(ready.get("message", "")),
        )
    if find_condition(new, PROVISIONED).get("status") != "True" and suspend_state != SUSPENDED:
        if _all_running(pods):
            put(
                PROVISIONED,
                True,
                "AllPodRunningAndReadyFirstTime",
                "All Ray Pods are ready for the first time",
            )
        else:
            message = "RayCluster Pods are being provisioned for first time"
            put(PROVISIONED, False, "RayClusterPodsProvisioning", message)
    if suspend_state == SUSPENDING:
        if not pods:
            put(PROVISIONED, False, "RayClusterPodsProvisioning", "RayCluster has been suspended")
            put(SUSPENDING, False, SUSPENDING)
            put(SUSPENDED, True, SUSPENDED)
    elif suspend_state == SUSPENDED:
        if not suspend:
            put(SUSPENDED, False, SUSPENDED)
    else:
        put(SUSPENDED, False, SUSPENDED)
        put(SUSPENDING, suspend, SUSPENDING)
    resources = _desired_resources(spec)
    gpus = sum((v for k, v in resources.items() if k.endswith("gpu")), start=parse_quantity(0))
    merge_status(
        host,
        raycluster,
        {
            "state": state or None,
            "conditions": sorted(new, key=lambda f: str(f["type"])),
            "desiredWorkerReplicas": desired or None,
            "minWorkerReplicas": sum(int(g.get("minReplicas", 0) or 0) * n for g, n in awake)
            or None,
            "maxWorkerReplicas": sum(int(g.get("maxReplicas", MAX_REPLICAS)) * n for g, n in awake)
            or None,
            "readyWorkerReplicas": sum(1 for p in workers if _running_and_ready(p)) or None,
            "availableWorkerReplicas": sum(1 for p in workers if _phase(p) == "Running") or None,
            "desiredCPU": format_quantity(resources.get("cpu", parse_quantity(0))),
            "desiredMemory": format_quantity(
                resources.get("memory", parse_quantity(0)), binary=True
            ),
            "desiredGPU": format_quantity(gpus),
            "desiredTPU": format_quantity(resources.get("google.com/tpu", parse_quantity(0))),
        },
    )


def _desired_resources(spec: dict[str, Any]) -> dict[str, Any]:
    """KubeRay's CalculateDesiredResources: the head's and every worker's requests (a limit
    where no request is given) from the templates, each group counted ``replicas`` ×
    ``numOfHosts`` times (not suspended ones)."""
    total: dict[str, Any] = {}

    def add(template: object, times: int) -> None:
        for container in objects(mapping(mapping(template).get("spec")).get("containers")):
            resources = mapping(container.get("resources"))
            asked = {**mapping(resources.get("limits")), **mapping(resources.get("requests"))}
            for name, value in asked.items():
                total[name] = total.get(name, parse_quantity(0)) + parse_quantity(value) * times

    add(mapping(spec.get("headGroupSpec")).get("template"), 1)
    for group in objects(spec.get("workerGroupSpecs")):
        if not group.get("suspend"):
            times = int(group.get("replicas", 0) or 0) * int(group.get("numOfHosts", 1) or 1)
            add(group.get("template"), times)
    return total


# ---- the RayCluster of a RayJob or RayService ----------------------------------------------------


def _unused_name(host: Host, namespace: str, base: str, seed: str) -> str:
    """``base-<5 random>`` (from ``seed``), another while a RayCluster has that name."""
    for attempt in range(8):
        name = generated_name(f"{base}-", suffix(f"{seed}/{attempt}" if attempt else seed))
        if host.get("RayCluster", name, namespace) is None:
            return name
    raise RuntimeError(f"every RayCluster name made from {base!r} is taken")


def _child_cluster(
    host: Host, parent: Obj, name: str, spec: object, annotations: dict[str, str]
) -> Obj:
    """The parent's RayCluster ``name``, created if missing: the parent's labels and
    annotations, where it came from, the parent as controlling owner, the parent's cluster
    spec."""
    meta = parent["metadata"]
    namespace = meta.get("namespace", "default")
    found = host.get("RayCluster", name, namespace)
    if found is not None:
        return found
    labels = {
        **mapping(meta.get("labels")),
        ORIGIN_NAME_LABEL: meta["name"],
        ORIGIN_KIND_LABEL: parent["kind"],
    }
    child: Obj = {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": labels,
            "ownerReferences": [owner_ref(parent)],
        },
        "spec": copy.deepcopy(mapping(spec)),
    }
    all_annotations = {**mapping(meta.get("annotations")), **annotations}
    if all_annotations:
        child["metadata"]["annotations"] = all_annotations
    return host.create(child)


# ---- RayJob -------------------------------------------------------------------------------------


def reconcile_rayjob(host: Host, job: Obj) -> None:
    """One step of KubeRay's RayJob state machine (``status.jobDeploymentStatus``): New →
    Initializing (a job id and a RayCluster name chosen, the RayCluster made; once it is ready
    the submitter Job in K8sJobMode) → Running. ``spec.suspend`` in Initializing or Running →
    Suspending (the RayCluster and submitter Job deleted) → Suspended once they are gone, the
    run's status cleared; unsuspended → New, which starts anew with new names."""
    spec = mapping(job.get("spec"))
    status = mapping(job.get("status"))
    deployment = str(status.get("jobDeploymentStatus") or "")
    suspend = spec.get("suspend") is True
    if not deployment:
        _initialize(host, job)
    elif deployment in ("Initializing", "Running") and suspend:
        merge_status(host, job, {"jobDeploymentStatus": "Suspending"})
    elif deployment == "Initializing":
        _start(host, job)
    elif deployment == "Waiting" and spec.get("jobId"):  # InteractiveMode: the user's job id
        merge_status(host, job, {"jobId": spec["jobId"], "jobDeploymentStatus": "Running"})
    elif deployment == "Suspending":
        _release(host, job)
    elif deployment == "Suspended" and not suspend:
        merge_status(host, job, {"jobDeploymentStatus": None, "jobStatus": None})


def _initialize(host: Host, job: Obj) -> None:
    """New → Initializing: the job id and RayCluster name (``<rayjob>-<5 random>`` each),
    the start time, the counts."""
    meta = job["metadata"]
    seed = f"{meta.get('uid', '')}/{host.serial('rayjob/' + str(meta.get('uid', '')))}"
    name = str(meta["name"])
    merge_status(
        host,
        job,
        {
            "jobDeploymentStatus": "Initializing",
            "jobId": generated_name(f"{name}-", suffix(f"{seed}/job")),
            "rayClusterName": _unused_name(host, meta.get("namespace", "default"), name, seed),
            "startTime": format_time(host.now()),
            "failed": 0,
            "succeeded": 0,
        },
    )


def _start(host: Host, job: Obj) -> None:
    """Initializing: the RayCluster; once it is ready, the head's dashboard address and, in
    K8sJobMode, the submitter Job → Running (InteractiveMode: Waiting)."""
    spec = mapping(job.get("spec"))
    status = mapping(job.get("status"))
    name = str(status.get("rayClusterName") or "")
    if not name:  # a status written by someone else: start again
        merge_status(host, job, {"jobDeploymentStatus": None})
        return
    cluster = _child_cluster(host, job, name, spec.get("rayClusterSpec"), {})
    if mapping(cluster.get("status")).get("state") != "ready":
        return
    mode = str(spec.get("submissionMode") or "K8sJobMode")
    namespace = job["metadata"].get("namespace", "default")
    dashboard = f"{_head_service(cluster)}.{namespace}.svc.cluster.local:{_dashboard_port(cluster)}"
    if mode == "InteractiveMode":
        merge_status(host, job, {"dashboardURL": dashboard, "jobDeploymentStatus": "Waiting"})
        return
    if mode == "K8sJobMode":
        _submitter(host, job)
    running = {"dashboardURL": dashboard, "jobDeploymentStatus": "Running", "jobStatus": "RUNNING"}
    merge_status(host, job, running)


def _head_service(cluster: Obj) -> str:
    """The head Service's name (KubeRay's GenerateHeadServiceName): ``headService``'s name
    if the spec gives one, else ``<cluster>-head-svc``."""
    head = mapping(mapping(cluster.get("spec")).get("headGroupSpec"))
    named = mapping(mapping(head.get("headService")).get("metadata")).get("name")
    return str(named) if named else f"{cluster['metadata']['name']}-head-svc"


def _dashboard_port(cluster: Obj) -> int:
    """The head container's port named ``dashboard``, else Ray's 8265."""
    head = mapping(mapping(mapping(cluster.get("spec")).get("headGroupSpec")).get("template"))
    containers = objects(mapping(head.get("spec")).get("containers"))
    ports = objects(containers[0].get("ports")) if containers else []
    return int(next((p["containerPort"] for p in ports if p.get("name") == "dashboard"), 8265))


_CLEARED = ("rayClusterName", "dashboardURL", "jobId", "message", "reason", "jobStatus")


def _release(host: Host, job: Obj) -> None:
    """Suspending: the RayCluster and the submitter Job deleted; once both are gone,
    Suspended, the run's status cleared (the start time kept)."""
    children = [*host.owned(job, "RayCluster"), *host.owned(job, "Job")]
    for child in children:
        if not child["metadata"].get("deletionTimestamp"):
            host.delete(child)
    if children:
        return
    cleared: dict[str, object] = dict.fromkeys(_CLEARED)
    merge_status(
        host,
        job,
        {**cleared, "rayJobInfo": {}, "rayClusterStatus": {}, "jobDeploymentStatus": "Suspended"},
    )


def _submitter(host: Host, job: Obj) -> None:
    """K8sJobMode: the submitter batch/v1 Job named after the RayJob (its template:
    ``submitterPodTemplate`` or KubeRay's default, stamped as the kai-scheduler plugin stamps
    it), labelled as KubeRay labels it; backoffLimit 2 unless ``submitterConfig`` says."""
    if host.owned(job, "Job"):
        return
    meta = job["metadata"]
    template = submitter_template(job)
    template_meta = template.setdefault("metadata", {})
    labels = dict(mapping(template_meta.get("labels")))
    _stamp(labels, template.setdefault("spec", {}), mapping(meta.get("labels")))
    if labels:
        template_meta["labels"] = labels
    backoff = mapping(mapping(job.get("spec")).get("submitterConfig")).get("backoffLimit", 2)
    host.create(
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {
                "name": meta["name"],
                "namespace": meta.get("namespace", "default"),
                "labels": {
                    ORIGIN_NAME_LABEL: meta["name"],
                    ORIGIN_KIND_LABEL: "RayJob",
                    "app.kubernetes.io/created-by": "kuberay-operator",
                },
                "ownerReferences": [owner_ref(job)],
            },
            "spec": {"backoffLimit": backoff, "template": template},
        }
    )


# ---- RayService ---------------------------------------------------------------------------------


def reconcile_rayservice(host: Host, service: Obj) -> None:
    """A RayService's RayCluster (``<rayservice>-<5 random>``), pending until it is ready, then
    active (where a running Ray Serve would report its applications healthy)."""
    meta = service["metadata"]
    status = mapping(service.get("status"))
    active = mapping(status.get("activeServiceStatus")).get("rayClusterName")
    pending = mapping(status.get("pendingServiceStatus")).get("rayClusterName")
    config = mapping(service.get("spec")).get("rayClusterConfig")
    name = str(active or pending or "")
    if not name:
        seed = str(meta.get("uid", ""))
        name = _unused_name(host, meta.get("namespace", "default"), str(meta["name"]), seed)
    groups = objects(mapping(config).get("workerGroupSpecs"))
    annotations = {
        HASH_ANNOTATION: _spec_hash(config),
        "ray.io/kuberay-version": KUBERAY_VERSION,
        "ray.io/num-worker-groups": str(len(groups)),
    }
    cluster = _child_cluster(host, service, name, config, annotations)
    now = host.now()
    if active or mapping(cluster.get("status")).get("state") == "ready":
        merge_status(
            host,
            service,
            {
                "activeServiceStatus": {"rayClusterName": name},
                "pendingServiceStatus": None,
                "serviceStatus": "Running",
                "conditions": _service_conditions(service, now, True),
            },
        )
    else:
        merge_status(
            host,
            service,
            {
                "pendingServiceStatus": {"rayClusterName": name},
                "conditions": _service_conditions(service, now, False),
            },
        )


def _service_conditions(service: Obj, now: float, ready: bool) -> list[Obj]:
    """Ready and UpgradeInProgress, as KubeRay sets them while initializing and once the
    cluster serves."""
    if ready:
        return with_conditions(
            service,
            now,
            Condition(
                "Ready",
                "True",
                "NonZeroServeEndpoints",
                "Number of serve endpoints is greater than 0",
            ),
            Condition(
                "UpgradeInProgress",
                "False",
                "NoPendingCluster",
                "Active Ray cluster exists and no pending Ray cluster",
            ),
        )
    return with_conditions(
        service,
        now,
        Condition("Ready", "False", "Initializing", "RayService is initializing"),
        Condition("UpgradeInProgress", "False", "Initializing", "RayService is initializing"),
    )


def _spec_hash(spec: object) -> str:
    """A digest of a cluster spec, in the shape of KubeRay's (32 base32 characters); not
    KubeRay's own value."""
    digest = hashlib.sha1(json.dumps(spec, sort_keys=True).encode()).digest()
    return base64.b32encode(digest).decode()[:32]
