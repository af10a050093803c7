"""v1 Event objects as both backends write them: one per distinct (object, type, reason,
message), named from a digest of those, so a repeat finds the earlier event by name."""

from __future__ import annotations

import hashlib

from pykai.model.meta import Obj
from pykai.model.names import MAX_NAME, bounded_name

NORMAL = "Normal"
WARNING = "Warning"
COMPONENT = "kai-scheduler"


def event_name(involved: Obj, reason: str, message: str, kind: str, salt: str = "") -> str:
    """``<object name>.<digest of uid, type, reason, message and salt>``, within the name
    limit: ``salt`` makes it another event (the object's version for one report per version,
    a retry number when another object holds the name)."""
    meta = involved["metadata"]
    uid = str(meta.get("uid", ""))
    said = f"{uid}\0{kind}\0{reason}\0{message}" + (f"\0{salt}" if salt else "")
    digest = hashlib.sha256(said.encode()).hexdigest()[:16]
    return f"{bounded_name(str(meta['name']), MAX_NAME - len(digest) - 1)}.{digest}"


def new_event(
    involved: Obj, reason: str, message: str, kind: str, stamp: str, salt: str = ""
) -> Obj:
    """A first occurrence (count 1) at time ``stamp``, in the object's namespace (named with
    ``salt``, see event_name)."""
    meta = involved["metadata"]
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {
            "name": event_name(involved, reason, message, kind, salt),
            "namespace": str(meta.get("namespace") or "default"),
        },
        "involvedObject": {
            "apiVersion": involved.get("apiVersion", "v1"),
            "kind": involved["kind"],
            "name": meta["name"],
            "namespace": str(meta.get("namespace") or ""),
            "uid": str(meta.get("uid", "")),
        },
        "reason": reason,
        "message": message,
        "type": kind,
        "count": 1,
        "firstTimestamp": stamp,
        "lastTimestamp": stamp,
        "source": {"component": COMPONENT},
    }
