"""A real API server as the controllers' Host (controllers/host.py).

Reads come from an object cache that the informers fill (kube/informer.py) and that feeds the
engine's state; writes go to the API. Everything that changes the cache or the engine happens
on the thread that runs the cycle: informers and writers only queue their results
(``changes``), and ``drain`` applies them. ``each`` runs a controller's work on many objects
in parallel (the write pool), each isolated, and drains what they wrote afterwards, so the next
controller of the round reads it. Status patches go out in the background, at most one per
object at a time, and are never waited for (5,000 PodGroup statuses once held a cycle 9.4 s).
Binds start while the cycle still decides (``bind_early``, on their own pool): each committed
allocation is final, and the cycle's outcome (a failed bind rolled back and held) is taken from
their answers when the cycle closes, as for a bind made then.

Pods are shown to the engine as the scheduler must count them (see kube/binding.py): a pod whose
BindRequest is pending as bound to the selected node and GPU groups, a pod whose bind backs off
as gated, and GPU reservation pods not at all (their group already holds the device).
"""

from __future__ import annotations

import builtins
import itertools
import logging
import queue
import secrets
import time
from collections.abc import Callable, Iterable
from concurrent.futures import Executor, Future, ThreadPoolExecutor

from pykai.controllers.events import WARNING
from pykai.controllers.faults import INVALID, Isolation
from pykai.controllers.host import T, concerned
from pykai.controllers.outcome import BindFailed
from pykai.engine.decisions import Bind
from pykai.engine.state import KINDS as ENGINE_KINDS
from pykai.engine.state import ClusterState
from pykai.kube.api import KINDS, ApiError, KubeApi, transient
from pykai.kube.binder import Binder
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
from pykai.model.errors import AlreadyExists
from pykai.model.meta import Obj
from pykai.model.problems import ObjectProblem

log = logging.getLogger("pykai.run")
Key = tuple[str, str]  # (namespace, name)
WRITTEN = "WRITTEN"  # a Change that is the answer to one of our own writes
_GONE_KEPT = 100_000  # deleted uids remembered against late answers

# Threads for the binds started while a cycle decides (as many as the client of `pykai bench
# kube`'s ceiling). Since binds go over http.client (kube/rawpost.py), a bind costs the process
# so little CPU that more threads win (`pykai bench kube --rows pykai`, 1,000 nodes / 5,000
# pods, quiet, runs alternated: 8 threads 805 and 821 pods/s, 16 threads 919 and 915, 32 threads
# 1,040, 1,046, 930 and 1,039, 64 threads 1,066 and 797). Over httpx, 8 had been best.
BIND_THREADS = 32


def _bind_key(decision: Bind) -> tuple[str, str, str]:
    return decision.namespace, decision.name, decision.uid


def key_of(obj: Obj) -> tuple[str, str, str]:
    """(kind, namespace, name)."""
    meta = obj["metadata"]
    return obj["kind"], meta.get("namespace", "") or "", meta["name"]


