"""The object cache of ``pykai run``: what the informers (kube/informer.py) and the answers to
pykai's own writes tell, kept by kind, namespace and name, and fed to the engine's state.

Everything that changes the cache or the engine happens on the thread that runs the cycle:
informers and writers only queue their results (``changes``), and ``drain`` applies them. The
answer to one of pykai's own writes (``WRITTEN``) never brings back an object the informers
reported deleted, nor replaces a newer version.

Pods are shown to the engine as the scheduler must count them (see kube/binding.py): a pod whose
BindRequest is pending as bound to the selected node and GPU groups, a pod whose bind backs off
as gated, and GPU reservation pods not at all (their group already holds the device). The cache
tells a pod when the binder gave its BindRequest up, and reports, on the object, what it cannot
take in.
"""

from __future__ import annotations

import builtins
import queue
import time

from pykai.controllers.events import WARNING
from pykai.controllers.faults import INVALID, Isolation
from pykai.engine.state import STATE_KINDS, ClusterState
from pykai.kube.api import transient
from pykai.kube.binding import (
    FAILED,
    RESERVATION_NAMESPACE,
    BindBackoff,
    bound_view,
    given_up,
    held_view,
    read_bind_request,
    requested_for,
)
from pykai.kube.events import EventRecorder
from pykai.kube.informer import Change
from pykai.model.meta import Obj
from pykai.model.problems import ObjectProblem

Key = tuple[str, str]  # (namespace, name)
WRITTEN = "WRITTEN"  # a Change that is the answer to one of our own writes
_GONE_KEPT = 100_000  # deleted uids remembered against late answers


def _owner_uids(obj: Obj | None) -> set[str]:
    """The uids an object's ownerReferences name (none for no object)."""
    if obj is None:
        return set()
    refs = obj["metadata"].get("ownerReferences")
    return (
        {str(r.get("uid")) for r in refs if isinstance(r, dict)}
        if isinstance(refs, list)
        else set()
    )


def key_of(obj: Obj) -> tuple[str, str, str]:
    """(kind, namespace, name)."""
    meta = obj["metadata"]
    return obj["kind"], meta.get("namespace", "") or "", meta["name"]


