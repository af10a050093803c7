"""The store in memory (tests, trace replays): ``ObjectStore`` over dicts, for one process.

Each object is kept as ``marshal`` bytes, so a read hands out a copy of its own at a small part
of the cost of JSON and SQLite; otherwise it behaves as the SQLite store: the same uids,
resource versions, counters, clock, generations and change log, and a transaction that fails
leaves nothing behind (every write of it is undone). Values are kept as given: a mapping's keys
stay in the order written (the SQLite store hands them back sorted), a tuple stays a tuple
(JSON would make it a list); a value marshal cannot write (a date) is refused as JSON refuses
it, with TypeError.
"""

from __future__ import annotations

import builtins
import marshal
from collections.abc import Callable
from typing import Any

from pykai.embedded.store import ObjectStore, scoped_namespace
from pykai.model.kinds import CLUSTER_SCOPED
from pykai.model.meta import Obj

Key = tuple[str, str, str]  # kind, namespace, name
_MISSING = object()


class MemoryStore(ObjectStore):
    """Objects, manifests, owners, counters and the change log in dicts."""

    def __init__(self, *, seed: Callable[[ObjectStore], None] | None = None) -> None:
        """A new, empty store (``seed`` fills it)."""
        super().__init__()
        self._objects: dict[str, dict[tuple[str, str], bytes]] = {}  # kind -> (ns, name) -> body
        self._applied: dict[Key, bytes] = {}
        self._owned: dict[str, dict[Key, None]] = {}  # owner uid -> what names it
        self._owners: dict[Key, builtins.list[str]] = {}  # object -> the owner uids it names
        self._values: dict[str, str] = {}  # counters and the clock
        self._changes: dict[int, set[Key]] = {}  # generation -> objects written
        self._undo: builtins.list[tuple[dict[Any, Any], Any, Any]] = []
        self._dirty = False
        self._start_clock(seed)

    # ---- transactions ------------------------------------------------------------------------

    def changes_since(self, generation: int) -> builtins.list[Key] | None:
        if generation < self._log_horizon():
            return None
        changed: set[Key] = set()
        for written, keys in self._changes.items():
            if written > generation:
                changed |= keys
        return sorted(changed)

    def _begin(self, *, writes: bool) -> None:
        self._depth, self._writes = 1, writes
        self._undo.clear()
        self._dirty = False

    def changed(self) -> bool:
        return self._dirty

    def wrote(self, kinds: tuple[str, ...]) -> bool:
        return any(key[0] in kinds for key in self._changes.get(self.generation + 1, ()))

    def _commit(self) -> None:
        if self._dirty:
            self.generation += 1
            horizon = self._log_horizon()
            for written in [g for g in self._changes if g <= horizon]:
                del self._changes[written]
        self._undo.clear()

    def _abort(self) -> None:
        for table, key, before in reversed(self._undo):
            if before is _MISSING:
                table.pop(key, None)
            else:
                table[key] = before
        self._undo.clear()
        self._changes.pop(self.generation + 1, None)

    def _end_snapshot(self) -> None:
        """Nothing to end: one process, no other writer."""

    def _put(self, table: dict[Any, Any], key: Any, value: Any) -> None:
        """``table[key] = value``, undone if the transaction fails."""
        self._undo.append((table, key, table.get(key, _MISSING)))
        table[key] = value
        self._dirty = True

    def _pop(self, table: dict[Any, Any], key: Any) -> None:
        """``del table[key]`` if present, undone if the transaction fails."""
        if key in table:
            self._undo.append((table, key, table.pop(key)))
            self._dirty = True

    # ---- reading -----------------------------------------------------------------------------

    def get(self, kind: str, name: str, namespace: str = "") -> Obj | None:
        body = self._objects.get(kind, {}).get((scoped_namespace(kind, namespace), name))
        return None if body is None else _load(body)

    def list(self, kind: str, namespace: str | None = None) -> builtins.list[Obj]:
        rows = self._objects.get(kind, {})
        if namespace is None or kind in CLUSTER_SCOPED:
            keys = sorted(rows)
        else:
            wanted = namespace or "default"
            keys = sorted(k for k in rows if k[0] == wanted)
        return [_load(rows[k]) for k in keys]

    def namespace_contents(self, namespace: str) -> builtins.list[tuple[str, str]]:
        return sorted(
            (kind, name)
            for kind, rows in self._objects.items()
            for (inside, name) in rows
            if inside == namespace
        )

    def owned_by(self, uid: str) -> builtins.list[Obj]:
        found = []
        for kind, namespace, name in sorted(self._owned.get(uid, {})):
            body = self._objects.get(kind, {}).get((namespace, name))
            if body is not None:
                found.append(_load(body))
        return found

    # ---- writing -----------------------------------------------------------------------------

    def close(self) -> None:
        """Nothing to release."""

    def _insert(self, key: Key, obj: Obj) -> bool:
        kind, namespace, name = key
        rows = self._objects.setdefault(kind, {})
        if (namespace, name) in rows:
            return False
        self._put(rows, (namespace, name), _dump(obj))
        return True

    def _replace(self, key: Key, obj: Obj) -> bool:
        kind, namespace, name = key
        rows = self._objects.get(kind, {})
        if (namespace, name) not in rows:
            return False
        self._put(rows, (namespace, name), _dump(obj))
        return True

    def _erase(self, key: Key) -> None:
        kind, namespace, name = key
        self._pop(self._objects.get(kind, {}), (namespace, name))
        self._pop(self._applied, key)
        self._index_owners(key, [])

    def _last_applied(self, key: Key) -> Obj:
        body = self._applied.get(key)
        return {} if body is None else _load(body)

    def _set_applied(self, key: Key, manifest: Obj) -> None:
        self._put(self._applied, key, _dump(manifest))

    def _index_owners(self, key: Key, uids: builtins.list[str]) -> None:
        before = self._owners.get(key, [])
        if before == uids:
            return
        for uid in before:
            self._pop(self._owned.get(uid, {}), key)
        for uid in uids:
            self._put(self._owned.setdefault(uid, {}), key, None)
        if uids:
            self._put(self._owners, key, uids)
        else:
            self._pop(self._owners, key)

    def _log_change(self, key: Key) -> None:
        self._changes.setdefault(self.generation + 1, set()).add(key)
        self._dirty = True

    def _meta(self, key: str) -> str | None:
        return self._values.get(key)

    def _set_meta(self, key: str, value: str) -> None:
        self._put(self._values, key, value)


def _dump(obj: Obj) -> bytes:
    try:
        return marshal.dumps(obj)
    except ValueError as exc:
        raise TypeError(f"an object the store cannot keep ({exc})") from None


def _load(body: bytes) -> Obj:
    loaded: Obj = marshal.loads(body)
    return loaded
