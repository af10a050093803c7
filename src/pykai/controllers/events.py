"""v1 Event objects as both backends write them: one per distinct (object, type, reason,
message), named from a digest of those, so a repeat finds the earlier event by name. What an
event says as fields beside its text (``action``, ``related``) is written as fields too, for
readers to take as they are."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import TypedDict

from pykai.model.meta import Obj
from pykai.model.names import MAX_NAME, bounded_name

NORMAL = "Normal"
WARNING = "Warning"
COMPONENT = "kai-scheduler"


@dataclass(frozen=True, slots=True)
class EventFacts:
    """What an event says as fields of a v1 Event beside its message: ``action``, what was
    done (an ``Evict``: the KAI action), and ``related``, a reference to the other object
    it concerns (an ``Evict``: the preemptor's PodGroup; None: none)."""

    action: str = ""
    related: Obj | None = None


class Recording(TypedDict, total=False):
    """How an event is recorded, beside what it says (every recorder takes these): ``once``, a
    standing fact, said once per version of the object (kept across restarts: the event's
    name says which version) and never counted up; ``facts``, what it also says as fields."""

    once: bool
    facts: EventFacts


def reference(obj: Obj) -> Obj:
    """An object reference to ``obj``, as an event names the objects it is about."""
    meta = obj["metadata"]
    return {
        "apiVersion": obj.get("apiVersion", "v1"),
        "kind": obj["kind"],
        "name": meta["name"],
        "namespace": str(meta.get("namespace") or ""),
        "uid": str(meta.get("uid", "")),
    }


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
    involved: Obj,
    reason: str,
    message: str,
    kind: str,
    stamp: str,
    salt: str = "",
    facts: EventFacts | None = None,
) -> Obj:
    """A first occurrence (count 1) at time ``stamp``, in the object's namespace (named with
    ``salt``, see event_name), with ``facts`` as its fields (None: none)."""
    meta = involved["metadata"]
    event: Obj = {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {
            "name": event_name(involved, reason, message, kind, salt),
            "namespace": str(meta.get("namespace") or "default"),
        },
        "involvedObject": reference(involved),
        "reason": reason,
        "message": message,
        "type": kind,
        "count": 1,
        "firstTimestamp": stamp,
        "lastTimestamp": stamp,
        "source": {"component": COMPONENT},
    }
    if facts is not None and facts.action:
        event["action"] = facts.action
    if facts is not None and facts.related is not None:
        event["related"] = facts.related
    return event
