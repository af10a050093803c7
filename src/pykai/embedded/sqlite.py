"""The store in a SQLite file (WAL) that many processes may use at once: ``ObjectStore``
(embedded/store.py) over tables.

Writes happen in ``BEGIN IMMEDIATE`` transactions (one writer at a time; others wait up to
``BUSY_TIMEOUT``); the generation and the change log are tables of the file, so a process sees
what the others committed. A new file is built aside and linked into place whole; an existing
file is opened only if it is a pykai cluster, read-only when asked (never created, migrated or
seeded then). ``explain`` turns a SQLite error on the file into one line saying what to do.
"""

from __future__ import annotations

import builtins
import json
import os
import sqlite3
import uuid
from collections.abc import Callable
from contextlib import suppress
from pathlib import Path

from pykai.embedded.store import CLOCK, ObjectStore, canonical, scoped_namespace
from pykai.model.errors import PykaiError
from pykai.model.kinds import CLUSTER_SCOPED
from pykai.model.meta import Obj

_CHANGES = """CREATE TABLE IF NOT EXISTS changes (
    generation INTEGER NOT NULL, kind TEXT NOT NULL, namespace TEXT NOT NULL, name TEXT NOT NULL,
    PRIMARY KEY (generation, kind, namespace, name)
)"""
_SCHEMA = (
    """CREATE TABLE objects (
    kind TEXT NOT NULL, namespace TEXT NOT NULL, name TEXT NOT NULL, body TEXT NOT NULL,
    PRIMARY KEY (kind, namespace, name)
)""",
    """CREATE TABLE applied (
    kind TEXT NOT NULL, namespace TEXT NOT NULL, name TEXT NOT NULL, body TEXT NOT NULL,
    PRIMARY KEY (kind, namespace, name)
)""",
    """CREATE TABLE owners (
    owner_uid TEXT NOT NULL, kind TEXT NOT NULL, namespace TEXT NOT NULL, name TEXT NOT NULL,
    PRIMARY KEY (owner_uid, kind, namespace, name)
)""",
    "CREATE INDEX owners_by_object ON owners (kind, namespace, name)",
    "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    _CHANGES,
)
_GENERATION = "generation"
BUSY_TIMEOUT = 300.0
"""Seconds a command waits for another one's write transaction before giving up."""
_RECOVERY = "move it aside (pykai then makes a new cluster there) or name another with --cluster"


class ClusterFileError(PykaiError, ValueError):
    """A cluster file that cannot be used; the message names it and says what to do."""


