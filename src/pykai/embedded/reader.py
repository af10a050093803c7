"""Reading a cluster without its engine: objects, events and the clock, straight from the store.

Read-only commands (get, describe) use this alone: nothing here builds the engine's state,
imports the engine or controllers, or writes the file. Queue positions are read as the last
round recorded them.
"""

from __future__ import annotations

import builtins
from pathlib import Path

from pykai.embedded.sqlite import Store
from pykai.embedded.store import ObjectStore
from pykai.model.kinds import CLUSTER_SCOPED
from pykai.model.meta import Obj
from pykai.model.positions import Board, decode

POSITIONS = "positions"
"""The store's key for where pending jobs stand, as the last round left them (a Board)."""


class ClusterReader:
    """Objects, events and the clock of a cluster's store."""

    def __init__(self, store: ObjectStore) -> None:
        self.store = store

    def get(self, kind: str, name: str, namespace: str = "") -> Obj | None:
        """One object, or None."""
        return self.store.get(kind, name, namespace)

    def list(self, kind: str, namespace: str | None = None) -> builtins.list[Obj]:
        """Objects of a kind, in one namespace or (None) all."""
        return self.store.list(kind, namespace)

    def events_for(self, kind: str, name: str, namespace: str = "") -> builtins.list[Obj]:
        """Events about one object, oldest first."""
        return events_for(self.store, kind, name, namespace)

    def now(self) -> float:
        """The virtual clock, in seconds since the epoch."""
        return self.store.now()

    def positions(self) -> Board | None:
        """Where the pending jobs stand, as the last round recorded it; None when nothing was
        recorded, or the objects changed since (by a write that ran no round)."""
        with self.store.snapshot():
            kept = self.store.derived(POSITIONS)
            current = kept is not None and kept[1] == self.store.generation
        return decode(kept[0]) if kept is not None and current else None

    def close(self) -> None:
        """Close the store."""
        self.store.close()


def open_readonly(path: str | Path) -> ClusterReader:
    """A reader of the existing cluster file at ``path`` (ClusterFileError if there is none
    or it is no cluster); the file is opened for reading only."""
    return ClusterReader(Store(path, readonly=True))


def events_for(store: ObjectStore, kind: str, name: str, namespace: str = "") -> list[Obj]:
    """Events about one object (by kind, namespace and name), first recorded first."""
    involved_namespace = "" if kind in CLUSTER_SCOPED else (namespace or "default")
    found = [
        event
        for event in store.list("Event", involved_namespace or "default")
        if event["involvedObject"]["kind"] == kind
        and event["involvedObject"]["name"] == name
        and event["involvedObject"]["namespace"] == involved_namespace
    ]
    return sorted(found, key=lambda e: str(e["metadata"]["uid"]))  # uids sort by creation
