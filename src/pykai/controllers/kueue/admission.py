"""Kueue's scheduler and its status writers, over a host: a Workload of a finished job is
Finished and frees its quota; a preempted (Evicted) Workload whose job is suspended loses its
reservation and is requeued; then one admission pass (engine/kueue/admission.py) and its
outcome written as Kueue writes it: Workload conditions (QuotaReserved, Admitted, Evicted,
Preempted, Requeued) with Kueue's reasons and messages and events, and the status of every
ClusterQueue and LocalQueue (kubernetes-sigs/kueue ``pkg/scheduler/scheduler.go``,
``pkg/workload/``, ``pkg/controller/core/``)."""

from __future__ import annotations

from pykai.controllers.events import NORMAL, WARNING
from pykai.controllers.host import Host
from pykai.controllers.kueue.checks import run_admission_checks
from pykai.engine.kueue.admission import (
    Decisions,
    Objects,
    WorkloadView,
    admit,
    read_workload,
)
from pykai.engine.kueue.quota import ClusterQueueView, quantity
from pykai.engine.settings import SchedulerConfig
from pykai.model.conditions import Condition, condition_of, is_true, with_conditions
from pykai.model.meta import Obj, format_time, mapping, objects

COMPONENT = "the Kueue scheduler"


def run_kueue(
    host: Host, config: SchedulerConfig | None = None, *, provisioning: bool = True
) -> None:
    """One pass of Kueue's controllers and scheduler; ``provisioning``: the cluster serves
    ProvisioningRequests (else provisioning admission checks are inactive)."""
    if not any(host.list(kind) for kind in ("ClusterQueue", "LocalQueue", "Workload")):
        return
    written: dict[str, Obj] = {}  # key -> the Workload as its patch of this pass makes it
    for workload in host.list("Workload"):
        after = _finish_or_release(host, workload)
        if after is not None:
            written[_key(workload)] = after
    run_admission_checks(host, provisioning=provisioning)
    workloads = _as_written(host.list("Workload"), written)
    objs = Objects(
        workloads,
        host.list("LocalQueue"),
        host.list("ClusterQueue"),
        host.list("Cohort"),
        host.list("ResourceFlavor"),
        {_key(w): _makers(host, w) for w in workloads if is_true(w, "QuotaReserved")},
        {
            str(n["metadata"]["name"]): dict(mapping(n["metadata"].get("labels")))
            for n in host.list("Namespace")
        },
        host.list("AdmissionCheck"),
    )
    decisions = admit(objs, host.state, config or SchedulerConfig(), host.now())
    _write_workloads(host, decisions)
    _write_queues(host, decisions, objs, written)


def _as_written(workloads: list[Obj], written: dict[str, Obj]) -> list[Obj]:
    """The Workloads with this pass's finishing and releasing patches applied where the host
    does not show them yet (a real cluster writes status in the background): the quota they
    free is free in this pass, as it is where the host writes at once. A Workload the host
    shows at another version than the one patched (the patch landed, or something else
    changed it) is taken as the host has it."""
    out = []
    for workload in workloads:
        after = written.get(_key(workload))
        same = after is not None and _version(after) == _version(workload)
        out.append(_unversioned(after) if same and after is not None else workload)
    return out


def _version(obj: Obj) -> str:
    return str(obj["metadata"].get("resourceVersion") or "")


def _unversioned(obj: Obj) -> Obj:
    """``obj`` without a resourceVersion: a state no stored version has (read afresh, never
    from engine/kueue/admission.py's per-version views)."""
    meta = {k: v for k, v in obj["metadata"].items() if k != "resourceVersion"}
    return {**obj, "metadata": meta}


def _owner(host: Host, workload: Obj) -> Obj | None:
    meta = workload["metadata"]
    for ref in objects(meta.get("ownerReferences")):
        return host.get(str(ref.get("kind")), str(ref.get("name")), str(meta.get("namespace")))
    return None


