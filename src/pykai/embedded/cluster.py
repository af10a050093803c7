"""The embedded cluster: pykai's default backend.

Objects live in a SQLite store; a ClusterState mirrors the kinds the engine reads and is fed
every write, never rebuilt. After each change the controllers run in rounds until a round
changes nothing: pod-grouper, scheduler, binder and evictor, fake kubelet, status.
"""

from __future__ import annotations

import builtins
import copy
from dataclasses import dataclass
from pathlib import Path

from pykai.embedded.binder import bind, evict
from pykai.embedded.events import events_for
from pykai.embedded.grouper import group_pods
from pykai.embedded.kubelet import run_pods
from pykai.embedded.status import update_status
from pykai.embedded.store import CLUSTER_SCOPED, Store, namespace_of, strip_server_fields
from pykai.embedded.validation import validate_objects
from pykai.embedded.workloads import run_workloads
from pykai.engine.config import SchedulerConfig, config_from_mapping
from pykai.engine.scheduler import Scheduler
from pykai.engine.state import KINDS, ClusterState
from pykai.model import builders
from pykai.model import constants as c
from pykai.model.errors import FieldProblem, ValidationError
from pykai.model.meta import Obj
from pykai.model.priorityclass import builtin_priority_classes

_LOAD_ORDER = ("PriorityClass", "Queue", "Node", "PodGroup", "Pod")


@dataclass(frozen=True, slots=True)
class ApplyOutcome:
    """What apply did to one object: created, configured or unchanged."""

    kind: str
    namespace: str
    name: str
    action: str


def merge(base: Obj, patch: Obj) -> Obj:
    """``base`` with ``patch`` laid over it: maps merge key by key, anything else is replaced.
    Fields the server set (spec.nodeName, status, ...) survive re-applying a manifest."""
    merged = copy.deepcopy(base)
    for key, value in patch.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = merge(merged[key], value)
        else:
            merged[key] = copy.deepcopy(value)
    return merged


