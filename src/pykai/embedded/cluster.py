"""The embedded cluster: pykai's default backend.

Objects live in a store (a SQLite file, or dicts in memory: embedded/memory.py); a ClusterState
mirrors the kinds the engine reads. It is built on first use (commands that only read never
build it) and fed every write. Other processes may write the same file: every write
transaction first brings the state up to the store's generation by replaying the objects the
change log names (or, far behind, by loading it anew), and checks its input against the stored
objects of that moment. After each change the controllers run in rounds until a round changes
nothing: workload controllers, pod-grouper, scheduler, binder, evictor, fake kubelet, status.
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
from pykai.controllers.kueue.admission import run_kueue
from pykai.controllers.kueue.jobs import KUEUE_JOBS
from pykai.controllers.validation import StoredCheck, check_queue_unused, validate_objects
from pykai.embedded import events
from pykai.embedded.host import ClusterHost
from pykai.embedded.memory import MemoryStore
from pykai.embedded.reader import POSITIONS, ClusterReader
from pykai.embedded.sqlite import Store
from pykai.embedded.store import ObjectStore, namespace_of
from pykai.engine.config import config_from_mapping
from pykai.engine.decisions import CycleResult
from pykai.engine.memory import settle
from pykai.engine.positions import Reasons, board, reasons_of
from pykai.engine.scheduler import Scheduler
from pykai.engine.settings import SchedulerConfig
from pykai.engine.state import STATE_KINDS, ClusterState
from pykai.model.errors import FieldProblem, PykaiError, ValidationError
from pykai.model.kueue.conversion import as_stored
from pykai.model.kueue.jobs import is_managed, suspended_on_create
from pykai.model.meta import Obj
from pykai.model.positions import encode
from pykai.model.priorityclass import builtin_priority_classes
from pykai.model.problems import ObjectProblem
from pykai.model.queue import default_queues
from pykai.round.steps import COMPONENTS, Round
from pykai.standins.provisioning import answer_provisioning_requests
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


def _partition_problem(name: str, field: str) -> FieldProblem:
    return FieldProblem(
        "SchedulingShard",
        name,
        field,
        "is a partition of the cluster: the embedded cluster runs one scheduler over every node",
        "remove it here; on a real cluster, run one `pykai run --partition-label-value` per "
        "shard (docs/shards.md)",
    )


def one_scheduler(objects: builtins.list[Obj]) -> None:
    """Refuse SchedulingShards that name a partition: the embedded cluster has one scheduler,
    which sees every node, and would otherwise ignore it."""
    problems = [
        _partition_problem(str(o["metadata"].get("name", "")), "spec.partitionLabelValue")
        for o in objects
        if isinstance(o, dict)
        and o.get("kind") == "SchedulingShard"
        and isinstance(o.get("metadata"), dict)
        and isinstance(o.get("spec"), dict)
        and o["spec"].get("partitionLabelValue")
    ]
    if problems:
        raise ValidationError(problems)


class EmbeddedCluster(ClusterReader):
    """A Kubernetes-like cluster with KAI installed, in one SQLite file (or in memory): a
    reader that also writes, and runs the controllers and the scheduler."""

    def __init__(
        self,
        store: ObjectStore,
        config: SchedulerConfig | None = None,
        scheduler: CycleRunner | None = None,
        *,
        statuses: bool = True,
        scheduled_events: bool = True,
    ) -> None:
        """Use ``store``. ``scheduler`` replaces the engine's Scheduler, for tests that want
        fixed decisions; ``statuses=False`` leaves PodGroup and queue statuses unwritten and
        ``scheduled_events=False`` binds without a Scheduled event (trace replays,
        pykai/sim/)."""
        super().__init__(store)
        if config is not None and config.partition_label_value:
            raise ValidationError([_partition_problem("scheduler config", "partitionLabelValue")])
        self._config = config
        self._scheduler = scheduler
        self._isolations: dict[str, Isolation] = {}
        self.stored_check = StoredCheck()  # apply's rules, for objects that got in anyway
        self._round = Round(
            frozenset(COMPONENTS),
            workloads=(*KUEUE_JOBS, *KUBERAY, *APPS),
            check=self.stored_check,
            owner_check=self.stored_check,
            admission=(lambda host: run_kueue(host, self.config), answer_provisioning_requests),
            statuses=statuses,
            scheduled_events=scheduled_events,
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
        scheduled_events: bool = True,
    ) -> EmbeddedCluster:
        """Open a cluster at ``path`` (made, with KAI installed, if missing; None keeps it in
        memory); ``readonly`` opens an existing one for reading only; ``statuses`` and
        ``scheduled_events`` as for the constructor."""
        store = (
            MemoryStore(seed=_seed) if path is None else Store(path, readonly=readonly, seed=_seed)
        )
        return cls(store, config, scheduler, statuses=statuses, scheduled_events=scheduled_events)

    @property
    def state(self) -> ClusterState:
        """The engine's view of the store, brought up to date first."""
        with self.store.snapshot():
            return self._catch_up()

    # ---- what users do -----------------------------------------------------------------------

    def apply(
        self,
        objects: builtins.list[Obj],
        *,
        max_cycles: int = 100,
        create_namespaces: bool = True,
    ) -> builtins.list[ApplyOutcome]:
        """Create or update objects in one transaction, then settle. Invalid input raises
        ValidationError listing every problem, and nothing is written. Namespaces the objects
        name are made if missing (a convenience for tests and scenarios); without
        ``create_namespaces`` a missing one is refused (NamespaceNotFound), as by an API
        server, unless the objects include it."""

        def check() -> None:
            validate_objects(objects, self.store.list)
            one_scheduler(objects)
            if not create_namespaces:
                self._check_namespaces(objects)

        with self._writing(check=check):
            if create_namespaces:
                self._ensure_namespaces(objects)
            outcomes = [self._apply_one(o) for o in objects]
        self.settle(max_cycles)
        return outcomes

    def delete(self, kind: str, name: str, namespace: str = "", *, max_cycles: int = 100) -> bool:
        """Delete an object and what it owns (a namespace: everything in it), then settle;
        False if it did not exist. A queue still used by child queues or PodGroups is not
        deleted (ValidationError), nor are the namespaces Kubernetes keeps (Forbidden)."""
        with self._writing(check=lambda: self._check_deletable(kind, name)):
            removed = self.remove(kind, name, namespace)
            if removed and kind == "Namespace":
                for inside, inside_name in self.store.namespace_contents(name):
                    self.remove(inside, inside_name, name)
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
                if gone["kind"] in STATE_KINDS:
                    state = self._catch_up()  # current: in the transaction _writing began
                    state.remove(gone["kind"], namespace_of(gone), gone["metadata"]["name"])
        self.writes += bool(removed)
        return bool(removed)

    @contextmanager
    def batch(self) -> Iterator[None]:
        """Many writes (``create``, ``update``, ``remove``) in one transaction, each shown to
        the engine as it is made; the engine's state is current with the store after it."""
        with self._writing():
            yield

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

    def record_positions(self, reasons: Reasons | None = None) -> None:
        """Keep where the pending jobs stand in the store, for the reading commands
        (``ClusterReader.positions``), unless what is kept is current; ``reasons``: why each
        waited (None: as their PodGroups record it). Every round does this, after its other
        writes; positions are status, so not with ``statuses=False`` (trace replays). They are
        worked out again only when this transaction wrote objects the engine reads (the
        reasons are written into PodGroups) or the kept ones are behind (the clock moved,
        another program wrote)."""
        with self._writing():
            if self.store.derived_at(POSITIONS) == self.store.generation and not self.store.wrote(
                STATE_KINDS
            ):
                self.store.carry(POSITIONS)  # what the engine reads is as they were worked out
                return
            if reasons is None:
                reasons = reasons_of(self.store.list("PodGroup"))
            self.store.derive(POSITIONS, encode(board(self.state, self.now(), reasons)))

    # ---- internals ---------------------------------------------------------------------------

    def _round_once(self) -> bool:
        """One round of every controller, in one transaction; True if it wrote anything."""
        before = self.writes
        with self._writing():
            result = self._round.run(self.host, self._cycle)
            if self._round.statuses:
                self.record_positions(result.unschedulable)
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
        settle(state)  # the process's garbage-collection policy (engine/memory.py)
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
        """A stored queue still used by child queues or PodGroups may not be deleted, nor
        may the namespaces Kubernetes keeps."""
        if kind == "Queue" and self.store.get("Queue", name) is not None:
            check_queue_unused(name, self.store.list("Queue"), self.store.list("PodGroup"))
        if kind == "Namespace" and name in KEPT_NAMESPACES:
            raise Forbidden(
                f'Error from server (Forbidden): namespaces "{name}" is forbidden: '
                "this namespace may not be deleted"
            )

    def _observe(self, obj: Obj) -> None:
        """Show a written object to the engine (called inside ``_writing``)."""
        if obj.get("kind") in STATE_KINDS:
            self._catch_up().upsert(obj)

    def _apply_one(self, manifest: Obj) -> ApplyOutcome:
        meta = manifest["metadata"]
        if (
            is_managed(manifest)
            and self.store.get(manifest["kind"], meta["name"], namespace_of(manifest)) is None
        ):
            manifest = suspended_on_create(manifest)  # Kueue's defaulting webhook, on create
        stored, action = self.store.apply(as_stored(manifest))  # Kueue's kinds kept as v1beta2
        if action != "unchanged":
            self._observe(stored)
        return ApplyOutcome(
            stored["kind"], namespace_of(stored), stored["metadata"]["name"], action
        )

    def _check_namespaces(self, objects: builtins.list[Obj]) -> None:
        """Every namespace the objects name exists, or is among them."""
        given = {o["metadata"]["name"] for o in objects if o.get("kind") == "Namespace"}
        named = {namespace_of(o) for o in objects} - {""} - given
        missing = sorted(n for n in named if self.store.get("Namespace", n) is None)
        if missing:
            raise NamespaceNotFound(missing)

    def _ensure_namespaces(self, objects: builtins.list[Obj]) -> None:
        """Namespaces named by applied objects are created (as `kubectl create ns` would)."""
        for name in sorted({namespace_of(o) for o in objects} - {""}):
            if self.store.get("Namespace", name) is None:
                self.create(new_namespace(name))


class NamespaceNotFound(PykaiError, ValueError):
    """Objects name namespaces that do not exist; one kubectl-style line for each."""

    def __init__(self, names: builtins.list[str]) -> None:
        self.names = names
        super().__init__(
            "\n".join(f'Error from server (NotFound): namespaces "{n}" not found' for n in names)
        )


class Forbidden(PykaiError, ValueError):
    """A delete Kubernetes refuses; the message is kubectl's line."""


NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease", "kai-scheduler")
"""The namespaces of a new cluster: those of a new Kubernetes cluster, and KAI's own."""
KEPT_NAMESPACES = frozenset({"default", "kube-system", "kube-public"})
"""The namespaces Kubernetes refuses to delete."""


def _seed(store: ObjectStore) -> None:
    """A new cluster looks like one with KAI installed: its priority classes, the Helm
    chart's default queues, and the namespaces of NAMESPACES."""
    for obj in [*builtin_priority_classes(), *default_queues(), *map(new_namespace, NAMESPACES)]:
        store.create(obj)


def new_namespace(name: str) -> Obj:
    """A Namespace object."""
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
