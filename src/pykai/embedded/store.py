"""A persistent store of Kubernetes-shaped objects in SQLite (WAL), with a virtual clock.

Objects keep their shape: metadata (uid, resourceVersion, creationTimestamp, generation,
labels, annotations, ownerReferences), spec and status. UIDs are UUID-shaped, deterministic,
and sort in creation order, since KAI breaks creation-time ties by UID.
"""

from __future__ import annotations

import copy
import hashlib
import json
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from pykai.model.meta import Obj, format_time

CLUSTER_SCOPED = frozenset(
    {"Node", "Namespace", "Queue", "PriorityClass", "SchedulingShard", "PersistentVolume"}
)
_SCHEMA = """
CREATE TABLE IF NOT EXISTS objects (
    kind TEXT NOT NULL, namespace TEXT NOT NULL, name TEXT NOT NULL, body TEXT NOT NULL,
    PRIMARY KEY (kind, namespace, name)
);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
"""


def namespace_of(obj: Obj) -> str:
    """The object's namespace: empty for cluster-scoped kinds, ``default`` if unset."""
    if obj.get("kind") in CLUSTER_SCOPED:
        return ""
    return str((obj.get("metadata") or {}).get("namespace") or "default")


class Store:
    """Objects by (kind, namespace, name), counters, and the virtual clock."""

    def __init__(self, path: str | Path | None = None) -> None:
        if path is None:
            target = ":memory:"
        else:
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            target = str(path)
        self._db = sqlite3.connect(target, isolation_level=None)
        if target != ":memory:":
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.executescript(_SCHEMA)
        self._depth = 0
        self.fresh = self._meta("clock") is None
        if self.fresh:
            with self.transaction():
                self._set_meta("clock", str(float(int(time.time()))))
                self._set_meta("seq", "0")

    # ---- transactions ------------------------------------------------------------------------

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """All writes inside are atomic; nested uses join the outer transaction."""
        if self._depth:
            self._depth += 1
            try:
                yield
            finally:
                self._depth -= 1
            return
        self._db.execute("BEGIN IMMEDIATE")
        self._depth = 1
        try:
            yield
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        else:
            self._db.execute("COMMIT")
        finally:
            self._depth = 0

    # ---- clock and counters ------------------------------------------------------------------

    def now(self) -> float:
        """The virtual clock, in seconds since the epoch."""
        return float(self._meta("clock") or 0.0)

    def advance(self, seconds: float) -> None:
        """Move the virtual clock forward."""
        with self.transaction():
            self._set_meta("clock", str(self.now() + seconds))

    def counter(self, key: str, step: int = 1) -> int:
        """Add ``step`` to a named counter and return its new value."""
        with self.transaction():
            value = int(self._meta(key) or 0) + step
            self._set_meta(key, str(value))
        return value

    def read_counter(self, key: str) -> int:
        """A named counter's value (0 if never set)."""
        return int(self._meta(key) or 0)

    # ---- objects -----------------------------------------------------------------------------

    def get(self, kind: str, name: str, namespace: str = "") -> Obj | None:
        """One object, or None."""
        ns = "" if kind in CLUSTER_SCOPED else (namespace or "default")
        row = self._db.execute(
            "SELECT body FROM objects WHERE kind=? AND namespace=? AND name=?", (kind, ns, name)
        ).fetchone()
        return json.loads(row[0]) if row else None

    def select(self, kind: str, namespace: str | None = None) -> list[Obj]:
        """Objects of a kind (in one namespace, or all when None), by namespace and name."""
        if namespace is None or kind in CLUSTER_SCOPED:
            rows = self._db.execute(
                "SELECT body FROM objects WHERE kind=? ORDER BY namespace, name", (kind,)
            )
        else:
            rows = self._db.execute(
                "SELECT body FROM objects WHERE kind=? AND namespace=? ORDER BY name",
                (kind, namespace),
            )
        return [json.loads(r[0]) for r in rows]

    def kinds(self) -> list[str]:
        """Every kind that has objects."""
        return [r[0] for r in self._db.execute("SELECT DISTINCT kind FROM objects ORDER BY kind")]

    def create(self, obj: Obj) -> Obj:
        """Store a new object, filling uid, resourceVersion, creationTimestamp, generation."""
        stored = copy.deepcopy(obj)
        meta = stored.setdefault("metadata", {})
        ns = namespace_of(stored)
        if ns:
            meta["namespace"] = ns
        seq = self.counter("seq")
        meta.setdefault("uid", _uid(seq, f"{stored['kind']}/{ns}/{meta['name']}"))
        meta.setdefault("creationTimestamp", format_time(self.now()))
        meta["generation"] = 1
        meta["resourceVersion"] = str(seq)
        self._write(stored)
        return stored

    def update(self, obj: Obj) -> Obj:
        """Replace a stored object (same kind, namespace and name), bumping resourceVersion."""
        stored = copy.deepcopy(obj)
        stored["metadata"]["resourceVersion"] = str(self.counter("seq"))
        self._write(stored)
        return stored

    def delete(self, kind: str, name: str, namespace: str = "") -> Obj | None:
        """Remove an object; returns what was stored."""
        old = self.get(kind, name, namespace)
        if old is not None:
            ns = "" if kind in CLUSTER_SCOPED else (namespace or "default")
            with self.transaction():
                self._db.execute(
                    "DELETE FROM objects WHERE kind=? AND namespace=? AND name=?", (kind, ns, name)
                )
        return old

    def owned_by(self, uid: str) -> list[Obj]:
        """Objects whose ownerReferences name ``uid``."""
        pattern = f'%"uid": "{uid}"%'
        rows = self._db.execute("SELECT body FROM objects WHERE body LIKE ?", (pattern,))
        found = []
        for (body,) in rows:
            obj: Obj = json.loads(body)
            owners = (obj.get("metadata") or {}).get("ownerReferences") or []
            if any(o.get("uid") == uid for o in owners):
                found.append(obj)
        return found

    def close(self) -> None:
        """Close the database."""
        self._db.close()

    def _write(self, obj: Obj) -> None:
        with self.transaction():
            self._db.execute(
                "INSERT OR REPLACE INTO objects (kind, namespace, name, body) VALUES (?, ?, ?, ?)",
                (
                    obj["kind"],
                    namespace_of(obj),
                    obj["metadata"]["name"],
                    json.dumps(obj, sort_keys=True),
                ),
            )

    def _meta(self, key: str) -> str | None:
        row = self._db.execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone()
        return str(row[0]) if row else None

    def _set_meta(self, key: str, value: str) -> None:
        self._db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (key, value))


def _uid(seq: int, key: str) -> str:
    """A UUID-shaped id that sorts in creation order and is the same on every run."""
    digest = hashlib.sha256(key.encode()).hexdigest()
    return f"{seq:08x}-{digest[:4]}-4{digest[4:7]}-8{digest[7:10]}-{digest[10:22]}"


_SERVER_KEYS = ("metadata", "status", "apiVersion", "kind")


def strip_server_fields(obj: Obj) -> dict[str, Any]:
    """The parts of an object a user writes (for comparing an apply with what is stored)."""
    meta = obj.get("metadata") or {}
    return {
        "labels": meta.get("labels") or {},
        "annotations": meta.get("annotations") or {},
        "ownerReferences": meta.get("ownerReferences") or [],
        "body": {
            k: v for k, v in obj.items() if k not in ("metadata", "status", "apiVersion", "kind")
        },
    }
