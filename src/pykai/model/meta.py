"""Object metadata shared by every kind, and helpers to read Kubernetes-shaped dicts."""

from __future__ import annotations

import copy
import functools
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from pykai.model.errors import ValidationError

Obj = dict[str, Any]


@dataclass(frozen=True, slots=True)
class OwnerRef:
    """A metadata.ownerReferences entry."""

    api_version: str
    kind: str
    name: str
    uid: str
    controller: bool = False


@dataclass(frozen=True, slots=True)
class Meta:
    """The parts of metadata the scheduler reads."""

    name: str
    namespace: str = ""
    uid: str = ""
    labels: dict[str, str] = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=dict)
    creation: float = 0.0
    owners: tuple[OwnerRef, ...] = ()

    @property
    def key(self) -> str:
        """``namespace/name``, or ``name`` for cluster-scoped objects."""
        return f"{self.namespace}/{self.name}" if self.namespace else self.name


def parse_time(value: object) -> float:
    """An RFC 3339 timestamp (or a number of seconds) as seconds since the epoch."""
    if value is None or value == "":
        return 0.0
    if isinstance(value, int | float):
        return float(value)
    text = str(value).replace("Z", "+00:00")
    parsed = datetime.fromisoformat(text)
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed.timestamp()


@functools.lru_cache(maxsize=256)  # a virtual clock repeats its instants
def format_time(seconds: float) -> str:
    """Seconds since the epoch as an RFC 3339 UTC timestamp."""
    stamp = datetime.fromtimestamp(seconds, tz=UTC)
    if stamp.microsecond:
        return stamp.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    return stamp.strftime("%Y-%m-%dT%H:%M:%SZ")


def mapping(value: object) -> Obj:
    """A field that must be an object, as a dict (anything else reads as empty)."""
    return value if isinstance(value, dict) else {}


def objects(value: object) -> list[Obj]:
    """A field that must be a list of objects, without the entries that are not."""
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []


def merge_patch(target: Obj, patch: Obj) -> Obj:
    """``target`` with a JSON merge patch (RFC 7386) applied: a null removes a key, a mapping
    merges into a mapping, anything else replaces. ``target`` itself is left as it was."""
    result = dict(target)
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        elif isinstance(value, dict):  # onto a non-mapping, a patch applies to {} (RFC 7386)
            current = result.get(key)
            result[key] = merge_patch(current if isinstance(current, dict) else {}, value)
        else:
            result[key] = value if isinstance(value, str | int | float) else copy.deepcopy(value)
    return result


def merge_diff(old: Obj, new: Obj) -> Obj:
    """The JSON merge patch that turns ``old`` into ``new`` (``merge_patch(old, diff) ==
    new``): removed keys as null, mappings diffed key by key, anything else as in ``new``."""
    diff: Obj = {key: None for key in old.keys() - new.keys()}
    for key, value in new.items():
        before = old.get(key)
        if isinstance(value, dict) and isinstance(before, dict):
            if nested := merge_diff(before, value):
                diff[key] = nested
        elif key not in old or before != value:
            diff[key] = copy.deepcopy(value)
    return diff


def kind_of(obj: Obj) -> str:
    """The object's kind, or an empty string."""
    return str(obj.get("kind") or "")


def parse_meta(obj: Obj, kind: str) -> Meta:
    """Read metadata, failing with a named field when its shape is wrong."""
    raw = obj.get("metadata")
    if not isinstance(raw, dict) or not raw.get("name"):
        raise ValidationError.single(
            kind, "<unnamed>", "metadata.name", "is required", "give the object a name"
        )
    name = str(raw["name"])
    labels = _string_map(raw.get("labels"), kind, name, "metadata.labels")
    annotations = _string_map(raw.get("annotations"), kind, name, "metadata.annotations")
    owners = tuple(
        OwnerRef(
            api_version=str(o.get("apiVersion", "")),
            kind=str(o.get("kind", "")),
            name=str(o.get("name", "")),
            uid=str(o.get("uid", "")),
            controller=bool(o.get("controller", False)),
        )
        for o in raw.get("ownerReferences") or []
        if isinstance(o, dict)
    )
    return Meta(
        name=name,
        namespace=str(raw.get("namespace") or ""),
        uid=str(raw.get("uid") or ""),
        labels=labels,
        annotations=annotations,
        creation=parse_time(raw.get("creationTimestamp")),
        owners=owners,
    )


def _string_map(value: object, kind: str, name: str, path: str) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ValidationError.single(kind, name, path, "must be a map of strings")
    return {str(k): "" if v is None else str(v) for k, v in value.items()}