class ObjectCache:
    """The objects the informers and the answers to writes told, and the engine's state fed
    from them."""

    def __init__(
        self,
        events: EventRecorder,
        report_binds: bool = True,
        changes: queue.Queue[Change] | None = None,
    ) -> None:
        """``events`` writes what the cache reports; ``report_binds``: this process tells a
        pod when the binder gave up on it (the scheduler's part: the controllers may not
        write events); ``changes`` is the queue the informers feed (default: a new one)."""
        self.events = events
        self.backoff = BindBackoff()
        self.state = ClusterState()
        self.objects: dict[str, dict[Key, Obj]] = {}  # kind -> (namespace, name) -> object
        self._owned: dict[tuple[str, str], set[Key]] = {}  # (kind, owner uid) -> objects
        self.changes: queue.Queue[Change] = queue.Queue() if changes is None else changes
        self.synced: set[str] = set()
        self.report_binds = report_binds
        self._isolations: dict[str, Isolation] = {}
        self._failed_requests: set[str] = set()  # uids of BindRequests the binder gave up
        self._gone: set[str] = set()  # uids the informers reported deleted

    def drain(self) -> None:
        """Apply every change queued by the informers and the writers."""
        while True:
            try:
                change = self.changes.get_nowait()
            except queue.Empty:
                return
            self.apply(change)

    def wait_for_change(self, timeout: float) -> None:
        """Until the informers or the writers queue a change (it is applied), at most
        ``timeout`` seconds."""
        try:
            change = self.changes.get(timeout=timeout)
        except queue.Empty:
            return
        self.apply(change)

    def apply(self, change: Change) -> None:
        """One change into the cache and the engine's state (an object that cannot be taken
        in is reported and skipped)."""
        if change.error is not None:
            raise change.error
        cache = self.isolation("the scheduler's cache")
        if change.type == "SYNC":
            self.synced.add(change.kind)
            fresh = {key_of(o)[1:] for o in change.objects}
            for key in [k for k in self.objects.get(change.kind, {}) if k not in fresh]:
                self._forget(change.kind, key)
            for obj in change.objects:
                with cache.isolated(obj):
                    self._remember(obj)
        elif change.obj is not None and change.type == "DELETED":
            kind, namespace, name = key_of(change.obj)
            self._forget(kind, (namespace, name))
            if len(self._gone) > _GONE_KEPT:  # late answers come within seconds, not hours
                self._gone.clear()
            self._gone.add(str(change.obj["metadata"].get("uid", "")))
        elif change.obj is not None and not (change.type == WRITTEN and self._stale(change.obj)):
            with cache.isolated(change.obj):
                self._remember(change.obj)

    def _stale(self, written: Obj) -> bool:
        """True if the answer to one of our writes is older than what the informers told: the
        object was deleted since (a late answer must not bring it back), or the cache holds a
        newer version."""
        meta = written["metadata"]
        if str(meta.get("uid", "")) in self._gone:
            return True
        kind, namespace, name = key_of(written)
        cached = self.get(kind, name, namespace)
        if cached is None:
            return False
        try:
            return int(cached["metadata"]["resourceVersion"]) > int(meta["resourceVersion"])
        except (KeyError, TypeError, ValueError):
            return False

    def rebuild_state(self) -> None:
        """A fresh engine state from the cache (after a cycle failed half-way)."""
        self.state = ClusterState()
        for kind in ("PriorityClass", "Queue", "Node", "PodGroup", "Pod", "BindRequest"):
            for obj in list(self.objects.get(kind, {}).values()):
                self._remember(obj)

    def _remember(self, obj: Obj) -> None:
        kind, namespace, name = key_of(obj)
        kept = self.objects.setdefault(kind, {})
        before = kept.get((namespace, name))
        kept[(namespace, name)] = obj
        self._index_owners(kind, (namespace, name), before, obj)
        if kind == "BindRequest":
            pod = self.get("Pod", str(obj.get("spec", {}).get("podName", "")), namespace)
            if pod is not None:
                if requested_for(obj, pod) and self._gave_up(obj, pod):
                    self.backoff.fail(pod["metadata"].get("uid", ""), time.time())
                self._feed(pod)
        elif kind in STATE_KINDS:
            self._feed(obj)

    def _gave_up(self, request: Obj, pod: Obj) -> bool:
        """True the first time this process sees the binder give up on ``request``."""
        status = request.get("status") or {}
        uid = request["metadata"].get("uid", "")
        if status.get("phase") != FAILED or uid in self._failed_requests:
            return False
        self._failed_requests.add(uid)
        message = f"binder gave up after {status.get('failedAttempts')} attempts: " + str(
            status.get("reason", "")
        )
        if self.report_binds:
            self.events.record(pod, "FailedBinding", message, WARNING)
        return True

    def _index_owners(self, kind: str, key: Key, before: Obj | None, after: Obj | None) -> None:
        """The owner index (``owned``) kept in step with one object's change."""
        old, new = _owner_uids(before), _owner_uids(after)
        for uid in old - new:
            owned = self._owned.get((kind, uid))
            if owned is not None:
                owned.discard(key)
                if not owned:
                    del self._owned[(kind, uid)]
        for uid in new - old:
            self._owned.setdefault((kind, uid), set()).add(key)

    def _forget(self, kind: str, key: Key) -> None:
        obj = self.objects.get(kind, {}).pop(key, None)
        self._index_owners(kind, key, obj, None)
        if kind == "BindRequest" and obj is not None:
            pod = self.get("Pod", str((obj.get("spec") or {}).get("podName", "")), key[0])
            if pod is not None:
                self._feed(pod)
            return
        if kind == "Pod" and obj is not None:
            self.backoff.forget(obj["metadata"].get("uid", ""))
        self.state.remove(kind, *key)

    def _feed(self, obj: Obj) -> None:
        """Into the engine, as the scheduler must count it."""
        if obj["kind"] == "Pod":
            if obj["metadata"].get("namespace") == RESERVATION_NAMESPACE:
                return  # GPU reservations: the group already holds the device
            obj = self._pod_as_scheduled(obj)
        self.state.upsert(obj)

    def _pod_as_scheduled(self, pod: Obj) -> Obj:
        meta = pod["metadata"]
        if (pod.get("spec") or {}).get("nodeName"):
            self.backoff.forget(meta.get("uid", ""))
            return pod
        request = self.get("BindRequest", meta["name"], meta.get("namespace", ""))
        if request is not None and not given_up(request) and requested_for(request, pod):
            # pending, or succeeded before the pod's own watch told its bind (two streams):
            # either way the pod holds the selected node and GPU groups
            try:
                return bound_view(pod, read_bind_request(request))
            except ValueError:
                pass  # not one pykai made (reported by the binder): the pod is as it is
        if self.backoff.held(meta.get("uid", ""), time.time()):
            return held_view(pod)
        return pod

    def release_expired_holds(self) -> None:
        """Pods whose bind backoff ended are shown to the engine as pending again."""
        expired = set(self.backoff.expired(time.time()))
        if expired:
            for pod in list(self.objects.get("Pod", {}).values()):
                if pod["metadata"].get("uid") in expired:
                    self._feed(pod)

    # ---- reading -----------------------------------------------------------------------------

    def get(self, kind: str, name: str, namespace: str = "") -> Obj | None:
        """A cached object, or None."""
        return self.objects.get(kind, {}).get((namespace, name))

    def list(self, kind: str) -> builtins.list[Obj]:
        """Cached objects of a kind."""
        return builtins.list(self.objects.get(kind, {}).values())

    def owned(self, owner: Obj, kind: str) -> builtins.list[Obj]:
        """Cached objects of ``kind`` controlled by ``owner`` (from an index: the Kueue pass
        asks for every admitted Workload's, each cycle)."""
        kept = self.objects.get(kind, {})
        keys = self._owned.get((kind, str(owner["metadata"].get("uid"))), ())
        return [kept[key] for key in sorted(keys) if key in kept]

    def isolation(self, component: str) -> Isolation:
        """Per-object fault isolation for one component (controllers/faults.py)."""
        isolation = self._isolations.get(component)
        if isolation is None:
            isolation = Isolation(component, self._report, transient)
            self._isolations[component] = isolation
        return isolation

    def _report(self, involved: Obj, problem: ObjectProblem) -> None:
        self.events.record_once(involved, INVALID, problem.message, WARNING)