def _key(obj: Obj) -> str:
    return f"{obj['metadata'].get('namespace') or 'default'}/{obj['metadata']['name']}"


def _makers(host: Host, workload: Obj) -> frozenset[str]:
    """The UIDs of a Workload's job and of what the job made (a RayJob's RayCluster and
    submitter Job): the owners of its pods."""
    job = _owner(host, workload)
    if job is None:
        return frozenset()
    children = (o for kind in ("RayCluster", "Job") for o in host.owned(job, kind))
    return frozenset(
        {str(job["metadata"].get("uid")), *(str(o["metadata"].get("uid")) for o in children)}
    )


def _job_finished(job: Obj) -> tuple[str, str] | None:
    """(reason, message) when a job is done: a Job's Complete/Failed condition, a RayJob's
    deployment status Complete/Failed."""
    status = mapping(job.get("status"))
    if job.get("kind") == "RayJob":
        deployment = status.get("jobDeploymentStatus")
        if deployment in ("Complete", "Failed"):
            reason = "Succeeded" if deployment == "Complete" else "Failed"
            return reason, str(status.get("message") or f"RayJob {deployment.lower()}")
        return None
    for found in objects(status.get("conditions")):
        if found.get("type") in ("Complete", "Failed") and found.get("status") == "True":
            reason = "Succeeded" if found["type"] == "Complete" else "Failed"
            return reason, str(found.get("message") or "Job finished successfully")
    return None


def _finish_or_release(host: Host, workload: Obj) -> Obj | None:
    """Finish a Workload whose job is done, or release the quota of an evicted one whose job
    is stopped; the Workload as the patch makes it, None if nothing is written."""
    if is_true(workload, "Finished"):
        return None
    job = _owner(host, workload)
    now = host.now()
    done = _job_finished(job) if job is not None else None
    status = mapping(workload.get("status"))
    if done is not None:
        reason, message = done
        finished = with_conditions(workload, now, Condition("Finished", "True", reason, message))
        host.patch(workload, {"status": {"conditions": finished}}, status=True)
        meta = workload["metadata"]
        host.record(
            job or workload,
            "FinishedWorkload",
            f"Workload '{meta['namespace']}/{meta['name']}' is declared finished",
            NORMAL,
        )
        return {**workload, "status": {**status, "conditions": finished}}
    stopped = job is None or mapping(job.get("spec")).get("suspend") is True
    if is_true(workload, "Evicted") and is_true(workload, "QuotaReserved") and stopped:
        evicted = condition_of(workload, "Evicted")
        released = with_conditions(
            workload,
            now,
            Condition("QuotaReserved", "False", "Pending", str(evicted.get("message") or "")),
            Condition("Admitted", "False", "NoReservation", "The workload has no reservation"),
            Condition(
                "Requeued", "True", str(evicted.get("reason") or ""), str(evicted.get("message"))
            ),
        )
        host.patch(workload, {"status": {"conditions": released, "admission": None}}, status=True)
        kept = {k: v for k, v in status.items() if k != "admission"}
        return {**workload, "status": {**kept, "conditions": released}}
    return None