class EmbeddedCluster:
    """A Kubernetes-like cluster with KAI installed, in one SQLite file (or in memory)."""

    def __init__(self, store: Store, config: SchedulerConfig | None = None) -> None:
        self.store = store
        self._config = config
        if store.fresh:
            self._seed()
        self.state = ClusterState()
        for kind in _LOAD_ORDER:
            for obj in store.select(kind):
                self.state.upsert(obj)

    @classmethod
    def open(
        cls, path: str | Path | None = None, *, config: SchedulerConfig | None = None
    ) -> EmbeddedCluster:
        """Open (or create) a cluster at ``path``; None keeps it in memory."""
        return cls(Store(path), config)

    # ---- what users do -----------------------------------------------------------------------

    def apply(
        self, objects: builtins.list[Obj], *, max_cycles: int = 100
    ) -> builtins.list[ApplyOutcome]:
        """Create or update objects, then settle. Invalid input raises ValidationError and
        changes nothing."""
        objects = [self._normalise(o) for o in objects]
        names = {o["metadata"]["name"] for o in objects if o.get("kind") == "Queue"}
        stored = [q for q in self.store.select("Queue") if q["metadata"]["name"] not in names]
        validate_objects(objects, stored)
        with self.store.transaction():
            self._ensure_namespaces(objects)
            outcomes = [self._apply_one(o) for o in objects]
        self.settle(max_cycles)
        return outcomes

    def delete(self, kind: str, name: str, namespace: str = "", *, max_cycles: int = 100) -> bool:
        """Delete an object and what it owns, then settle; False if it did not exist."""
        obj = self.store.get(kind, name, namespace)
        if obj is None:
            return False
        if kind == "Queue":
            self._check_queue_unused(name)
        with self.store.transaction():
            self.remove(kind, name, namespace)
        self.settle(max_cycles)
        return True

    def settle(self, max_cycles: int = 100) -> int:
        """Run rounds until one changes nothing (at most ``max_cycles``); the rounds run."""
        for rounds in range(1, max_cycles + 1):
            if not self._round():
                return rounds
        return max_cycles

    def schedule(self, cycles: int = 1) -> None:
        """Run exactly ``cycles`` rounds."""
        for _ in range(cycles):
            self._round()

    def advance(self, seconds: float, *, max_cycles: int = 100) -> None:
        """Move the virtual clock forward, then settle."""
        self.store.advance(seconds)
        self.settle(max_cycles)

    def now(self) -> float:
        """The virtual clock."""
        return self.store.now()

    def get(self, kind: str, name: str, namespace: str = "") -> Obj | None:
        """One object, or None."""
        return self.store.get(kind, name, namespace)

    def list(self, kind: str, namespace: str | None = None) -> builtins.list[Obj]:
        """Objects of a kind, in one namespace or (None) all."""
        return self.store.select(kind, namespace)

    def events_for(self, kind: str, name: str, namespace: str = "") -> builtins.list[Obj]:
        """Events about one object, oldest first."""
        return events_for(self, kind, name, namespace)

    def close(self) -> None:
        """Close the store."""
        self.store.close()

    @property
    def config(self) -> SchedulerConfig:
        """The scheduler's configuration: given, else the stored SchedulingShard ``default``."""
        if self._config is not None:
            return self._config
        shard = self.store.get("SchedulingShard", "default")
        return config_from_mapping(shard) if shard else SchedulerConfig()

    # ---- writes, for controllers -------------------------------------------------------------

    def create(self, obj: Obj) -> Obj:
        """Store a new object and show it to the engine."""
        stored = self.store.create(obj)
        self._observe(stored)
        return stored

    def update(self, obj: Obj) -> Obj:
        """Replace an object and show it to the engine."""
        stored = self.store.update(obj)
        self._observe(stored)
        return stored

    def remove(self, kind: str, name: str, namespace: str = "") -> None:
        """Delete an object and, in cascade, everything it owns."""
        old = self.store.delete(kind, name, namespace)
        if old is None:
            return
        if kind in KINDS:
            self.state.remove(kind, namespace_of(old), name)
        uid = old["metadata"].get("uid")
        if uid:
            for child in self.store.owned_by(uid):
                self.remove(child["kind"], child["metadata"]["name"], namespace_of(child))

    def count_eviction(self, queue: str) -> None:
        """Add one to a queue's eviction total."""
        self.store.counter(f"evictions/{queue}")

    # ---- internals ---------------------------------------------------------------------------

    def _round(self) -> bool:
        with self.store.transaction():
            changed = run_workloads(self)
            changed |= group_pods(self)
            result = Scheduler(self.config).run_cycle(self.state, self.now())
            changed |= bind(self, result)
            changed |= evict(self, result)
            changed |= run_pods(self)
            changed |= update_status(self, result)
        return changed

    def _observe(self, obj: Obj) -> None:
        if obj.get("kind") in KINDS:
            self.state.upsert(obj)

    def _normalise(self, obj: Obj) -> Obj:
        obj = copy.deepcopy(obj)
        meta = obj.get("metadata")
        if isinstance(meta, dict) and obj.get("kind") not in CLUSTER_SCOPED:
            meta["namespace"] = meta.get("namespace") or "default"
        return obj

    def _apply_one(self, obj: Obj) -> ApplyOutcome:
        kind, name, namespace = obj["kind"], obj["metadata"]["name"], namespace_of(obj)
        existing = self.store.get(kind, name, namespace)
        if existing is None:
            self.create(obj)
            return ApplyOutcome(kind, namespace, name, "created")
        merged = merge(existing, {k: v for k, v in obj.items() if k != "metadata"})
        meta = merged["metadata"]
        new_meta = obj["metadata"]
        for field in ("labels", "annotations"):
            meta[field] = {**(meta.get(field) or {}), **(new_meta.get(field) or {})}
        if new_meta.get("ownerReferences"):
            meta["ownerReferences"] = new_meta["ownerReferences"]
        if strip_server_fields(merged) == strip_server_fields(existing) and merged.get(
            "status"
        ) == existing.get("status"):
            return ApplyOutcome(kind, namespace, name, "unchanged")
        meta["generation"] = int(meta.get("generation", 1)) + 1
        self.update(merged)
        return ApplyOutcome(kind, namespace, name, "configured")

    def _ensure_namespaces(self, objects: builtins.list[Obj]) -> None:
        """Namespaces named by applied objects are created (as `kubectl create ns` would)."""
        for namespace in sorted({namespace_of(o) for o in objects} - {""}):
            if self.store.get("Namespace", namespace) is None:
                self.create(
                    {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}
                )

    def _check_queue_unused(self, name: str) -> None:
        children = [
            q["metadata"]["name"]
            for q in self.store.select("Queue")
            if (q.get("spec") or {}).get("parentQueue") == name
        ]
        groups = [
            f"{g['metadata']['namespace']}/{g['metadata']['name']}"
            for g in self.store.select("PodGroup")
            if (g.get("spec") or {}).get("queue") == name
        ]
        if children or groups:
            used_by = ", ".join(
                [f"queue {q}" for q in children] + [f"podgroup {g}" for g in groups]
            )
            raise ValidationError(
                [
                    FieldProblem(
                        "Queue", name, "", f"is still used by {used_by}", "delete those first"
                    )
                ]
            )

    def _seed(self) -> None:
        """A fresh cluster looks like one with KAI installed."""
        with self.store.transaction():
            for obj in builtin_priority_classes():
                self.store.create(obj)
            zero_quota = (0.0, -1.0, 1.0)
            self.store.create(
                builders.queue(
                    c.DEFAULT_PARENT_QUEUE, gpu=zero_quota, cpu=zero_quota, memory=zero_quota
                )
            )
            self.store.create(
                builders.queue(
                    c.DEFAULT_QUEUE,
                    parent=c.DEFAULT_PARENT_QUEUE,
                    gpu=zero_quota,
                    cpu=zero_quota,
                    memory=zero_quota,
                )
            )
            self.store.create(
                {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}}
            )
