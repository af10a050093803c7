"""A store of Kubernetes-shaped objects with a virtual clock: what every store does
(``ObjectStore``), over the storage primitives each backend gives: SQLite for the cluster file
(``embedded/sqlite.py``), dicts in memory for tests and trace replays (``embedded/memory.py``).

Objects keep their shape: metadata (uid, resourceVersion, creationTimestamp, generation,
labels, annotations, ownerReferences), spec and status. UIDs are UUID-shaped, deterministic,
and sort in creation order, since KAI breaks creation-time ties by UID. Beside the objects the
store keeps the last manifest applied to each (for ``apply``'s three-way merge), an index of
owner references (for cascading deletes) and named counters, the virtual clock among them.

Writes happen in transactions; every committed transaction that changed something bumps the
store's *generation*, and a change log tells which objects each generation wrote (the last
``CHANGE_LOG_GENERATIONS``), so what was derived from the store can be brought up to date.
"""

from __future__ import annotations

import builtins
import hashlib
import json
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Literal

from pykai.embedded.merge import three_way_merge, user_fields
from pykai.model.errors import AlreadyExists, InvalidRequest
from pykai.model.kinds import CLUSTER_SCOPED
from pykai.model.meta import Obj, format_time

Action = Literal["created", "configured", "unchanged"]

CLOCK = "clock"
"""The meta key of the virtual clock (a file without it is no pykai cluster)."""
_SEQUENCE = "seq"
_AT = "@generation"  # suffix of the meta key of the generation a derived value was derived at
CHANGE_LOG_GENERATIONS = 256
"""How many generations the change log keeps; a reader further behind reloads everything."""


def scoped_namespace(kind: str, namespace: str | None) -> str:
    """The namespace an object of ``kind`` lives in: empty for cluster-scoped kinds,
    ``default`` when none is given."""
    return "" if kind in CLUSTER_SCOPED else (namespace or "default")


def namespace_of(obj: Obj) -> str:
    """The object's namespace: empty for cluster-scoped kinds, ``default`` if unset."""
    return scoped_namespace(str(obj.get("kind")), (obj.get("metadata") or {}).get("namespace"))


