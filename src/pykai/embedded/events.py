"""v1 Events: one per distinct (object, type, reason, message), counted as it recurs.

An event is named after its object and a digest of what it says, so finding an earlier
identical one is a key lookup. A repeat at a later virtual time bumps ``count`` and
``lastTimestamp`` (``kubectl describe`` shows "x3 over 2m"); repeats at the same instant are
one occurrence, so controllers may report on every round and the cluster still settles.
"""

from __future__ import annotations

import hashlib

from pykai.embedded.store import CLUSTER_SCOPED, Store
from pykai.model.meta import Obj, format_time

NORMAL = "Normal"
WARNING = "Warning"
_COMPONENT = "kai-scheduler"


def record(store: Store, involved: Obj, reason: str, message: str, kind: str = NORMAL) -> bool:
    """Record that ``reason``/``message`` happened to ``involved`` now; True if written (a new
    event, or a repeat at a later time), False if already recorded at this instant."""
    meta = involved["metadata"]
    uid = str(meta.get("uid", ""))
    namespace = str(meta.get("namespace") or "default")
    digest = hashlib.sha256(f"{uid}\0{kind}\0{reason}\0{message}".encode()).hexdigest()
    name = f"{meta['name']}.{digest[:16]}"
    stamp = format_time(store.now())
    event = store.get("Event", name, namespace)
    if event is not None:
        if event["lastTimestamp"] == stamp:
            return False
        event["count"] += 1
        event["lastTimestamp"] = stamp
        store.update(event)
        return True
    store.create(
        {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": name, "namespace": namespace},
            "involvedObject": {
                "apiVersion": involved.get("apiVersion", "v1"),
                "kind": involved["kind"],
                "name": meta["name"],
                "namespace": str(meta.get("namespace") or ""),
                "uid": uid,
            },
            "reason": reason,
            "message": message,
            "type": kind,
            "count": 1,
            "firstTimestamp": stamp,
            "lastTimestamp": stamp,
            "source": {"component": _COMPONENT},
        }
    )
    return True


def events_for(store: Store, kind: str, name: str, namespace: str = "") -> list[Obj]:
    """Events about one object (by kind, namespace and name), first recorded first."""
    involved_namespace = "" if kind in CLUSTER_SCOPED else (namespace or "default")
    found = [
        event
        for event in store.list("Event", involved_namespace or "default")
        if event["involvedObject"]["kind"] == kind
        and event["involvedObject"]["name"] == name
        and event["involvedObject"]["namespace"] == involved_namespace
    ]
    return sorted(found, key=lambda e: str(e["metadata"]["uid"]))  # uids sort by creation
