"""The embedded cluster as the controllers' Host (controllers/host.py): reads from its store,
writes into it inside the round's transaction, shows every write to the engine at once, and
runs a controller's work object by object.

The host knows its cluster only as a ``HostedCluster``: it imports nothing of
embedded/cluster.py, which makes one host for itself.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Iterable
from functools import partial
from typing import Protocol, Unpack

from pykai.controllers.events import Recording
from pykai.controllers.faults import Isolation
from pykai.controllers.host import T, concerned
from pykai.controllers.outcome import BindFailed
from pykai.embedded import events
from pykai.embedded.binding import bound_pod
from pykai.embedded.store import ObjectStore, namespace_of
from pykai.engine.decisions import Bind
from pykai.engine.state import ClusterState
from pykai.model.meta import Obj, format_time, merge_patch
from pykai.model.pod import grace_period


class HostedCluster(Protocol):
    """What a ClusterHost reads and writes through (the EmbeddedCluster of
    embedded/cluster.py). Each write happens in the cluster's transaction (the one under way,
    or one of its own) and is shown to the engine's state before it returns."""

    store: ObjectStore
    """The objects; the host reads them here and writes events straight into it."""
    writes: int
    """Writes made through the cluster so far; the host adds the events it writes (a round
    that writes nothing settles)."""

    @property
    def state(self) -> ClusterState:
        """The engine's state, current with the store."""
        ...

    def now(self) -> float:
        """The virtual clock."""
        ...

    def create(self, obj: Obj) -> Obj:
        """Store a new object (AlreadyExists if its name is taken)."""
        ...

    def update(self, obj: Obj) -> Obj:
        """Replace an object."""
        ...

    def remove(self, kind: str, name: str, namespace: str = "") -> bool:
        """Delete an object and what it owns; False if it did not exist."""
        ...

    def isolation(self, component: str) -> Isolation:
        """Per-object fault isolation for one controller (controllers/faults.py)."""
        ...


class ClusterHost:
    """An embedded cluster, as a Host."""

    def __init__(self, cluster: HostedCluster) -> None:
        self.cluster = cluster

    @property
    def state(self) -> ClusterState:
        """The engine's state, current with the store."""
        return self.cluster.state

    def now(self) -> float:
        """The virtual clock."""
        return self.cluster.now()

    def get(self, kind: str, name: str, namespace: str = "") -> Obj | None:
        """One stored object, or None."""
        return self.cluster.store.get(kind, name, namespace)

    def list(self, kind: str) -> list[Obj]:
        """Every stored object of a kind."""
        return self.cluster.store.list(kind)

    def owned(self, owner: Obj, kind: str) -> builtins.list[Obj]:
        """Objects of ``kind`` owned by ``owner``."""
        uid = owner["metadata"]["uid"]
        return [o for o in self.cluster.store.owned_by(uid) if o["kind"] == kind]

    def create(self, obj: Obj) -> Obj:
        """Store a new object (AlreadyExists if its name is taken)."""
        return self.cluster.create(obj)

    def patch(self, obj: Obj, patch: Obj, *, status: bool = False, later: bool = False) -> None:
        """A JSON merge patch of the stored object, made at once (the store keeps no
        subresources, so a status patch is a patch like any other)."""
        current = self.get(str(obj["kind"]), obj["metadata"]["name"], namespace_of(obj))
        if current is None:
            return
        merged = merge_patch(current, patch)
        if merged != current:
            self.cluster.update(merged)

    def delete(self, obj: Obj, *, grace: float | None = None, later: bool = False) -> None:
        """Delete an object and what it owns. A pod first terminates: it is marked deleted as
        of the end of its grace period (its terminationGracePeriodSeconds unless ``grace``
        says otherwise), and the kubelet stand-in removes it once the clock is past that."""
        kind, name, namespace = str(obj["kind"]), obj["metadata"]["name"], namespace_of(obj)
        seconds = grace_period(obj) if grace is None else grace
        if kind != "Pod" or seconds <= 0:
            self.cluster.remove(kind, name, namespace)
            return
        current = self.get(kind, name, namespace)
        if current is not None and not current["metadata"].get("deletionTimestamp"):
            ending = {"deletionTimestamp": format_time(self.now() + seconds)}
            ending["deletionGracePeriodSeconds"] = int(seconds)  # type: ignore[assignment]
            self.cluster.update(merge_patch(current, {"metadata": ending}))

    def bind(self, decision: Bind) -> bool:
        """spec.nodeName, and for shared GPUs KAI's GPU-group labels and GPU env: at once."""
        pod = self.get("Pod", decision.name, decision.namespace)
        if pod is None:
            raise BindFailed("the pod is gone")
        self.cluster.update(bound_pod(pod, decision))
        return True

    def bind_answers(self) -> builtins.list[tuple[Bind, str]]:
        """None: every bind here is answered at once."""
        return []

    def hold(self, decision: Bind) -> float:
        """Binds here fail only for pods that changed meanwhile: no backoff."""
        return 0.0

    def record(
        self, involved: Obj, reason: str, message: str, kind: str, **how: Unpack[Recording]
    ) -> None:
        """An event in the store."""
        self.cluster.writes += events.record(
            self.cluster.store, involved, reason, message, kind, **how
        )

    def serial(self, scope: str) -> int:
        """The store's counter for ``scope``."""
        return self.cluster.store.counter(scope)

    def each(self, component: str, items: Iterable[T], work: Callable[[T], object]) -> None:
        """``work`` on each item in turn, isolated (controllers/faults.py)."""
        isolation = self.cluster.isolation(component)
        for item in items:
            isolation.run(concerned(item), partial(work, item))
