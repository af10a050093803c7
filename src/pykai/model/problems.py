"""Objects that cannot be taken as written: what was skipped and why, once per version.

Every component that reads stored objects (the engine's state, the pod-grouper, the workload
controllers, the binder) reports such an object instead of failing: a backend turns each
problem into one Warning event per object version, and the rest of the cluster goes on.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass

from pykai.model.meta import Obj, mapping

# metadata written by the server or by pykai itself: a change there is not a new version
_SERVER_FIELDS = frozenset(
    {"resourceVersion", "managedFields", "generation", "creationTimestamp", "selfLink"}
)


def object_version(obj: Obj) -> str:
    """A digest of what the object's author wrote (everything but status and server fields)."""
    meta = {k: v for k, v in mapping(obj.get("metadata")).items() if k not in _SERVER_FIELDS}
    written = {k: v for k, v in obj.items() if k not in ("status", "metadata")} | {"metadata": meta}
    text = json.dumps(written, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def identity(obj: Obj) -> tuple[str, str, str]:
    """(kind, namespace, name) of any object, however malformed."""
    meta = mapping(obj.get("metadata"))
    return str(obj.get("kind") or ""), str(meta.get("namespace") or ""), str(meta.get("name") or "")


@dataclass(frozen=True, slots=True)
class ObjectProblem:
    """One object pykai skipped: which version, and why (a sentence naming the field)."""

    kind: str
    namespace: str
    name: str
    uid: str
    version: str
    message: str

    @classmethod
    def of(cls, obj: Obj, message: str) -> ObjectProblem:
        """The problem ``message`` with the object ``obj`` as it is stored now."""
        kind, namespace, name = identity(obj)
        uid = str(mapping(obj.get("metadata")).get("uid") or "")
        return cls(kind, namespace, name, uid, object_version(obj), message)

    @property
    def key(self) -> tuple[str, str, str]:
        """(kind, namespace, name)."""
        return self.kind, self.namespace, self.name
