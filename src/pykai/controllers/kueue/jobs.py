"""Kueue's job reconciler (kubernetes-sigs/kueue ``pkg/controller/jobframework/reconciler.go``),
run for each RayJob, RayCluster and Job: a managed job without a managed owner gets its
Workload (event ``CreatedWorkload``); a class it names that does not exist means no Workload and
a Warning ``WorkloadPriorityClassNotFound``, until the class exists; the job stays suspended
until its Workload is admitted, then is unsuspended (event ``Started``), and is suspended again
when the Workload loses its admission (event ``Stopped``). What a managed job makes (a RayJob's
RayCluster and submitter Job) is a child: no Workload of its own."""

from __future__ import annotations

from pykai.controllers.events import NORMAL, WARNING
from pykai.controllers.host import Host
from pykai.model.conditions import condition_of, is_true
from pykai.model.kueue.jobs import (
    MANAGED_KINDS,
    MissingPriorityClass,
    PodSetInfo,
    is_managed,
    new_workload,
    priority,
    restored,
    started,
)
from pykai.model.meta import Obj, mapping, merge_diff, objects
from pykai.model.owners import owner_ref


def reconcile_kueue_job(host: Host, job: Obj) -> None:
    """One job, as Kueue's reconciler handles it."""
    if not is_managed(job) or _managed_owner(host, job):
        return
    workloads = [
        w for w in host.owned(job, "Workload") if not w["metadata"].get("deletionTimestamp")
    ]
    if not workloads:
        _create_workload(host, job)
        return
    workload = workloads[0]
    evicted = is_true(workload, "Evicted")
    admitted = is_true(workload, "Admitted") and not evicted
    suspended = mapping(job.get("spec")).get("suspend") is True
    if admitted and suspended:
        admission = mapping(mapping(workload.get("status")).get("admission"))
        host.patch(job, merge_diff(job, started(job, pod_set_infos(host, admission))))
        cluster_queue = admission.get("clusterQueue")
        host.record(job, "Started", f"Admitted by clusterQueue {cluster_queue}", NORMAL)
    elif not admitted and not suspended:
        host.patch(job, merge_diff(job, restored(job, workload)))
        message = "Not admitted by cluster queue"
        if evicted:
            message = str(condition_of(workload, "Evicted").get("message") or message)
        host.record(job, "Stopped", message, NORMAL)


def pod_set_infos(host: Host, admission: Obj) -> dict[str, PodSetInfo]:
    """Per admitted PodSet, its flavors' node labels and tolerations (``podset.FromAssignment``)."""
    infos: dict[str, PodSetInfo] = {}
    for assignment in objects(admission.get("podSetAssignments")):
        selector: dict[str, str] = {}
        tolerations: list[Obj] = []
        for name in sorted({str(f) for f in mapping(assignment.get("flavors")).values()}):
            spec = mapping((host.get("ResourceFlavor", name) or {}).get("spec"))
            selector.update({str(k): str(v) for k, v in mapping(spec.get("nodeLabels")).items()})
            tolerations += objects(spec.get("tolerations"))
        infos[str(assignment.get("name"))] = (selector, tolerations)
    return infos


def _managed_owner(host: Host, job: Obj) -> bool:
    """Whether a controlling owner is itself a managed job (then ``job`` is its child)."""
    meta = job["metadata"]
    for ref in objects(meta.get("ownerReferences")):
        if ref.get("controller") and ref.get("kind") in MANAGED_KINDS:
            owner = host.get(str(ref["kind"]), str(ref.get("name")), meta.get("namespace") or "")
            if owner is not None and is_managed(owner):
                return True
    return False


def _create_workload(host: Host, job: Obj) -> None:
    workload_classes = {
        str(o["metadata"]["name"]): int(o.get("value", 0))
        for o in host.list("WorkloadPriorityClass")
    }
    pod_classes = {str(o["metadata"]["name"]): o for o in host.list("PriorityClass")}
    try:
        found = priority(job, workload_classes, pod_classes)
    except MissingPriorityClass as exc:
        reason = f"{exc.kind}NotFound"
        host.record(job, reason, f'{exc.kind} "{exc.name}" not found', WARNING, once=True)
        return
    workload = host.create(new_workload(job, found, owner_ref(job)))
    meta = workload["metadata"]
    host.record(
        job, "CreatedWorkload", f"Created Workload: {meta['namespace']}/{meta['name']}", NORMAL
    )


KUEUE_JOBS = tuple((kind, reconcile_kueue_job) for kind in MANAGED_KINDS)
"""The reconciler per managed kind, run before the workload controllers (a job it unsuspends
is started in the same round)."""
