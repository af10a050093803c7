"""The KubeRay emulator: RayCluster -> a head pod and worker pods, named and labelled as
KubeRay names them (an emulator of KubeRay's kai-scheduler integration, not KubeRay itself);
RayJob and RayService -> a RayCluster. Missing pods are recreated, as KubeRay does after an
eviction. It runs where KubeRay does not: the embedded cluster, and local clusters."""

from __future__ import annotations

import copy
from functools import partial

from pykai.controllers.events import WARNING
from pykai.controllers.host import Host
from pykai.grouping.ray import RayGroupingError, worker_groups
from pykai.model import constants as c
from pykai.model.kueue import QUEUE_NAME_LABEL
from pykai.model.kueue_jobs import is_managed, submitter_template
from pykai.model.meta import Obj
from pykai.standins.pods import (
    create_named,
    merge_status,
    owner_ref,
    pod_from_template,
    reconcile_pods,
    with_suffix,
)


def reconcile_raycluster(host: Host, raycluster: Obj) -> None:
    """Head and worker pods of a RayCluster, and its status."""
    name = raycluster["metadata"]["name"]
    spec = raycluster.get("spec") or {}
    if spec.get("suspend") is True:
        _suspend_raycluster(host, raycluster)
        return
    labels = raycluster["metadata"].get("labels") or {}
    common = {"ray.io/cluster": name, "app.kubernetes.io/created-by": "kuberay-operator"}
    if c.QUEUE_LABEL in labels:
        common[c.QUEUE_LABEL] = labels[c.QUEUE_LABEL]
    elif QUEUE_NAME_LABEL not in labels:  # a Kueue-managed cluster has no KAI queue
        host.record(
            raycluster,
            "QueueLabelMissing",
            "Queue label missing from RayCluster; pods will remain pending",
            WARNING,
            once=True,
        )
    try:
        worker_groups(spec)
    except RayGroupingError as exc:
        host.record(raycluster, "InvalidWorkerGroup", str(exc), WARNING, once=True)
        return
    head = pod_from_template(
        (spec.get("headGroupSpec") or {}).get("template") or {},
        f"{name}-head-",
        raycluster,
        {
            **common,
            "ray.io/node-type": "head",
            "ray.io/group": "headgroup",
            "ray.io/is-ray-node": "yes",
        },
    )
    wanted: dict[str, tuple[int, Obj]] = {"headgroup": (1, head)}
    for index, group in enumerate(spec.get("workerGroupSpecs") or []):
        group_name = str(group.get("groupName") or f"worker-group-{index}")
        count = (
            0
            if group.get("suspend")
            else int(group.get("replicas", 1) or 0) * int(group.get("numOfHosts", 1) or 1)
        )
        worker = pod_from_template(
            group.get("template") or {},
            f"{name}-{group_name}-worker-",
            raycluster,
            {
                **common,
                "ray.io/node-type": "worker",
                "ray.io/group": group_name,
                "ray.io/is-ray-node": "yes",
            },
        )
        wanted[group_name] = (count, worker)
    for _, prototype in wanted.values():
        prototype["spec"]["schedulerName"] = c.SCHEDULER_NAME
    reconcile_pods(host, raycluster, wanted, "ray.io/group")
    _ray_status(host, raycluster, wanted)


def _suspend_raycluster(host: Host, raycluster: Obj) -> None:
    """``spec.suspend: true``: every pod deleted; ``state: suspended`` once none is left."""
    pods = host.owned(raycluster, "Pod")
    for pod in pods:
        if not pod["metadata"].get("deletionTimestamp"):
            host.delete(pod)
    if not pods:
        merge_status(
            host,
            raycluster,
            {"state": "suspended", "readyWorkerReplicas": 0, "availableWorkerReplicas": 0},
        )


def _ray_status(host: Host, raycluster: Obj, wanted: dict[str, tuple[int, Obj]]) -> None:
    pods = host.owned(raycluster, "Pod")
    running = [p for p in pods if (p.get("status") or {}).get("phase") == "Running"]
    workers_ready = sum(
        1 for p in running if p["metadata"]["labels"].get("ray.io/node-type") == "worker"
    )
    desired = sum(n for g, (n, _) in wanted.items() if g != "headgroup")
    merge_status(
        host,
        raycluster,
        {
            "desiredWorkerReplicas": desired,
            "readyWorkerReplicas": workers_ready,
            "availableWorkerReplicas": workers_ready,
            "state": "ready" if pods and len(running) == len(pods) == desired + 1 else "",
        },
    )