class ObjectStore(ABC):
    """Objects by (kind, namespace, name), their last-applied manifests, and counters: what
    every store does, over the storage primitives a backend gives (SQLite: :class:`Store`;
    dicts: ``embedded/memory.py``)."""

    path: Path | None = None

    def __init__(self, *, readonly: bool = False) -> None:
        self.readonly = readonly
        self.generation = 0
        """The generation this store sees: read when each transaction begins, bumped when it
        commits a change."""
        self._depth = 0
        self._writes = False
        self._rollback_hooks: builtins.list[Callable[[], None]] = []

    # ---- transactions ------------------------------------------------------------------------

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """All writes inside are atomic and see what other processes committed before;
        nested uses join the outer transaction. Committing a change bumps the generation."""
        if self._depth:
            if not self._writes:
                raise RuntimeError("cannot write inside a read snapshot")
            yield from self._join()
            return
        if self.readonly:
            raise RuntimeError(f'the cluster file "{self.path}" was opened read-only')
        self._begin(writes=True)
        try:
            yield
            self._commit()
        except BaseException:
            self._abort()
            for hook in self._rollback_hooks:
                hook()
            raise
        finally:
            self._depth = 0
            self._rollback_hooks.clear()

    def on_rollback(self, hook: Callable[[], None]) -> None:
        """Call ``hook`` if the transaction under way rolls back (once, however often it is
        asked)."""
        if hook not in self._rollback_hooks:
            self._rollback_hooks.append(hook)

    @contextmanager
    def snapshot(self) -> Iterator[None]:
        """Reads inside see one consistent state of the store (no writes); inside a
        transaction, that transaction's."""
        if self._depth:
            yield from self._join()
            return
        self._begin(writes=False)
        try:
            yield
        finally:
            self._end_snapshot()
            self._depth = 0

    def _join(self) -> Iterator[None]:
        """The body of a transaction or snapshot inside the one under way (a plain generator:
        nested ones are many, a context manager each would cost)."""
        self._depth += 1
        try:
            yield
        finally:
            self._depth -= 1

    def _log_horizon(self) -> int:
        """The change log names every change after this generation (and no earlier one)."""
        return self.generation - CHANGE_LOG_GENERATIONS

    @abstractmethod
    def changes_since(self, generation: int) -> builtins.list[tuple[str, str, str]] | None:
        """(kind, namespace, name) of the objects written after ``generation`` up to the one
        seen now (call inside a transaction or snapshot), sorted, or None when the log no
        longer reaches back that far."""

    @abstractmethod
    def _begin(self, *, writes: bool) -> None:
        """Start the outermost transaction (or snapshot) and read the generation it sees."""

    @abstractmethod
    def _commit(self) -> None:
        """Commit the outermost transaction; a change bumps the generation."""

    @abstractmethod
    def _abort(self) -> None:
        """Undo every write of the outermost transaction."""

    @abstractmethod
    def _end_snapshot(self) -> None:
        """End a read snapshot."""

    # ---- clock and counters ------------------------------------------------------------------

    def now(self) -> float:
        """The virtual clock, in seconds since the epoch."""
        return float(self._meta(CLOCK) or 0.0)

    def advance(self, seconds: float) -> None:
        """Move the virtual clock forward by ``seconds`` (never backward)."""
        if seconds < 0:
            raise InvalidRequest(f"the clock only moves forward: cannot advance by {seconds}s")
        with self.transaction():
            self._set_meta(CLOCK, str(self.now() + seconds))

    def counter(self, key: str, step: int = 1) -> int:
        """Add ``step`` to a named counter and return its new value."""
        with self.transaction():
            return self._count(key, step)

    def _count(self, key: str, step: int = 1) -> int:
        """``counter`` inside the transaction under way."""
        value = self.read_counter(key) + step
        self._set_meta(key, str(value))
        return value

    def read_counter(self, key: str) -> int:
        """A named counter's value (0 if never set)."""
        return int(self._meta(key) or 0)

    # ---- values derived from the objects ----------------------------------------------------

    @abstractmethod
    def changed(self) -> bool:
        """True when the write transaction under way has written something."""

    @abstractmethod
    def wrote(self, kinds: tuple[str, ...]) -> bool:
        """True when the write transaction under way has written an object of ``kinds``."""

    def derived(self, key: str) -> tuple[str, int] | None:
        """A value kept by ``derive`` and the generation it was derived at (None if none was
        kept). It describes the objects as they are only if that generation is the one seen
        now: a later write without a new ``derive`` leaves it behind."""
        generation = self.derived_at(key)
        value = None if generation is None else self._meta(key)
        return None if value is None or generation is None else (value, generation)

    def derived_at(self, key: str) -> int | None:
        """The generation the value kept under ``key`` was derived at (None: none kept)."""
        generation = self._meta(f"{key}{_AT}")
        return None if generation is None else int(generation)

    def carry(self, key: str) -> None:
        """Keep the value derived under ``key`` as of the generation this write transaction
        commits, as it is: what it was derived from is unchanged (call it last)."""
        if self.changed():
            self._set_meta(f"{key}{_AT}", str(self.generation + 1))

    def derive(self, key: str, value: str) -> None:
        """Keep ``value``, derived from the objects as this write transaction leaves them, as
        of the generation its commit makes (call it after the transaction's other writes).
        Nothing is written when the transaction wrote nothing else and the same value is
        kept as of now, so deriving again from unchanged objects makes no new generation."""
        with self.transaction():
            kept = self._meta(key)
            if not self.changed() and (kept, self.derived_at(key)) == (value, self.generation):
                return
            if kept != value:
                self._set_meta(key, value)
            self._set_meta(f"{key}{_AT}", str(self.generation + 1))

    def _start_clock(self, seed: Callable[[ObjectStore], None] | None) -> None:
        """A new store: the clock at the current whole second, then ``seed``."""
        with self.transaction():
            self._set_meta(CLOCK, str(float(int(time.time()))))
            if seed is not None:
                seed(self)

    @abstractmethod
    def _meta(self, key: str) -> str | None: ...

    @abstractmethod
    def _set_meta(self, key: str, value: str) -> None: ...

    # ---- reading -----------------------------------------------------------------------------

    @abstractmethod
    def get(self, kind: str, name: str, namespace: str = "") -> Obj | None:
        """One object (a copy of its own), or None."""

    @abstractmethod
    def list(self, kind: str, namespace: str | None = None) -> builtins.list[Obj]:
        """Objects of a kind (in one namespace, or all when None), by namespace and name."""

    @abstractmethod
    def namespace_contents(self, namespace: str) -> builtins.list[tuple[str, str]]:
        """(kind, name) of every object in ``namespace``, by kind and name."""

    @abstractmethod
    def owned_by(self, uid: str) -> builtins.list[Obj]:
        """Objects whose ownerReferences name ``uid``, by kind, namespace and name."""

    # ---- writing -----------------------------------------------------------------------------

    def create(self, obj: Obj) -> Obj:
        """Store a new object, filling uid, resourceVersion, creationTimestamp and generation
        (a uid or creationTimestamp already in ``obj`` is kept: loading a cluster's state)."""
        stored = _placed(obj)
        key = kind, namespace, _ = _key(stored)
        meta = stored["metadata"]
        with self.transaction():
            seq = self._count(_SEQUENCE)
            meta["uid"] = meta.get("uid") or _uid(seq, f"{kind}/{namespace}/{meta['name']}")
            meta["creationTimestamp"] = meta.get("creationTimestamp") or format_time(self.now())
            meta["generation"] = 1
            meta["resourceVersion"] = str(seq)
            if not self._insert(key, stored):
                raise AlreadyExists(f"{_describe(stored)} already exists")
            self._index_owners(key, _owner_uids(stored))
            self._log_change(key)
        return stored

    def update(self, obj: Obj) -> Obj:
        """Replace a stored object (same kind, namespace and name), bumping resourceVersion."""
        with self.transaction():
            version = str(self._count(_SEQUENCE))
            stored = {**obj, "metadata": {**obj["metadata"], "resourceVersion": version}}
            key = _key(stored)
            if not self._replace(key, stored):
                raise LookupError(f"{_describe(stored)} does not exist; create it first")
            self._index_owners(key, _owner_uids(stored))
            self._log_change(key)
        return stored

    def apply(self, manifest: Obj) -> tuple[Obj, Action]:
        """Create the object, or merge the manifest into the stored one as ``kubectl apply``
        does: fields the previous manifest set and this one dropped are removed, fields it
        sets are replaced, everything else (spec.nodeName, status, ...) is kept. Returns the
        stored object and what happened to it."""
        applied = _placed(user_fields(manifest))
        key = kind, namespace, name = _key(applied)
        with self.transaction():
            live = self.get(kind, name, namespace)
            last = self._last_applied(key)
            if canonical(applied) != canonical(last):  # rewriting the row is still a write
                self._set_applied(key, applied)
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
        with self.transaction():
            obj = self.get(kind, name, namespace)
            if obj is None:
                return []
            removed = [obj]
            key = _key(obj)
            self._erase(key)
            self._log_change(key)
            for child in self.owned_by(obj["metadata"]["uid"]):
                removed += self.delete(
                    child["kind"], child["metadata"]["name"], namespace_of(child)
                )
        return removed

    @abstractmethod
    def close(self) -> None:
        """Release what the store holds."""

    @abstractmethod
    def _insert(self, key: tuple[str, str, str], obj: Obj) -> bool:
        """Store a new object; False if its key is taken."""

    @abstractmethod
    def _replace(self, key: tuple[str, str, str], obj: Obj) -> bool:
        """Replace a stored object; False if there is none."""

    @abstractmethod
    def _erase(self, key: tuple[str, str, str]) -> None:
        """Forget an object, its last-applied manifest and the owners it names."""

    @abstractmethod
    def _last_applied(self, key: tuple[str, str, str]) -> Obj:
        """The manifest last applied to an object (empty for objects controllers made)."""

    @abstractmethod
    def _set_applied(self, key: tuple[str, str, str], manifest: Obj) -> None: ...

    @abstractmethod
    def _index_owners(self, key: tuple[str, str, str], uids: builtins.list[str]) -> None:
        """The owner uids the object at ``key`` names are now ``uids`` (replacing what its
        earlier version named)."""

    @abstractmethod
    def _log_change(self, key: tuple[str, str, str]) -> None:
        """Note that the transaction wrote the object at ``key`` (in the generation its
        commit makes)."""


def _owner_uids(obj: Obj) -> builtins.list[str]:
    """The uids ``obj``'s ownerReferences name, sorted, each once."""
    uids = {str(ref.get("uid")) for ref in obj["metadata"].get("ownerReferences") or []}
    return sorted(uid for uid in uids if uid)


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


def canonical(obj: Obj) -> str:
    """The object as canonical JSON (keys sorted, no spaces): equal objects, equal text."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"))


def _uid(seq: int, key: str) -> str:
    """A UUID-shaped id that sorts in creation order and is the same on every run."""
    digest = hashlib.sha256(key.encode()).hexdigest()
    return f"{seq:08x}-{digest[:4]}-4{digest[4:7]}-8{digest[7:10]}-{digest[10:22]}"
