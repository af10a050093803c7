"""v1 Events: one per distinct (object, type, reason, message), counted as it recurs.

An event is named after its object and a digest of what it says, so finding an earlier
identical one is a key lookup (if another object holds that name, the next of a few other
names is used). A repeat at a later virtual time bumps ``count`` and ``lastTimestamp``
(``kubectl describe`` shows "x3 over 2m"); repeats at the same instant are one occurrence,
so controllers may report on every round and the cluster still settles.
"""

from __future__ import annotations

from typing import Unpack

from pykai.controllers.events import NORMAL, WARNING, Recording, new_event
from pykai.embedded.reader import events_for
from pykai.embedded.store import ObjectStore
from pykai.model.errors import AlreadyExists
from pykai.model.meta import Obj, format_time
from pykai.model.problems import object_version
from pykai.standins.pods import NAME_ATTEMPTS

__all__ = ["NORMAL", "WARNING", "events_for", "record"]

_IDENTITY = ("involvedObject", "type", "reason", "message")
"""What makes two events the same one, recurring."""


def record(
    store: ObjectStore,
    involved: Obj,
    reason: str,
    message: str,
    kind: str = NORMAL,
    **how: Unpack[Recording],
) -> bool:
    """Record that ``reason``/``message`` happened to ``involved`` now, as ``how`` says
    (controllers/events.py); True if written (a new event, or a repeat at a later time), False
    if already recorded at this instant."""
    once, facts = how.get("once", False), how.get("facts")
    salt = object_version(involved) if once else ""
    with store.transaction():
        stamp = format_time(store.now())
        for attempt in range(NAME_ATTEMPTS):
            name_salt = salt + _retry(attempt)
            event = new_event(involved, reason, message, kind, stamp, name_salt, facts)
            found = store.get("Event", event["metadata"]["name"], event["metadata"]["namespace"])
            if found is None:
                store.create(event)
                return True
            if any(found.get(field) != event[field] for field in _IDENTITY):
                continue  # another object holds this name
            if once or found["lastTimestamp"] == stamp:
                return False
            found["count"] += 1
            found["lastTimestamp"] = stamp
            store.update(found)
            return True
    raise AlreadyExists(
        f"every name for event {reason!r} of {involved['metadata']['name']} is taken"
    )


def _retry(attempt: int) -> str:
    """The salt of a retried event name (none the first time: names stay as they were)."""
    return f"/{attempt}" if attempt else ""