def _write_workloads(host: Host, decisions: Decisions) -> None:
    now = host.now()
    for admitted in decisions.admitted:
        w = admitted.workload
        cq = admitted.admission["clusterQueue"]
        checks = decisions.queues[cq].checks
        changes = [
            Condition(
                "QuotaReserved", "True", "QuotaReserved", f"Quota reserved in ClusterQueue {cq}"
            ),
            Condition("Admitted", "False", "UnsatisfiedAdmissionChecks", UNSATISFIED)
            if checks
            else Condition("Admitted", "True", "Admitted", "The workload is admitted"),
        ]
        for kind in ("Evicted", "Preempted"):
            if is_true(w.obj, kind):
                previous = str(condition_of(w.obj, kind).get("message") or "")
                changes.append(Condition(kind, "False", "QuotaReserved", f"Previously: {previous}"))
        status: Obj = {
            "admission": admitted.admission,
            "conditions": with_conditions(w.obj, now, *changes),
        }
        if checks:
            status["admissionChecks"] = _pending_checks(w.obj, checks, now)
        host.patch(w.obj, {"status": status}, status=True)
        waited = max(0.0, now - (w.creation or now))
        host.record(
            w.obj,
            "QuotaReserved",
            f"Quota reserved in ClusterQueue {cq}, wait time since queued was {waited:.0f}s",
            NORMAL,
        )
        if not checks:
            host.record(
                w.obj,
                "Admitted",
                f"Admitted by ClusterQueue {cq}, wait time since reservation was 0s",
                NORMAL,
            )
    for pending in decisions.pending:
        _write_pending(host, pending.workload, pending.reason, pending.message, now)
    for preempt in decisions.preempted:
        target, why = preempt.workload, preempt.reason
        evicted = with_conditions(
            target.obj,
            now,
            Condition("Evicted", "True", "Preempted", preempt.message),
            Condition("Preempted", "True", why, preempt.message),
        )
        status = {"conditions": evicted}
        held = [
            str(c.get("name"))
            for c in objects(mapping(target.obj.get("status")).get("admissionChecks"))
        ]
        if held:  # Kueue resets the checks of an evicted workload
            status["admissionChecks"] = _pending_checks(target.obj, held, now)
        host.patch(target.obj, {"status": status}, status=True)
        host.record(target.obj, "Preempted", preempt.message, NORMAL)
        host.record(target.obj, "EvictedDueToPreempted", preempt.message, NORMAL)
        host.record(
            preempt.preemptor.obj,
            "PreemptedWorkload",
            f"Preempted workload {target.key} (UID: {target.uid}) in ClusterQueue "
            f"{target.cluster_queue}",
            NORMAL,
        )


UNSATISFIED = "The workload has not all checks ready"


def _pending_checks(workload: Obj, names: list[str], now: float) -> list[Obj]:
    """Each check Pending with no message (its transition time kept if it was Pending)."""
    old = {
        str(c.get("name")): c
        for c in objects(mapping(workload.get("status")).get("admissionChecks"))
    }
    return [
        {
            "name": name,
            "state": "Pending",
            "message": "",
            "lastTransitionTime": old[name].get("lastTransitionTime")
            if old.get(name, {}).get("state") == "Pending"
            else format_time(now),
        }
        for name in names
    ]


def _write_pending(host: Host, w: WorkloadView, reason: str, message: str, now: float) -> None:
    old = condition_of(w.obj, "QuotaReserved")
    if (old.get("status"), old.get("reason"), old.get("message")) == ("False", reason, message):
        return
    pending = with_conditions(w.obj, now, Condition("QuotaReserved", "False", reason, message))
    host.patch(w.obj, {"status": {"conditions": pending}}, status=True)
    host.record(w.obj, reason, message, WARNING)


