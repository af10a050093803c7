"""The dashboard of an embedded cluster file (``pykai dashboard``): every request brings the
engine state up to the store (the change log replayed, as a writer does), reads the ``Evict``
events and PodGroup reasons written since the last request, samples each queue's allocation
(on the wall clock: the cluster's own clock moves only when told to), and builds the page.

The file is opened for reading only: other commands keep writing it. SQLite connections
belong to the thread that made them, so one worker thread opens the file and builds every
page; HTTP threads wait for it."""

from __future__ import annotations

import json
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from pykai.dashboard.memory import Memory, from_event
from pykai.dashboard.model import allocated_gpus, build_page
from pykai.embedded.cluster import EmbeddedCluster
from pykai.engine.config import config_from_mapping
from pykai.engine.decisions import Reason
from pykai.engine.positions import recorded_reasons
from pykai.engine.settings import SchedulerConfig
from pykai.model.errors import ValidationError
from pykai.model.meta import Obj


class StorePages:
    """Pages of one cluster file, built on request, one at a time, in one thread."""

    def __init__(self, path: Path) -> None:
        """Open the cluster file at ``path`` for reading (errors as ``EmbeddedCluster.open``
        raises them)."""
        self.memory = Memory()
        self._reasons: dict[str, list[Reason]] = {}
        self._generation: int | None = None  # the store's generation last read
        self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="dashboard-store")
        try:
            self.cluster = self._worker.submit(EmbeddedCluster.open, path, readonly=True).result()
        except BaseException:
            self._worker.shutdown()
            raise

    def page(self) -> bytes:
        """The page model's JSON, as of now."""
        return self._worker.submit(self._json).result()

    def close(self) -> None:
        """Close the file and end the worker."""
        self._worker.submit(self.cluster.close).result()
        self._worker.shutdown()

    def _json(self) -> bytes:
        with self.cluster.store.snapshot():
            return json.dumps(self._build()).encode()

    def _build(self) -> dict[str, Any]:
        store = self.cluster.store
        state = self.cluster.state
        changed = None if self._generation is None else store.changes_since(self._generation)
        if changed is None:  # first page, or too far behind the log: read them all
            self._reasons = {}
            events, groups = store.list("Event"), store.list("PodGroup")
        else:
            events = _stored(store.get, changed, "Event")
            groups = _stored(store.get, changed, "PodGroup")
            for kind, namespace, name in changed:
                if kind == "PodGroup":
                    self._reasons.pop(f"{namespace}/{name}", None)  # deleted: forgotten
        self._generation = store.generation
        evictions = (from_event(event) for event in events)
        for eviction in sorted((e for e in evictions if e), key=lambda e: e.time):
            self.memory.evicted(eviction)
        for group in groups:
            meta = group["metadata"]
            self._reasons[f"{meta['namespace']}/{meta['name']}"] = recorded_reasons(group)
        now = store.now()
        self.memory.sample(time.time(), allocated_gpus(state))  # as the dashboard saw it
        return build_page(
            state,
            self._config(),
            now,
            reasons=self._reasons,
            evictions=self.memory.evictions(),
            history=self.memory.history(),
        )

    def _config(self) -> SchedulerConfig:
        """The stored SchedulingShard ``default``'s configuration; the defaults without one or
        with one that cannot be read (the scheduler reports that: this file is read-only)."""
        shard = self.cluster.store.get("SchedulingShard", "default")
        try:
            return config_from_mapping(shard) if shard is not None else SchedulerConfig()
        except ValidationError:
            return SchedulerConfig()


def _stored(get: Any, changed: list[tuple[str, str, str]], kind: str) -> list[Obj]:
    """The objects of ``kind`` among the changed keys that still exist."""
    found = (get(kind, name, namespace) for k, namespace, name in changed if k == kind)
    return [obj for obj in found if obj is not None]
