"""Conditions of Kueue's objects (Workload, ClusterQueue, LocalQueue, AdmissionCheck) as Kueue
sets them (apimachinery's ``SetStatusCondition``)."""

from __future__ import annotations

from pykai.model.meta import Obj, format_time, mapping, objects


def conditions(obj: Obj, now: float, *changes: tuple[str, str, str, str]) -> list[Obj]:
    """The Workload's conditions with (type, status, reason, message) changes; a condition
    keeps its lastTransitionTime while its status stays."""
    out = [dict(found) for found in objects(mapping(obj.get("status")).get("conditions"))]
    for kind, status, reason, message in changes:
        old = next((found for found in out if found.get("type") == kind), None)
        new = {"type": kind, "status": status, "reason": reason, "message": message}
        new["lastTransitionTime"] = (
            old["lastTransitionTime"]
            if old is not None and old.get("status") == status and old.get("lastTransitionTime")
            else format_time(now)
        )
        if old is None:
            out.append(new)
        else:
            old.update(new)
    return out