class Store(ObjectStore):
    """A store in a SQLite file that many processes may use at once."""

    def __init__(
        self,
        path: str | Path,
        *,
        readonly: bool = False,
        seed: Callable[[ObjectStore], None] | None = None,
    ) -> None:
        """Open the store at ``path``. A missing file is made, ``seed`` filling it before any
        other process can see it; ``readonly`` opens an existing file for reading only. A
        file that is not a usable cluster raises ClusterFileError."""
        super().__init__(readonly=readonly)
        self.path = Path(path)
        self._changes_before = 0
        if not readonly and not self.path.exists():
            self._create(self.path, seed)
        self._db = _open_cluster_file(self.path, readonly)
        self.generation = int(self._meta(_GENERATION) or 0)

    @classmethod
    def _create(cls, path: Path, seed: Callable[[ObjectStore], None] | None) -> None:
        """Make a cluster file at ``path`` whole: built beside it, then linked into place, so
        no process sees a half-made file. If another process made one first, that one stays."""
        path.parent.mkdir(parents=True, exist_ok=True)
        draft = path.with_name(f".{path.name}.{uuid.uuid4().hex}.new")
        try:
            builder = cls.__new__(cls)
            ObjectStore.__init__(builder)
            builder.path, builder._changes_before = draft, 0
            builder._db = _connect(str(draft))
            try:
                for statement in _SCHEMA:
                    builder._db.execute(statement)
                builder._start_clock(seed)
                builder._db.execute("PRAGMA journal_mode=WAL")
            finally:
                builder.close()
            with suppress(FileExistsError):
                os.link(draft, path)
        finally:
            draft.unlink(missing_ok=True)

    # ---- transactions ------------------------------------------------------------------------

    def changes_since(self, generation: int) -> builtins.list[tuple[str, str, str]] | None:
        """(kind, namespace, name) of the objects written after ``generation`` up to the one
        seen now (call inside a transaction or snapshot), or None when the log no longer
        reaches back that far."""
        if generation < self._log_horizon():
            return None
        rows = self._db.execute(
            "SELECT DISTINCT kind, namespace, name FROM changes WHERE generation > ? "
            "ORDER BY kind, namespace, name",
            (generation,),
        )
        return [(str(kind), str(namespace), str(name)) for kind, namespace, name in rows]

    def _begin(self, *, writes: bool) -> None:
        """Start the outermost transaction and read the generation it sees."""
        statement = "BEGIN IMMEDIATE" if writes else "BEGIN"
        try:
            self._db.execute(statement)
            self.generation = int(self._meta(_GENERATION) or 0)
        except sqlite3.Error as exc:
            if self._db.in_transaction:
                self._db.execute("ROLLBACK")
            raise explain(self.path, exc) from None
        self._depth, self._writes = 1, writes
        self._changes_before = self._db.total_changes

    def changed(self) -> bool:
        return self._db.total_changes != self._changes_before

    def wrote(self, kinds: tuple[str, ...]) -> bool:
        marks = ", ".join("?" * len(kinds))
        row = self._db.execute(
            f"SELECT 1 FROM changes WHERE generation = ? AND kind IN ({marks}) LIMIT 1",
            (self.generation + 1, *kinds),
        ).fetchone()
        return row is not None

    def _commit(self) -> None:
        changed = self.changed()
        if changed:
            self._set_meta(_GENERATION, str(self.generation + 1))
            self._db.execute(  # the log's horizon once this commit's generation counts
                "DELETE FROM changes WHERE generation <= ?", (self._log_horizon() + 1,)
            )
        self._db.execute("COMMIT")
        self.generation += 1 if changed else 0

    def _abort(self) -> None:
        if self._db.in_transaction:
            self._db.execute("ROLLBACK")

    def _end_snapshot(self) -> None:
        if self._db.in_transaction:
            self._db.execute("COMMIT")

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

    def namespace_contents(self, namespace: str) -> builtins.list[tuple[str, str]]:
        """(kind, name) of every object in ``namespace``, by kind and name."""
        rows = self._db.execute(
            "SELECT kind, name FROM objects WHERE namespace=? ORDER BY kind, name", (namespace,)
        )
        return [(str(kind), str(name)) for kind, name in rows]

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

    def close(self) -> None:
        """Close the database."""
        self._db.close()

    def _insert(self, key: tuple[str, str, str], obj: Obj) -> bool:
        try:
            self._db.execute(
                "INSERT INTO objects (kind, namespace, name, body) VALUES (?, ?, ?, ?)",
                (*key, canonical(obj)),
            )
        except sqlite3.IntegrityError:
            return False
        return True

    def _replace(self, key: tuple[str, str, str], obj: Obj) -> bool:
        written: int = self._db.execute(
            "UPDATE objects SET body=? WHERE kind=? AND namespace=? AND name=?",
            (canonical(obj), *key),
        ).rowcount
        return written > 0

    def _erase(self, key: tuple[str, str, str]) -> None:
        for table in ("objects", "applied", "owners"):
            self._db.execute(f"DELETE FROM {table} WHERE kind=? AND namespace=? AND name=?", key)

    def _last_applied(self, key: tuple[str, str, str]) -> Obj:
        row = self._db.execute(
            "SELECT body FROM applied WHERE kind=? AND namespace=? AND name=?", key
        ).fetchone()
        return json.loads(row[0]) if row else {}

    def _set_applied(self, key: tuple[str, str, str], manifest: Obj) -> None:
        self._db.execute(
            "INSERT OR REPLACE INTO applied (body, kind, namespace, name) VALUES (?, ?, ?, ?)",
            (canonical(manifest), *key),
        )

    def _index_owners(self, key: tuple[str, str, str], uids: builtins.list[str]) -> None:
        self._db.execute("DELETE FROM owners WHERE kind=? AND namespace=? AND name=?", key)
        self._db.executemany(
            "INSERT INTO owners (owner_uid, kind, namespace, name) VALUES (?, ?, ?, ?)",
            [(uid, *key) for uid in uids],
        )

    def _log_change(self, key: tuple[str, str, str]) -> None:
        self._db.execute(
            "INSERT OR IGNORE INTO changes (generation, kind, namespace, name) VALUES (?, ?, ?, ?)",
            (self.generation + 1, *key),
        )

    def _meta(self, key: str) -> str | None:
        row = self._db.execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone()
        return str(row[0]) if row else None

    def _set_meta(self, key: str, value: str) -> None:
        self._db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (key, value))


def explain(path: Path | None, exc: sqlite3.Error) -> ClusterFileError:
    """One line for a SQLite error on the cluster file: busy (other commands held it for
    longer than BUSY_TIMEOUT), damaged, or another problem, with what to do."""
    if _busy(exc):
        return ClusterFileError(
            f'the cluster file "{path}" stayed busy with other pykai commands for '
            f"{BUSY_TIMEOUT:g}s; try again when they are done"
        )
    if isinstance(exc, sqlite3.OperationalError):
        return ClusterFileError(f'cannot use the cluster file "{path}": {exc}')
    return ClusterFileError(f'the cluster file "{path}" is damaged ({exc}): {_RECOVERY}')


def _busy(exc: sqlite3.Error) -> bool:
    code = getattr(exc, "sqlite_errorcode", 0) & 0xFF
    return code in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)


def _connect(target: str, *, uri: bool = False) -> sqlite3.Connection:
    return sqlite3.connect(target, uri=uri, isolation_level=None, timeout=BUSY_TIMEOUT)


def _open_cluster_file(path: Path, readonly: bool) -> sqlite3.Connection:
    """A connection to an existing pykai cluster file; anything else raises
    ClusterFileError (nothing is created or replaced)."""
    if not path.exists():
        raise ClusterFileError(
            f'no cluster at "{path}": make one with pykai apply -f FILE (such as '
            "examples/nodes.yaml) or pykai create namespace NAME, or name another with --cluster"
        )
    if path.stat().st_size == 0:
        raise _not_a_cluster(path, "an empty file")
    mode = "ro" if readonly else "rw"
    db = _connect(f"{path.resolve().as_uri()}?mode={mode}", uri=True)
    try:
        clock = db.execute("SELECT value FROM meta WHERE key=?", (CLOCK,)).fetchone()
        if clock is not None and not readonly:
            db.execute("PRAGMA synchronous=NORMAL")
            db.execute(_CHANGES)  # files made before the change log get one
    except sqlite3.DatabaseError as exc:
        db.close()
        raise explain(path, exc) if _busy(exc) else _not_a_cluster(path, str(exc)) from None
    if clock is None:
        db.close()
        raise _not_a_cluster(path, "no clock")
    return db


def _not_a_cluster(path: Path, why: str) -> ClusterFileError:
    return ClusterFileError(
        f'the cluster file "{path}" is not a pykai cluster ({why}): {_RECOVERY}'
    )
