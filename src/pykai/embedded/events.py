"""v1 Events, recorded once per distinct (object, reason, message)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pykai.model.meta import Obj, format_time

if TYPE_CHECKING:
    from pykai.embedded.cluster import EmbeddedCluster


def record(
    cluster: EmbeddedCluster, involved: Obj, reason: str, message: str, kind: str = "Normal"
) -> bool:
    """Record an event on ``involved``; True if a new event was written (an identical one
    already there is left as it is, so the cluster settles)."""
    meta = involved["metadata"]
    namespace = str(meta.get("namespace") or "default")
    uid = str(meta.get("uid", ""))
    for event in cluster.store.select("Event", namespace):
        target = event["involvedObject"]
        if target.get("uid") == uid and event["reason"] == reason and event["message"] == message:
            return False
    stamp = format_time(cluster.now())
    seq = cluster.store.counter("events")
    cluster.store.create(
        {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": f"{meta['name']}.{seq:x}", "namespace": namespace},
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
            "source": {"component": "kai-scheduler"},
        }
    )
    return True


def events_for(cluster: EmbeddedCluster, kind: str, name: str, namespace: str = "") -> list[Obj]:
    """Events about one object, oldest first."""
    found = [
        e
        for e in cluster.store.select("Event", None)
        if e["involvedObject"]["kind"] == kind
        and e["involvedObject"]["name"] == name
        and (not namespace or e["involvedObject"].get("namespace") in (namespace, ""))
    ]
    return sorted(found, key=lambda e: int(e["metadata"]["resourceVersion"]))
