"""Conditions of an object's status (``status.conditions``), read and set as apimachinery's
``meta`` helpers do (``FindStatusCondition``, ``IsStatusConditionTrue``, ``SetStatusCondition``):
one condition per type; setting one keeps its ``lastTransitionTime`` while its status stays, and
stamps the time when its status changes or it is new."""

from __future__ import annotations

from typing import NamedTuple

from pykai.model.meta import Obj, format_time, mapping, objects


class Condition(NamedTuple):
    """A condition to set: its type, its status (``True``, ``False``, ``Unknown``), and its
    reason and message (None: the condition keeps what it has, or has none)."""

    type: str
    status: str
    reason: str | None = None
    message: str | None = None


def find_condition(conditions: object, kind: str) -> Obj:
    """The condition of type ``kind`` in a ``status.conditions`` list, or {} when there is none
    (the list itself; callers must not change it)."""
    return next((found for found in objects(conditions) if found.get("type") == kind), {})


def condition_of(obj: Obj, kind: str) -> Obj:
    """The condition of type ``kind`` of an object's status, or {} when it has none."""
    return find_condition(mapping(obj.get("status")).get("conditions"), kind)


def is_true(obj: Obj, kind: str) -> bool:
    """Whether an object's condition of type ``kind`` is ``True`` (False when it has none)."""
    return condition_of(obj, kind).get("status") == "True"


def set_condition(conditions: list[Obj], change: Condition, now: float) -> None:
    """Set one condition in ``conditions`` (changed in place, entries included): a new type is
    appended, stamped ``now``; an existing one takes the change's status, reason and message,
    and keeps its ``lastTransitionTime`` unless its status changes (or it has none)."""
    fields: Obj = {"type": change.type, "status": change.status}
    if change.reason is not None:
        fields["reason"] = change.reason
    if change.message is not None:
        fields["message"] = change.message
    old = find_condition(conditions, change.type)
    kept = old.get("lastTransitionTime") if old.get("status") == change.status else None
    fields["lastTransitionTime"] = kept or format_time(now)
    if old:
        old.update(fields)
    else:
        conditions.append(fields)


def with_conditions(obj: Obj, now: float, *changes: Condition) -> list[Obj]:
    """A copy of an object's conditions with ``changes`` set in order (``set_condition``); the
    object is left as it was."""
    out = [dict(found) for found in objects(mapping(obj.get("status")).get("conditions"))]
    for change in changes:
        set_condition(out, change, now)
    return out
