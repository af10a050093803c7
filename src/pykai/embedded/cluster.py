"""The embedded cluster: pykai's default backend.

Objects live in a SQLite store; a ClusterState mirrors the kinds the engine reads. It is built
on first use (commands that only read never build it) and fed every write. Other processes may
write the same file: every write transaction first brings the state up to the store's
generation by replaying the objects the change log names (or, far behind, by loading it anew),
and checks its input against the stored objects of that moment. After each change the
controllers run in rounds until a round changes nothing: workload controllers, pod-grouper,
scheduler, binder, evictor, fake kubelet, status.
"""

from __future__ import annotations

import builtins
import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from pykai.controllers.events import WARNING
from pykai.controllers.faults import INVALID, Isolation
from pykai.controllers.round import COMPONENTS, Round
from pykai.controllers.validation import StoredCheck, check_queue_unused, validate_objects
from pykai.embedded import events
from pykai.embedded.host import ClusterHost
from pykai.embedded.store import Store, namespace_of
from pykai.engine.config import SchedulerConfig, config_from_mapping
from pykai.engine.decisions import CycleResult
from pykai.engine.scheduler import Scheduler
from pykai.engine.state import KINDS, ClusterState
from pykai.model.meta import Obj
from pykai.model.priorityclass import builtin_priority_classes
from pykai.model.problems import ObjectProblem
from pykai.model.queue import default_queues
from pykai.standins.workloads import APPS, KUBERAY

_LOAD_ORDER = ("PriorityClass", "Queue", "Node", "PodGroup", "Pod")
log = logging.getLogger("pykai.embedded")


class CycleRunner(Protocol):
    """What the cluster needs of a scheduler: one cycle on the state at a time."""

    def run_cycle(self, state: ClusterState, now: float) -> CycleResult:
        """Decide binds, evictions and statuses for one cycle."""
        ...


@dataclass(frozen=True, slots=True)
class ApplyOutcome:
    """What apply did to one object: created, configured or unchanged."""

    kind: str
    namespace: str
    name: str
    action: str