class KubeHost:
    """The object cache of ``pykai run`` and the writes its controllers make."""

    def __init__(
        self,
        api: KubeApi,
        pool: Executor,
        report_binds: bool = True,
        bound: Callable[[float, bool], None] = lambda seconds, failed: None,
        bind_pool: Executor | None = None,
        changes: queue.Queue[Change] | None = None,
    ) -> None:
        """``report_binds``: this process tells a pod when the binder gave up on it (the
        scheduler's part: the controllers may not write events); ``bound(seconds, failed)``
        is told of every bind (the metrics); ``bind_pool`` makes the binds started while a
        cycle decides (default: ``BIND_THREADS`` of their own); ``changes`` is the queue the
        informers feed (default: a new one)."""
        self.api, self.pool = api, pool
        self.bound = bound
        self.events = EventRecorder(api, pool)
        self.backoff = BindBackoff()
        self.binder = Binder(api, pool, self.events)
        self.state = ClusterState()
        self.objects: dict[str, dict[Key, Obj]] = {}  # kind -> (namespace, name) -> object
        self.changes: queue.Queue[Change] = queue.Queue() if changes is None else changes
        self.synced: set[str] = set()
        self.report_binds = report_binds
        self._isolations: dict[str, Isolation] = {}
        self._failed_requests: set[str] = set()  # uids of BindRequests the binder gave up
        self._in_flight: set[tuple[str, str, str]] = set()  # status patches under way
        self._serials = itertools.count(secrets.randbelow(1 << 30))  # fresh names per process
        self._gone: set[str] = set()  # uids the informers reported deleted
        # binds under way since their statement committed: (namespace, name, uid) -> the
        # decision and its answer (an error, or "")
        self.bind_pool = bind_pool or ThreadPoolExecutor(
            BIND_THREADS, thread_name_prefix="pykai-bind"
        )
        self._early: dict[tuple[str, str, str], tuple[Bind, Future[str]]] = {}

    # ---- the cache ---------------------------------------------------------------------------

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
        self.objects.setdefault(kind, {})[(namespace, name)] = obj
        if kind == "BindRequest":
            pod = self.get("Pod", str(obj.get("spec", {}).get("podName", "")), namespace)
            if pod is not None:
                if requested_for(obj, pod) and self._gave_up(obj, pod):
                    self.backoff.fail(pod["metadata"].get("uid", ""), time.time())
                self._feed(pod)
        elif kind in ENGINE_KINDS:
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

    def _forget(self, kind: str, key: Key) -> None:
        obj = self.objects.get(kind, {}).pop(key, None)
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

    # ---- controllers.host.Host ---------------------------------------------------------------

    def now(self) -> float:
        """The wall clock."""
        return time.time()

    def get(self, kind: str, name: str, namespace: str = "") -> Obj | None:
        """A cached object, or None."""
        return self.objects.get(kind, {}).get((namespace, name))

    def list(self, kind: str) -> builtins.list[Obj]:
        """Cached objects of a kind."""
        return builtins.list(self.objects.get(kind, {}).values())

    def owned(self, owner: Obj, kind: str) -> builtins.list[Obj]:
        """Cached objects of ``kind`` controlled by ``owner``."""
        uid = owner["metadata"].get("uid")
        return [
            obj
            for obj in self.objects.get(kind, {}).values()
            if any(ref.get("uid") == uid for ref in obj["metadata"].get("ownerReferences") or [])
        ]

    def create(self, obj: Obj) -> Obj:
        """Create an object (AlreadyExists if its name is taken); the cache hears of it."""
        kind = KINDS[obj["kind"]]
        try:
            created = self.api.create(kind, obj)
        except ApiError as exc:
            if exc.status == 409:
                raise AlreadyExists(f"{obj['kind']} {obj['metadata']['name']} exists") from exc
            raise
        created.setdefault("kind", kind.kind)
        created.setdefault("apiVersion", kind.api_version)
        self.changes.put(Change(kind.kind, WRITTEN, created))
        return created

    def patch(self, obj: Obj, patch: Obj, *, status: bool = False) -> None:
        """A merge patch; a status patch goes out in the background, at most one per object
        at a time (a failed one is tried again by a later cycle)."""
        kind, namespace, name = key_of(obj)
        if not status:
            self._patched(kind, self.api.patch(KINDS[kind], name, patch, namespace))
            return
        if (kind, namespace, name) in self._in_flight:
            return
        self._in_flight.add((kind, namespace, name))

        def write() -> None:
            try:
                self._patched(kind, self.api.patch(KINDS[kind], name, patch, namespace, "status"))
            except Exception as exc:  # a background write: logged, tried again next cycle
                log.warning("status of %s %s/%s not written: %s", kind, namespace, name, exc)
            finally:
                self._in_flight.discard((kind, namespace, name))

        self.pool.submit(write)

    def _patched(self, kind: str, written: Obj) -> None:
        written.setdefault("kind", kind)
        self.changes.put(Change(kind, WRITTEN, written))

    def delete(self, obj: Obj, *, grace: float | None = None) -> None:
        """DELETE (a pod terminates over ``grace`` seconds, by default its own period)."""
        kind, namespace, name = key_of(obj)
        self.api.delete(KINDS[kind], name, namespace, None if grace is None else int(grace))

    def bind(self, decision: Bind) -> None:
        """One write: pods/binding, or a BindRequest for a shared-GPU pod (kube/binder.py);
        a bind already started by ``bind_early`` is waited for, not made again."""
        early = self._early.pop(_bind_key(decision), None)
        error = early[1].result() if early is not None else self._bind_now(decision)
        if error:
            raise BindFailed(error)

    def bind_early(self, decision: Bind) -> None:
        """Start a committed allocation's bind while the cycle goes on (the engine's
        ``on_bind``); ``bind`` takes its answer when the cycle's binds are carried out. On
        the bind pool, which runs nothing that waits: ``bind`` may wait on it from the write
        pool."""
        future = self.bind_pool.submit(self._bind_now, decision)
        self._early[_bind_key(decision)] = (decision, future)

    def end_cycle(self) -> None:
        """After a cycle, the early binds it did not take the answer of (it failed half-way,
        or a pod changed in the cache meanwhile) are waited for; a pod one of them bound is
        cached as bound, so a state rebuilt from the cache before the pod's watch tells the
        bind does not place it again."""
        early, self._early = self._early, {}
        for decision, future in early.values():
            try:
                error = future.result()
            except Exception:  # a bug in that bind: what it did is unknown, the watch tells
                continue
            pod = self.get("Pod", decision.name, decision.namespace)
            if error or decision.gpu_groups or pod is None:
                continue  # a shared-GPU pod is shown bound by its BindRequest
            if pod["metadata"].get("uid") == decision.uid:
                spec = {**(pod.get("spec") or {}), "nodeName": decision.node}
                self.changes.put(Change("Pod", WRITTEN, {**pod, "spec": spec}))

    def _bind_now(self, decision: Bind) -> str:
        started = time.perf_counter()
        error = self.binder.bind(decision)
        self.bound(time.perf_counter() - started, bool(error))
        return error

    def hold(self, decision: Bind) -> float:
        """The pod waits out a backoff (1 s, 2 s, ... 60 s), shown to the engine as gated,
        so a pod whose bind always fails cannot take the same GPUs every cycle."""
        log.warning("bind of %s/%s failed", decision.namespace, decision.name)
        delay = self.backoff.fail(decision.uid, time.time())
        pod = self.get("Pod", decision.name, decision.namespace)
        if pod is not None:
            self._feed(pod)
        return delay

    def record(
        self, involved: Obj, reason: str, message: str, kind: str, *, once: bool = False
    ) -> None:
        """An event, written in the background."""
        if once:
            self.events.record_once(involved, reason, message, kind)
        else:
            self.events.record(involved, reason, message, kind)

    def serial(self, scope: str) -> int:
        """A number this process has not handed out (random start: restarts do not collide)."""
        return next(self._serials)

    def each(self, component: str, items: Iterable[T], work: Callable[[T], object]) -> None:
        """``work`` on every item in the write pool, each isolated; what they wrote is in the
        cache when this returns."""
        isolation = self.isolation(component)

        def isolated(item: T) -> None:
            with isolation.isolated(concerned(item)):
                work(item)

        builtins.list(self.pool.map(isolated, builtins.list(items)))
        self.drain()

    def isolation(self, component: str) -> Isolation:
        """Per-object fault isolation for one component (controllers/faults.py)."""
        isolation = self._isolations.get(component)
        if isolation is None:
            isolation = Isolation(component, self._report, transient)
            self._isolations[component] = isolation
        return isolation

    def _report(self, involved: Obj, problem: ObjectProblem) -> None:
        self.events.record_once(involved, INVALID, problem.message, WARNING)
