"""What a controller may do to a cluster, whichever backend holds it.

The controllers (pod-grouper, the scheduler's outcome, status, the stand-ins for a kubelet,
KubeRay and kube-controller-manager) are written once against ``Host``; three backends
implement it: the embedded cluster over SQLite, the same over a store in memory (tests, the
simulator), and a real API server (``pykai run``: an informer cache, writes over HTTP).

A host reads from its own view of the objects (a store, or an informer cache), feeds every
write it makes back into that view and into the engine's state, and runs a controller's work on
many objects with ``each``: object by object, each isolated (a failure is reported on that
object and the others go on), in parallel where the backend can.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Iterable
from typing import Any, Protocol, TypeVar, Unpack

from pykai.controllers.events import Recording
from pykai.engine.decisions import Bind
from pykai.engine.state import ClusterState
from pykai.model.meta import Obj

T = TypeVar("T")


class Host(Protocol):
    """A cluster as the controllers see it."""

    @property
    def state(self) -> ClusterState:
        """The engine's view of the cluster, current with every write the host made."""

    def now(self) -> float:
        """The cluster's clock (virtual on the embedded cluster), seconds since the epoch."""

    def get(self, kind: str, name: str, namespace: str = "") -> Obj | None:
        """One object, or None."""

    def list(self, kind: str) -> builtins.list[Obj]:
        """Every object of a kind."""

    def owned(self, owner: Obj, kind: str) -> builtins.list[Obj]:
        """Objects of ``kind`` whose controlling owner is ``owner``."""

    def create(self, obj: Obj) -> Obj:
        """Create an object; return it as stored (AlreadyExists if its name is taken)."""

    def patch(self, obj: Obj, patch: Obj, *, status: bool = False, later: bool = False) -> None:
        """A JSON merge patch of ``obj`` (of its status subresource with ``status``). A status
        patch, or one asked ``later`` (nothing in this round reads it back), may complete
        later: a real cluster writes them in the background, one object's in order. What it
        wrote reaches ``get``/``list`` and the engine once it has."""

    def delete(self, obj: Obj, *, grace: float | None = None, later: bool = False) -> None:
        """Delete an object (what it owns goes with it); a pod gets ``grace`` seconds to
        terminate (None: its own terminationGracePeriodSeconds). ``later``: the deletion may
        complete after this returns (nothing in this round reads it back; a failed one
        leaves the object for the next round to see)."""

    def bind(self, decision: Bind) -> bool:
        """Bind a pod as a cycle decided; raises BindFailed if the backend could not. False:
        the bind is still under way (a real cluster's, started while the cycle decided), and
        its answer comes from ``bind_answers`` in a later round; the engine keeps assuming
        it meanwhile."""

    def bind_answers(self) -> builtins.list[tuple[Bind, str]]:
        """The answers (an error, or "") to binds that ``bind`` left under way, come since;
        each is given once."""

    def hold(self, decision: Bind) -> float:
        """A pod whose bind failed waits this many seconds before it is tried again (its gang
        with it); 0 where a bind cannot fail for a reason that time mends."""

    def record(
        self, involved: Obj, reason: str, message: str, kind: str, **how: Unpack[Recording]
    ) -> None:
        """An event about ``involved``: an occurrence (a repeat of the same one counts up), or
        with ``once`` a standing fact, said once per version of the object (kept across
        restarts: the event's name says which version); with ``facts``, what it also says as
        fields (without: only the text)."""

    def serial(self, scope: str) -> int:
        """A number not handed out before in ``scope`` (for generated names)."""

    def each(self, component: str, items: Iterable[T], work: Callable[[T], Any]) -> None:
        """``work`` on every item (an object, or a tuple whose first element is the object it
        concerns), each isolated: what raises is reported on that object (transient errors
        only logged) and the rest goes on. In parallel where the backend can."""


def concerned(item: object) -> Obj:
    """The object a unit of work is about: the item itself, or its first element."""
    if isinstance(item, tuple):
        item = item[0]
    return item if isinstance(item, dict) else {"kind": "Object", "metadata": {"name": "?"}}


def replace_status(host: Host, obj: Obj, status: dict[str, Any]) -> None:
    """Make ``status`` an object's whole status (keys it no longer has are removed)."""
    old = obj.get("status") or {}
    patch = {key: None for key in old if key not in status} | status
    host.patch(obj, {"status": patch}, status=True)