class EmbeddedCluster:
    """A Kubernetes-like cluster with KAI installed, in one SQLite file (or in memory)."""

    def __init__(
        self,
        store: Store,
        config: SchedulerConfig | None = None,
        scheduler: CycleRunner | None = None,
        *,
        statuses: bool = True,
    ) -> None:
        """Use ``store``. ``scheduler`` replaces the engine's Scheduler, for tests that want
        fixed decisions; ``statuses=False`` leaves PodGroup and queue statuses unwritten (trace
        replays, pykai/sim/)."""
        self.store = store
        self._config = config
        self._scheduler = scheduler
        self._isolations: dict[str, Isolation] = {}
        self.stored_check = StoredCheck()  # apply's rules, for objects that got in anyway
        self._round = Round(
            frozenset(COMPONENTS),
            workloads=(*KUBERAY, *APPS),
            check=self.stored_check,
            owner_check=self.stored_check,
            statuses=statuses,
        )
        self.writes = 0  # writes made through this object (a round that makes none settles)
        self.host = ClusterHost(self)
        self._state: ClusterState | None = None
        self._state_generation = 0

    @classmethod
    def open(
        cls,
        path: str | Path | None = None,
        *,
        config: SchedulerConfig | None = None,
        scheduler: CycleRunner | None = None,
        readonly: bool = False,
        statuses: bool = True,
    ) -> EmbeddedCluster:
        """Open a cluster at ``path`` (made, with KAI installed, if missing; None keeps it in
        memory); ``readonly`` opens an existing one for reading only; ``statuses`` as for
        the constructor."""
        return cls(Store(path, readonly=readonly, seed=_seed), config, scheduler, statuses=statuses)

    @property
    def state(self) -> ClusterState:
        """The engine's view of the store, brought up to date first."""
        with self.store.snapshot():
            return self._catch_up()

    # ---- what users do -----------------------------------------------------------------------

    def apply(
        self, objects: builtins.list[Obj], *, max_cycles: int = 100
    ) -> builtins.list[ApplyOutcome]:
        """Create or update objects in one transaction, then settle. Invalid input raises
        ValidationError listing every problem, and nothing is written."""
        with self._writing(check=lambda: validate_objects(objects, self.store.list)):
            self._ensure_namespaces(objects)
            outcomes = [self._apply_one(o) for o in objects]
        self.settle(max_cycles)
        return outcomes

    def delete(self, kind: str, name: str, namespace: str = "", *, max_cycles: int = 100) -> bool:
        """Delete an object and what it owns, then settle; False if it did not exist. A queue
        still used by child queues or PodGroups is not deleted (ValidationError)."""
        with self._writing(check=lambda: self._check_deletable(kind, name)):
            removed = self.remove(kind, name, namespace)
        if removed:
            self.settle(max_cycles)
        return removed

    def settle(self, max_cycles: int = 100) -> int:
        """Run rounds until one changes nothing (at most ``max_cycles``); the rounds run."""
        for rounds in range(1, max_cycles + 1):
            if not self._round_once():
                return rounds
        return max_cycles

    def schedule(self, cycles: int = 1) -> None:
        """Run exactly ``cycles`` rounds, each with one scheduling cycle."""
        for _ in range(cycles):
            self._round_once()

    def advance(self, seconds: float, *, max_cycles: int = 100) -> None:
        """Move the virtual clock forward, then settle."""
        with self._writing():
            self.store.advance(seconds)
        self.settle(max_cycles)

    def now(self) -> float:
        """The virtual clock, in seconds since the epoch."""
        return self.store.now()

    def get(self, kind: str, name: str, namespace: str = "") -> Obj | None:
        """One object, or None."""
        return self.store.get(kind, name, namespace)

    def list(self, kind: str, namespace: str | None = None) -> builtins.list[Obj]:
        """Objects of a kind, in one namespace or (None) all."""
        return self.store.list(kind, namespace)

    def events_for(self, kind: str, name: str, namespace: str = "") -> builtins.list[Obj]:
        """Events about one object, oldest first."""
        return events.events_for(self.store, kind, name, namespace)

    def close(self) -> None:
        """Close the store."""
        self.store.close()

    @property
    def config(self) -> SchedulerConfig:
        """The scheduler's configuration: given, else the stored SchedulingShard ``default``,
        else the defaults."""
        if self._config is not None:
            return self._config
        shard = self.store.get("SchedulingShard", "default")
        if shard is not None:
            with self.isolation("the scheduler").isolated(shard):
                return config_from_mapping(shard)
        return SchedulerConfig()  # none, or one that cannot be read (reported): the defaults

    # ---- writes, for controllers -------------------------------------------------------------

    def create(self, obj: Obj) -> Obj:
        """Store a new object and show it to the engine (AlreadyExists if its name is
        taken)."""
        with self._writing():
            stored = self.store.create(obj)
            self._observe(stored)
        self.writes += 1
        return stored

    def update(self, obj: Obj) -> Obj:
        """Replace an object and show it to the engine."""
        with self._writing():
            stored = self.store.update(obj)
            self._observe(stored)
        self.writes += 1
        return stored

    def remove(self, kind: str, name: str, namespace: str = "") -> bool:
        """Delete an object and, in cascade, everything it owns; the engine forgets them.
        False if it did not exist."""
        with self._writing():
            removed = self.store.delete(kind, name, namespace)
            for gone in removed:
                if gone["kind"] in KINDS:
                    self.state.remove(gone["kind"], namespace_of(gone), gone["metadata"]["name"])
        self.writes += bool(removed)
        return bool(removed)

    def isolation(self, component: str) -> Isolation:
        """Per-object fault isolation for one controller (controllers/faults.py)."""
        isolation = self._isolations.get(component)
        if isolation is None:
            isolation = Isolation(component, self._report)
            self._isolations[component] = isolation
        return isolation

    def _report(self, involved: Obj, problem: ObjectProblem) -> None:
        self.writes += events.record(
            self.store, involved, INVALID, problem.message, WARNING, once=True
        )

    # ---- internals ---------------------------------------------------------------------------

    def _round_once(self) -> bool:
        """One round of every controller, in one transaction; True if it wrote anything."""
        before = self.writes
        with self._writing():
            self._round.run(self.host, self._cycle)
        return self.writes != before

    def _cycle(self) -> CycleResult:
        """One scheduling cycle. A cycle that fails (a bug: objects cannot make it fail) is
        logged and decides nothing; the state is reloaded, since it may be half-changed."""
        scheduler = self._scheduler or Scheduler(self.config)
        try:
            return scheduler.run_cycle(self.state, self.now())
        except Exception:
            log.exception("scheduling cycle failed; nothing decided this round")
            self._state = self._load_state()
            return CycleResult()

    @contextmanager
    def _writing(self, check: Callable[[], None] = lambda: None) -> Iterator[None]:
        """A store transaction (or the one under way): ``check`` first, reading the store as
        it is now (if it raises, nothing was written); then the engine's state is brought up
        to date and the body runs. If the transaction rolls back, the state is built anew
        when next used."""
        with self.store.transaction():
            check()
            self._catch_up()
            self.store.on_rollback(self._forget_state)
            yield
        self._state_generation = self.store.generation

    def _forget_state(self) -> None:
        self._state = None

    def _catch_up(self) -> ClusterState:
        """The state, as of the generation the current transaction sees: what other
        transactions wrote since the state was last current is replayed from the change log;
        without a state, or too far behind for the log, it is loaded anew."""
        generation = self.store.generation
        if self._state is not None and self._state_generation == generation:
            return self._state
        changed = None if self._state is None else self.store.changes_since(self._state_generation)
        if self._state is None or changed is None:
            self._state = self._load_state()
        else:
            self._replay(self._state, changed)
        self._state_generation = generation
        return self._state

    def _load_state(self) -> ClusterState:
        state = ClusterState()
        for kind in _LOAD_ORDER:
            for obj in self.store.list(kind):
                state.upsert(obj)
        return state

    def _replay(self, state: ClusterState, changed: builtins.list[tuple[str, str, str]]) -> None:
        """Show the engine the objects now stored under the changed keys (kinds it reads, in
        load order); keys with no object any more are forgotten."""
        for kind in _LOAD_ORDER:
            for changed_kind, namespace, name in changed:
                if changed_kind != kind:
                    continue
                obj = self.store.get(kind, name, namespace)
                if obj is None:
                    state.remove(kind, namespace, name)
                else:
                    state.upsert(obj)

    def _check_deletable(self, kind: str, name: str) -> None:
        """A stored queue still used by child queues or PodGroups may not be deleted."""
        if kind == "Queue" and self.store.get("Queue", name) is not None:
            check_queue_unused(name, self.store.list("Queue"), self.store.list("PodGroup"))

    def _observe(self, obj: Obj) -> None:
        if obj.get("kind") in KINDS:
            self.state.upsert(obj)

    def _apply_one(self, manifest: Obj) -> ApplyOutcome:
        stored, action = self.store.apply(manifest)
        if action != "unchanged":
            self._observe(stored)
        return ApplyOutcome(
            stored["kind"], namespace_of(stored), stored["metadata"]["name"], action
        )

    def _ensure_namespaces(self, objects: builtins.list[Obj]) -> None:
        """Namespaces named by applied objects are created (as `kubectl create ns` would)."""
        for namespace in sorted({namespace_of(o) for o in objects} - {""}):
            if self.store.get("Namespace", namespace) is None:
                self.create(_namespace(namespace))


def _seed(store: Store) -> None:
    """A new cluster looks like one with KAI installed: its priority classes, the Helm
    chart's default queues, and namespace ``default``."""
    for obj in [*builtin_priority_classes(), *default_queues(), _namespace("default")]:
        store.create(obj)


def _namespace(name: str) -> Obj:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
