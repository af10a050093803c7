"""``pykai explain`` for a job Kueue manages (a RayJob, RayCluster or batch Job naming a
LocalQueue, its Workload, or one of its pods): where its Workload stands in Kueue and the rule
that holds it, from the Workload's status as Kueue's admission wrote it (engine/kueue/
admission.py on both backends) and the queues it names.

- admitted: through which ClusterQueue, on which flavors (``status.admission``);
- quota reserved, not admitted: the admission checks still pending (``status.admissionChecks``);
- pending: its LocalQueue or ClusterQueue missing or inactive, or the ClusterQueue's quota
  (``WaitingForQuota``; ``ExceedsMaxQuota``: never, as asked), or nodes for its flavors, or
  preempted Workloads still leaving; its positions in the ClusterQueue and the LocalQueue as
  Kueue's visibility API reports them (engine/kueue/positions.py).
"""

from __future__ import annotations

from typing import Any

from pykai.cli.related import Reader
from pykai.engine.kueue.positions import pending_workloads
from pykai.model.conditions import condition_of, is_true
from pykai.model.kueue.jobs import MANAGED_KINDS, is_managed, queue_name
from pykai.model.meta import Obj, mapping, objects

Answer = dict[str, Any]

# QuotaReserved=False reasons (Kueue's) -> the rule that holds the Workload
_RULES = {
    "WaitingForQuota": "ClusterQueue quota",
    "ExceedsMaxQuota": "ClusterQueue quota",
    "WaitingForNodes": "nodes",
    "WaitingForPreemptedWorkloads": "preemption",
}


def managed_job(reader: Reader, obj: Obj) -> tuple[Obj, Obj | None] | None:
    """The job Kueue manages that ``obj`` is (or that owns it, through the owners Kueue's jobs
    make: RayJob -> RayCluster/Job -> Pod), with its Workload (None: not made yet); None when
    no such job."""
    namespace = obj["metadata"].get("namespace") or "default"
    found: tuple[Obj, Obj | None] | None = None
    current: Obj | None = obj
    while current is not None:
        uid = current["metadata"].get("uid")
        owned = [
            w
            for w in reader.list("Workload", namespace)
            if any(ref.get("uid") == uid for ref in objects(w["metadata"].get("ownerReferences")))
        ]
        if owned:
            return current, owned[0]
        if is_managed(current):
            found = (current, None)
        current = managed_owner(reader, current, namespace)
    return found


def managed_owner(reader: Reader, obj: Obj, namespace: str) -> Obj | None:
    """The job of a kind Kueue manages that owns ``obj`` (None: none)."""
    for ref in objects(obj["metadata"].get("ownerReferences")):
        if ref.get("kind") in MANAGED_KINDS:
            owner = reader.get(str(ref["kind"]), str(ref.get("name")), namespace)
            if owner is not None and owner["metadata"].get("uid") == ref.get("uid"):
                return owner
    return None


def explain_kueue(reader: Reader, job: Obj, workload: Obj | None) -> Answer:
    """Where a managed job's Workload stands in Kueue, and why."""
    meta = job["metadata"]
    namespace = meta.get("namespace") or "default"
    answer: Answer = {
        "job": f"{job['kind']} {namespace}/{meta['name']}",
        "localQueue": queue_name(job),
    }
    if workload is None:
        return answer | {
            "state": "pending",
            "rule": "no Workload",
            "verdict": "Kueue has not made its Workload yet (it does on the next round)",
        }
    spec, status = mapping(workload.get("spec")), mapping(workload.get("status"))
    admission = mapping(status.get("admission"))
    answer |= {
        "workload": f"{namespace}/{workload['metadata']['name']}",
        "localQueue": str(spec.get("queueName") or answer["localQueue"]),
        "clusterQueue": str(admission.get("clusterQueue") or _cluster_queue(reader, workload)),
        "priority": int(spec.get("priority") or 0),
    }
    checks = [
        {"name": c.get("name"), "state": c.get("state"), "message": c.get("message", "")}
        for c in objects(status.get("admissionChecks"))
    ]
    if checks:
        answer["admissionChecks"] = checks
    if admission:
        answer["flavors"] = {
            str(a.get("name")): dict(mapping(a.get("flavors")))
            for a in objects(admission.get("podSetAssignments"))
        }
    return answer | _standing(reader, workload, str(answer["clusterQueue"]), checks)


