"""A persistent store of Kubernetes-shaped objects in SQLite (WAL), with a virtual clock.

Objects keep their shape: metadata (uid, resourceVersion, creationTimestamp, generation,
labels, annotations, ownerReferences), spec and status. UIDs are UUID-shaped, deterministic,
and sort in creation order, since KAI breaks creation-time ties by UID. Beside the objects the
store keeps the last manifest applied to each (for ``apply``'s three-way merge), an index of
owner references (for cascading deletes) and named counters, the virtual clock among them.
"""

from __future__ import annotations

import builtins
import hashlib
import json
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Literal

from pykai.embedded.merge import three_way_merge, user_fields
from pykai.model.kinds import CLUSTER_SCOPED
from pykai.model.meta import Obj, format_time

Action = Literal["created", "configured", "unchanged"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS objects (
    kind TEXT NOT NULL, namespace TEXT NOT NULL, name TEXT NOT NULL, body TEXT NOT NULL,
    PRIMARY KEY (kind, namespace, name)
);
CREATE TABLE IF NOT EXISTS applied (
    kind TEXT NOT NULL, namespace TEXT NOT NULL, name TEXT NOT NULL, body TEXT NOT NULL,
    PRIMARY KEY (kind, namespace, name)
);
CREATE TABLE IF NOT EXISTS owners (
    owner_uid TEXT NOT NULL, kind TEXT NOT NULL, namespace TEXT NOT NULL, name TEXT NOT NULL,
    PRIMARY KEY (owner_uid, kind, namespace, name)
);
CREATE INDEX IF NOT EXISTS owners_by_object ON owners (kind, namespace, name);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
"""
_CLOCK = "clock"
_SEQUENCE = "seq"


def scoped_namespace(kind: str, namespace: str | None) -> str:
    """The namespace an object of ``kind`` lives in: empty for cluster-scoped kinds,
    ``default`` when none is given."""
    return "" if kind in CLUSTER_SCOPED else (namespace or "default")


def namespace_of(obj: Obj) -> str:
    """The object's namespace: empty for cluster-scoped kinds, ``default`` if unset."""
    return scoped_namespace(str(obj.get("kind")), (obj.get("metadata") or {}).get("namespace"))


class Store:
    """Objects by (kind, namespace, name), their last-applied manifests, and counters."""

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
        self.fresh = self._meta(_CLOCK) is None
        """True when this open created the store (nothing was stored before)."""
        if self.fresh:
            with self.transaction():
                self._set_meta(_CLOCK, str(float(int(time.time()))))

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
        return float(self._meta(_CLOCK) or 0.0)

    def advance(self, seconds: float) -> None:
        """Move the virtual clock forward by ``seconds`` (never backward)."""
        if seconds < 0:
            raise ValueError(f"the clock only moves forward: cannot advance by {seconds}s")
        with self.transaction():
            self._set_meta(_CLOCK, str(self.now() + seconds))

    def counter(self, key: str, step: int = 1) -> int:
        """Add ``step`` to a named counter and return its new value."""
        with self.transaction():
            value = self.read_counter(key) + step
            self._set_meta(key, str(value))
        return value

    def read_counter(self, key: str) -> int:
        """A named counter's value (0 if never set)."""
        return int(self._meta(key) or 0)

    # ---- reading -----------------------------------------------------------------------------

    def get(self, kind: str, name: str, namespace: str = "") -> Obj | None:
        """One object, or None."""
        row = self._db.execute(
            "SELECT body FROM objects WHERE kind=? AND namespace=? AND name=?",
            (kind, scoped_namespace(kind, namespace), name),
        ).fetchone()
        return json.loads(row[0]) if row else None

    def list(self, kind: str, namespace: str | None = None) -> builtins.list[Obj]:
        """Objects of a kind (in one namespace, or all when None), by namespace and name."""
        if namespace is None or kind in CLUSTER_SCOPED:
            rows = self._db.execute(
                "SELECT body FROM objects WHERE kind=? ORDER BY namespace, name", (kind,)
            )
        else:
            rows = self._db.execute(
                "SELECT body FROM objects WHERE kind=? AND namespace=? ORDER BY name",
                (kind, namespace or "default"),
            )
        return [json.loads(body) for (body,) in rows]

    def owned_by(self, uid: str) -> builtins.list[Obj]:
        """Objects whose ownerReferences name ``uid``."""
        rows = self._db.execute(
            "SELECT o.body FROM owners AS w JOIN objects AS o "
            "ON o.kind = w.kind AND o.namespace = w.namespace AND o.name = w.name "
            "WHERE w.owner_uid=? ORDER BY o.kind, o.namespace, o.name",
            (uid,),
        )
        return [json.loads(body) for (body,) in rows]

    # ---- writing -----------------------------------------------------------------------------

    def create(self, obj: Obj) -> Obj:
        """Store a new object, filling uid, resourceVersion, creationTimestamp and generation
        (a uid or creationTimestamp already in ``obj`` is kept: loading a cluster's state)."""
        stored = _placed(obj)
        kind, namespace, _ = _key(stored)
        meta = stored["metadata"]
        seq = self.counter(_SEQUENCE)
        meta["uid"] = meta.get("uid") or _uid(seq, f"{kind}/{namespace}/{meta['name']}")
        meta["creationTimestamp"] = meta.get("creationTimestamp") or format_time(self.now())
        meta["generation"] = 1
        meta["resourceVersion"] = str(seq)
        with self.transaction():
            try:
                self._db.execute(
                    "INSERT INTO objects (kind, namespace, name, body) VALUES (?, ?, ?, ?)",
                    (kind, namespace, meta["name"], _dump(stored)),
                )
            except sqlite3.IntegrityError:
                raise ValueError(f"{_describe(stored)} already exists") from None
            self._index_owners(stored)
        return stored

    def update(self, obj: Obj) -> Obj:
        """Replace a stored object (same kind, namespace and name), bumping resourceVersion."""
        version = str(self.counter(_SEQUENCE))
        stored = {**obj, "metadata": {**obj["metadata"], "resourceVersion": version}}
        with self.transaction():
            written = self._db.execute(
                "UPDATE objects SET body=? WHERE kind=? AND namespace=? AND name=?",
                (_dump(stored), *_key(stored)),
            ).rowcount
            if not written:
                raise LookupError(f"{_describe(stored)} does not exist; create it first")
            self._index_owners(stored)
        return stored

    def apply(self, manifest: Obj) -> tuple[Obj, Action]:
        """Create the object, or merge the manifest into the stored one as ``kubectl apply``
        does: fields the previous manifest set and this one dropped are removed, fields it
        sets are replaced, everything else (spec.nodeName, status, ...) is kept. Returns the
        stored object and what happened to it."""
        applied = _placed(user_fields(manifest))
        key = kind, namespace, name = _key(applied)
        live = self.get(kind, name, namespace)
        last = self._last_applied(key)
        with self.transaction():
            self._db.execute(
                "INSERT OR REPLACE INTO applied (body, kind, namespace, name) VALUES (?, ?, ?, ?)",
                (_dump(applied), *key),
            )
            if live is None:
                return self.create(manifest), "created"
            merged = three_way_merge(live, last, applied)
            if merged == live:
                return live, "unchanged"
            if _content(merged) != _content(live):
                merged["metadata"]["generation"] = int(live["metadata"]["generation"]) + 1
            return self.update(merged), "configured"

    def delete(self, kind: str, name: str, namespace: str = "") -> builtins.list[Obj]:
        """Remove an object and, in cascade, every object it owns; returns what was removed
        (the object first, nothing if it did not exist)."""
        obj = self.get(kind, name, namespace)
        if obj is None:
            return []
        removed = [obj]
        with self.transaction():
            key = _key(obj)
            for table in ("objects", "applied", "owners"):
                self._db.execute(
                    f"DELETE FROM {table} WHERE kind=? AND namespace=? AND name=?", key
                )
            for child in self.owned_by(obj["metadata"]["uid"]):
                removed += self.delete(
                    child["kind"], child["metadata"]["name"], namespace_of(child)
                )
        return removed

    def close(self) -> None:
        """Close the database."""
        self._db.close()

    # ---- internals ---------------------------------------------------------------------------

    def _last_applied(self, key: tuple[str, str, str]) -> Obj:
        """The manifest last applied to an object (empty for objects controllers made)."""
        row = self._db.execute(
            "SELECT body FROM applied WHERE kind=? AND namespace=? AND name=?", key
        ).fetchone()
        return json.loads(row[0]) if row else {}

    def _index_owners(self, obj: Obj) -> None:
        key = _key(obj)
        self._db.execute("DELETE FROM owners WHERE kind=? AND namespace=? AND name=?", key)
        uids = {str(ref.get("uid")) for ref in obj["metadata"].get("ownerReferences") or []}
        self._db.executemany(
            "INSERT INTO owners (owner_uid, kind, namespace, name) VALUES (?, ?, ?, ?)",
            [(uid, *key) for uid in sorted(uids) if uid],
        )

    def _meta(self, key: str) -> str | None:
        row = self._db.execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone()
        return str(row[0]) if row else None

    def _set_meta(self, key: str, value: str) -> None:
        self._db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (key, value))