def _child_cluster(host: Host, parent: Obj, spec_key: str, prefix: str) -> Obj:
    """The RayCluster a RayJob or RayService runs on, created if missing (named ``prefix``
    and a suffix from the parent's uid)."""
    existing = host.owned(parent, "RayCluster")
    if existing:
        return existing[0]
    labels = {k: v for k, v in (parent["metadata"].get("labels") or {}).items()}
    child = {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {
            "name": prefix,
            "namespace": parent["metadata"].get("namespace", "default"),
            "labels": labels,
            "ownerReferences": [owner_ref(parent)],
        },
        "spec": copy.deepcopy((parent.get("spec") or {}).get(spec_key) or {}),
    }
    return create_named(host, partial(with_suffix, child, prefix), parent["metadata"]["uid"])


def reconcile_rayjob(host: Host, job: Obj) -> None:
    """A RayJob's RayCluster and status. K8sJobMode is refused, as KubeRay's kai plugin does,
    unless Kueue manages the RayJob (label ``kueue.x-k8s.io/queue-name``). ``spec.suspend``
    is KubeRay's state machine: Suspending (the RayCluster and submitter Job deleted), then
    Suspended with the run's status cleared (startTime kept); unsuspended, it starts anew."""
    spec = job.get("spec") or {}
    deployment = (job.get("status") or {}).get("jobDeploymentStatus") or ""
    if spec.get("suspend") is True:
        _suspend_rayjob(host, job, deployment)
        return
    if deployment == "Suspended":
        merge_status(host, job, {"jobDeploymentStatus": None})  # New: a fresh cluster follows
        return
    kueue = is_managed(job)
    if spec.get("submissionMode", "K8sJobMode") == "K8sJobMode" and not kueue:
        message = (
            "RayJob submissionMode K8sJobMode is not supported with kai-scheduler (the submitter "
            "pod is created after the cluster is ready, so it cannot join the gang); "
            "use submissionMode: HTTPMode or InteractiveMode"
        )
        host.record(job, "UnsupportedSubmissionMode", message, WARNING, once=True)
        failed = {"jobDeploymentStatus": "Failed", "reason": "ValidationFailed", "message": message}
        merge_status(host, job, failed)
        return
    child = _child_cluster(host, job, "rayClusterSpec", f"{job['metadata']['name']}-")
    ready = (child.get("status") or {}).get("state") == "ready"
    if ready and kueue and spec.get("submissionMode", "K8sJobMode") == "K8sJobMode":
        _submitter(host, job)
    merge_status(
        host,
        job,
        {
            "rayClusterName": child["metadata"]["name"],
            "jobDeploymentStatus": "Running" if ready else "Initializing",
            "jobStatus": "RUNNING" if ready else "PENDING",
        },
    )


_CLEARED = ("rayClusterName", "jobId", "dashboardURL", "message", "reason", "endTime")


def _suspend_rayjob(host: Host, job: Obj, deployment: str) -> None:
    if deployment == "Suspended":
        return
    children = [*host.owned(job, "RayCluster"), *host.owned(job, "Job")]
    if children:
        for child in children:
            if not child["metadata"].get("deletionTimestamp"):
                host.delete(child)
        merge_status(host, job, {"jobDeploymentStatus": "Suspending"})
        return
    cleared: dict[str, object] = dict.fromkeys(_CLEARED)
    merge_status(host, job, {**cleared, "jobStatus": None, "jobDeploymentStatus": "Suspended"})


def _submitter(host: Host, job: Obj) -> None:
    """K8sJobMode: the submitter batch/v1 Job named after the RayJob, once its cluster is
    ready (its template: ``submitterPodTemplate`` or KubeRay's default), its pods scheduled
    by pykai like the Ray pods."""
    if host.owned(job, "Job"):
        return
    meta = job["metadata"]
    template = submitter_template(job)
    # pykai's engine places the pods of Kueue-admitted jobs (docs/kueue.md)
    template.setdefault("spec", {})["schedulerName"] = c.SCHEDULER_NAME
    submitter = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": meta["name"],
            "namespace": meta.get("namespace", "default"),
            "ownerReferences": [owner_ref(job)],
        },
        "spec": {"backoffLimit": 2, "template": template},
    }
    host.create(submitter)


def reconcile_rayservice(host: Host, service: Obj) -> None:
    """A RayService's RayCluster and status."""
    prefix = f"{service['metadata']['name']}-raycluster-"
    child = _child_cluster(host, service, "rayClusterConfig", prefix)
    ready = (child.get("status") or {}).get("state") == "ready"
    merge_status(
        host,
        service,
        {
            "activeServiceStatus": {"rayClusterName": child["metadata"]["name"]},
            "serviceStatus": "Running" if ready else "Pending",
        },
    )