def _write_queues(host: Host, decisions: Decisions, objs: Objects, written: dict[str, Obj]) -> None:
    workloads = [read_workload(w) for w in _as_written(host.list("Workload"), written)]
    live = [w for w in workloads if not is_true(w.obj, "Finished")]
    admitted_keys = {a.workload.key for a in decisions.admitted}
    pending_by_cq = {
        name: [w for w in queue if w.key not in admitted_keys]
        for name, queue in decisions.queued.items()
    }
    by_cq: dict[str, list[WorkloadView]] = {}
    by_local: dict[tuple[str, str], list[WorkloadView]] = {}
    for w in live:
        by_cq.setdefault(w.cluster_queue, []).append(w)
        by_local.setdefault((w.namespace, w.queue_name), []).append(w)
    for obj in objs.cluster_queues:
        name = str(obj["metadata"]["name"])
        cq = decisions.queues[name]
        holding = by_cq.get(name, []) if name else []
        status: Obj = {
            "pendingWorkloads": len(pending_by_cq.get(name, [])),
            "reservingWorkloads": len(holding),
            "admittedWorkloads": sum(1 for w in holding if is_true(w.obj, "Admitted")),
            "flavorsReservation": _flavor_usage(cq, holding, borrowed=True),
            "flavorsUsage": _flavor_usage(
                cq, [w for w in holding if is_true(w.obj, "Admitted")], borrowed=True
            ),
            "conditions": _active(
                obj,
                host.now(),
                _active_state(cq),
            ),
        }
        _patch_if_changed(host, obj, status)
    for obj in objs.local_queues:
        meta = obj["metadata"]
        namespace, name = str(meta.get("namespace") or "default"), str(meta["name"])
        cq_name = str(mapping(obj.get("spec")).get("clusterQueue") or "")
        mine = by_local.get((namespace, name), [])
        holding = [w for w in mine if w.cluster_queue]
        target = decisions.queues.get(cq_name)
        queued = {w.key for w in pending_by_cq.get(cq_name, [])}
        status = {
            "pendingWorkloads": sum(1 for w in mine if w.key in queued),
            "reservingWorkloads": len(holding),
            "admittedWorkloads": sum(1 for w in holding if is_true(w.obj, "Admitted")),
            "conditions": _active(
                obj,
                host.now(),
                ("True", "Ready", "Can submit new workloads to localQueue")
                if target is not None
                else (
                    "False",
                    "ClusterQueueDoesNotExist",
                    "Can't submit new workloads to clusterQueue",
                ),
            ),
        }
        if target is not None:
            status["flavorsReservation"] = _flavor_usage(target, holding, borrowed=False)
            status["flavorsUsage"] = _flavor_usage(
                target, [w for w in holding if is_true(w.obj, "Admitted")], borrowed=False
            )
        _patch_if_changed(host, obj, status)


def _flavor_usage(
    cq: ClusterQueueView, holding: list[WorkloadView], *, borrowed: bool
) -> list[Obj]:
    """One entry per flavor of every resource group, resources sorted by name: ``total`` and,
    for a ClusterQueue, ``borrowed`` (beyond nominal, only inside a cohort)."""
    out: list[Obj] = []
    for group in cq.groups:
        for flavor in group.flavors:
            resources = []
            for resource in sorted(group.resources):
                fr = (flavor, resource)
                total = sum(w.usage.get(fr, 0.0) for w in holding)
                entry: Obj = {"name": resource, "total": quantity(resource, total)}
                if borrowed:
                    nominal = cq.node.quotas[fr].nominal if fr in cq.node.quotas else 0.0
                    over = max(0.0, total - nominal) if cq.node.parent is not None else 0.0
                    entry["borrowed"] = quantity(resource, over)
                resources.append(entry)
            out.append({"name": flavor, "resources": resources})
    return out


def _active_state(cq: ClusterQueueView) -> tuple[str, str, str]:
    """A ClusterQueue's Active condition: status, reason, message (the first problem)."""
    problems = (
        ("FlavorNotFound", "missing ResourceFlavor(s)", cq.missing_flavors),
        ("AdmissionCheckNotFound", "missing AdmissionCheck(s)", cq.missing_checks),
        ("AdmissionCheckInactive", "inactive AdmissionCheck(s)", cq.inactive_checks),
    )
    for reason, what, names in problems:
        if names:
            return (
                "False",
                reason,
                f"Can't admit new workloads: references {what}: " + ", ".join(names),
            )
    return "True", "Ready", "Can admit new workloads"


def _active(obj: Obj, now: float, state: tuple[str, str, str]) -> list[Obj]:
    return with_conditions(obj, now, Condition("Active", *state))


def _patch_if_changed(host: Host, obj: Obj, status: Obj) -> None:
    old = mapping(obj.get("status"))
    if any(old.get(key) != value for key, value in status.items()):
        host.patch(obj, {"status": status}, status=True)