def _standing(reader: Reader, workload: Obj, queue: str, checks: list[dict[str, Any]]) -> Answer:
    """State, rule, verdict (and positions in ClusterQueue ``queue`` while it waits for quota)."""
    if is_true(workload, "Finished"):
        return {"state": "finished", "rule": "none", "verdict": "it has finished"}
    if mapping(workload.get("spec")).get("active") is False:
        return {"state": "deactivated", "rule": "deactivated", "verdict": "it was deactivated"}
    if is_true(workload, "Admitted"):
        return {
            "state": "admitted",
            "rule": "none",
            "verdict": f"admitted through ClusterQueue {queue}; its pods are scheduled",
        }
    if is_true(workload, "QuotaReserved"):
        waiting = [c for c in checks if c["state"] != "Ready"]
        named = ", ".join(f"{c['name']} ({c['state']}: {c['message']})" for c in waiting)
        return {
            "state": "quota reserved",
            "rule": "admission check",
            "verdict": f"quota reserved in ClusterQueue {queue}; it waits for the admission "
            f"check(s) {named or 'to be written'}",
        }
    reserved = condition_of(workload, "QuotaReserved")
    reason, message = str(reserved.get("reason") or ""), str(reserved.get("message") or "")
    rule = _RULES.get(reason) or _misconfigured(message) or "not yet considered"
    verdict = message or "Kueue has not considered it yet"
    if reason == "ExceedsMaxQuota":
        verdict = f"it can never be admitted as asked: {message}"
    answer: Answer = {"state": "pending", "rule": rule, "reason": reason, "verdict": verdict}
    position = _position(reader, workload, queue)
    if position is not None:
        answer["position"] = position
    return answer


def _misconfigured(message: str) -> str:
    for words, rule in (
        ("LocalQueue", "missing LocalQueue"),
        ("is inactive", "inactive ClusterQueue"),
        ("ClusterQueue", "missing ClusterQueue"),
    ):
        if words in message:
            return rule
    return ""


def _cluster_queue(reader: Reader, workload: Obj) -> str:
    """The ClusterQueue the Workload's LocalQueue points to ("" if none)."""
    namespace = workload["metadata"].get("namespace") or "default"
    name = str(mapping(workload.get("spec")).get("queueName") or "")
    local = reader.get("LocalQueue", name, namespace) if name else None
    return str(mapping((local or {}).get("spec")).get("clusterQueue") or "")


def _position(reader: Reader, workload: Obj, queue: str) -> Answer | None:
    """Its positions among the pending Workloads, as Kueue's visibility API counts (from 0)."""
    pending = pending_workloads(
        reader.list("Workload"), reader.list("LocalQueue"), reader.list("ClusterQueue")
    )
    uid = workload["metadata"].get("uid")
    for found in pending.get(queue, []):
        if found.obj["metadata"].get("uid") == uid:
            return {
                "inClusterQueue": found.position_in_cluster_queue,
                "inLocalQueue": found.position_in_local_queue,
            }
    return None


def kueue_text(answer: Answer) -> list[str]:
    """A Kueue answer for people, as lines."""
    lines = [f"Kueue:       {answer['job']}, LocalQueue {answer['localQueue'] or '<none>'}"]
    if "workload" in answer:
        lines.append(
            f"Workload:    {answer['workload']} in ClusterQueue "
            f"{answer['clusterQueue'] or '<none>'}: {answer['state']}"
        )
    lines.append(f"Kueue rule:  {answer['rule']}")
    lines.append(f"Kueue says:  {answer['verdict']}")
    for pod_set, flavors in answer.get("flavors", {}).items():
        chosen = ", ".join(f"{resource} {flavor}" for resource, flavor in flavors.items())
        lines.append(f"Flavors:     {pod_set}: {chosen}")
    for check in answer.get("admissionChecks", []):
        lines.append(f"Check:       {check['name']}: {check['state']} {check['message']}".rstrip())
    position = answer.get("position")
    if position is not None:
        lines.append(
            f"Position:    {position['inClusterQueue'] + 1} in ClusterQueue "
            f"{answer['clusterQueue']}, {position['inLocalQueue'] + 1} in LocalQueue "
            f"{answer['localQueue']}"
        )
    return lines