def _placed(obj: Obj) -> Obj:
    """A shallow copy of ``obj`` with metadata.namespace as the store keeps it (none when
    cluster-scoped, ``default`` when unset)."""
    meta = dict(obj.get("metadata") or {})
    placed = {**obj, "metadata": meta}
    namespace = namespace_of(placed)
    meta.pop("namespace", None)
    if namespace:
        meta["namespace"] = namespace
    return placed


def _key(obj: Obj) -> tuple[str, str, str]:
    return str(obj["kind"]), namespace_of(obj), str(obj["metadata"]["name"])


def _describe(obj: Obj) -> str:
    kind, namespace, name = _key(obj)
    return f'{kind} "{namespace}/{name}"' if namespace else f'{kind} "{name}"'


def _content(obj: Obj) -> Obj:
    """What a change of bumps ``metadata.generation``: everything but metadata and status."""
    return {k: v for k, v in obj.items() if k not in ("metadata", "status")}


def _dump(obj: Obj) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"))


def _uid(seq: int, key: str) -> str:
    """A UUID-shaped id that sorts in creation order and is the same on every run."""
    digest = hashlib.sha256(key.encode()).hexdigest()
    return f"{seq:08x}-{digest[:4]}-4{digest[4:7]}-8{digest[7:10]}-{digest[10:22]}"
