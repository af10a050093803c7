"""A real API server as the controllers' Host (controllers/host.py): reads come from the
object cache (kube/cache.py), writes go to the API.

Every write's answer is queued for the cache, so the engine sees it once the cache drains.
``each`` runs a controller's work on many objects in parallel (the write pool), each isolated,
and drains what they wrote afterwards, so the next controller of the round reads it. Status
patches, and the annotations a cycle asks for ``later``, go out in the background
(kube/writeback.py: at most one per object at a time, coalesced) and are never waited for
(5,000 PodGroup statuses once held a cycle 9.4 s). Binds start while the cycle still decides
(``bind_early``, on their own pool): each committed allocation is final, and its outcome (a
failed bind rolled back and held, a Scheduled event) is taken from its answer when the cycle
closes if it has come, else by a later round's carry-out (``bind_answers``): no round waits
on a bind; the engine assumes it meanwhile. Evictions are not waited for either.
"""

from __future__ import annotations

import builtins
import itertools
import logging
import queue
import secrets
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import Executor, Future, ThreadPoolExecutor
from typing import Unpack

from pykai.controllers.events import Recording
from pykai.controllers.host import T, concerned
from pykai.controllers.outcome import BindFailed
from pykai.engine.decisions import Bind
from pykai.kube.api import ApiError, KubeApi
from pykai.kube.binder import Binder
from pykai.kube.cache import WRITTEN, ObjectCache, key_of
from pykai.kube.events import EventRecorder
from pykai.kube.informer import Change
from pykai.kube.writeback import Writeback
from pykai.model.errors import AlreadyExists
from pykai.model.kinds import BY_KIND
from pykai.model.meta import Obj, merge_patch

log = logging.getLogger("pykai.run")

# Threads for the binds started while a cycle decides (as many as the client of `pykai bench
# kube`'s ceiling). Since binds go over http.client (kube/rawpost.py), a bind costs the process
# so little CPU that more threads win (`pykai bench kube --rows pykai`, 1,000 nodes / 5,000
# pods, quiet, runs alternated: 8 threads 805 and 821 pods/s, 16 threads 919 and 915, 32 threads
# 1,040, 1,046, 930 and 1,039, 64 threads 1,066 and 797). Over httpx, 8 had been best.
BIND_THREADS = 32


def _bind_key(decision: Bind) -> tuple[str, str, str]:
    return decision.namespace, decision.name, decision.uid


class KubeHost(ObjectCache):
    """The object cache of ``pykai run`` and the writes its controllers make."""

    def __init__(
        self,
        api: KubeApi,
        pool: Executor,
        report_binds: bool = True,
        bound: Callable[[float, bool], None] = lambda seconds, failed: None,
        bind_pool: Executor | None = None,
        changes: queue.Queue[Change] | None = None,
        background: Executor | None = None,
        events: Executor | None = None,
    ) -> None:
        """``report_binds``: this process tells a pod when the binder gave up on it (the
        scheduler's part: the controllers may not write events); ``bound(seconds, failed)``
        is told of every bind (the metrics); ``bind_pool`` makes the binds started while a
        cycle decides (default: ``BIND_THREADS`` of their own); ``changes`` is the queue the
        informers feed (default: a new one); ``background`` writes what no cycle waits for
        (status patches, events; default: ``pool``): apart from ``pool``, a backlog of them
        never delays the next cycle's writes, which ``each`` waits for; ``events`` writes the
        events (default: ``background``): apart from it, status patches (a Workload's
        admission, its Finished condition) never queue behind a backlog of events."""
        self.background = background or pool
        super().__init__(EventRecorder(api, events or self.background), report_binds, changes)
        self.api, self.pool = api, pool
        self.bound = bound
        self.binder = Binder(api, pool, self.events)
        self._binding = 0  # binds started and not answered (status patches give way to them)
        self._binding_lock = threading.Condition()
        self.writeback = Writeback(
            api,
            self.background,
            self._patched,
            give_way=lambda: self._binding > 0,
        )
        self._serials = itertools.count(secrets.randbelow(1 << 30))  # fresh names per process
        # binds under way since their statement committed: (namespace, name, uid) -> the
        # decision and its answer (an error, or "")
        self.bind_pool = bind_pool or ThreadPoolExecutor(
            BIND_THREADS, thread_name_prefix="pykai-bind"
        )
        self._early: dict[tuple[str, str, str], tuple[Bind, Future[str]]] = {}
        self._under_way: list[tuple[Bind, Future[str]]] = []  # left by ``bind``, not answered

    # ---- controllers.host.Host: the writes ---------------------------------------------------

    def now(self) -> float:
        """The wall clock."""
        return time.time()

    def create(self, obj: Obj) -> Obj:
        """Create an object (AlreadyExists if its name is taken); the cache hears of it."""
        kind = BY_KIND[obj["kind"]]
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

    def patch(self, obj: Obj, patch: Obj, *, status: bool = False, later: bool = False) -> None:
        """A merge patch; a status patch, or one asked ``later``, goes out in the background
        (kube/writeback.py: one object's in order, coalesced, tried again)."""
        kind, namespace, name = key_of(obj)
        if status or later:
            self.writeback.patch(kind, namespace, name, "status" if status else "", patch)
            return
        self._patched(kind, self.api.patch(BY_KIND[kind], name, patch, namespace))

    # ---- reading one's own background writes -------------------------------------------------
    #
    # A background patch reaches the cache when the apiserver answers it, a moment or (under
    # load) seconds after a controller asked for it. Until then ``get``, ``list`` and ``owned``
    # show the object with the patches still queued or under way applied (merge patches: one
    # applied again changes nothing, so an answer already cached is harmless), so that the
    # next pass does not decide on what it already changed: a Kueue pass that saw a Workload it
    # admitted as still pending could admit another into the quota the first one holds. The
    # object shown carries a version of its own (``<cached version>~<n>``), so that nothing
    # remembered per resourceVersion takes it for the stored one. A patch the writeback gives
    # up on is no longer shown.

    def _shown(self, kind: str, obj: Obj) -> Obj:
        meta = obj["metadata"]
        namespace, name = str(meta.get("namespace") or ""), str(meta.get("name") or "")
        serial, patches = self.writeback.queued(kind, namespace, name)
        if not patches:
            return obj
        for patch in patches:
            obj = merge_patch(obj, patch)
        version = f"{meta.get('resourceVersion') or ''}~{serial}"
        return {**obj, "metadata": {**obj["metadata"], "resourceVersion": version}}

    def apply(self, change: Change) -> None:
        """A change into the cache; the writeback forgets the answers the cache now holds (or
        that concern an object it no longer holds)."""
        super().apply(change)
        for namespace, name in self.writeback.answered(change.kind):
            held = self.objects.get(change.kind, {}).get((namespace, name))
            version = None if held is None else str(held["metadata"].get("resourceVersion"))
            self.writeback.cached(change.kind, namespace, name, version)

    def get(self, kind: str, name: str, namespace: str = "") -> Obj | None:
        """The cached object, as our background patches under way make it."""
        found = super().get(kind, name, namespace)
        if found is None or not self.writeback.writes(kind):
            return found
        return self._shown(kind, found)

    def list(self, kind: str) -> builtins.list[Obj]:
        """The cached objects, as our background patches under way make them."""
        found = super().list(kind)
        if not self.writeback.writes(kind):
            return found
        return [self._shown(kind, obj) for obj in found]

    def owned(self, owner: Obj, kind: str) -> builtins.list[Obj]:
        """The cached objects ``owner`` controls, as our background patches make them."""
        found = super().owned(owner, kind)
        if not self.writeback.writes(kind):
            return found
        return [self._shown(kind, obj) for obj in found]

    def _patched(self, kind: str, written: Obj) -> None:
        written.setdefault("kind", kind)
        self.changes.put(Change(kind, WRITTEN, written))

    def delete(self, obj: Obj, *, grace: float | None = None, later: bool = False) -> None:
        """DELETE (a pod terminates over ``grace`` seconds, by default its own period);
        ``later`` on the bind pool, not waited for (a failure is logged: the pod is still
        there for the next cycle to see)."""
        kind, namespace, name = key_of(obj)
        seconds = None if grace is None else int(grace)
        if not later:
            self.api.delete(BY_KIND[kind], name, namespace, seconds)
            return

        def delete() -> None:
            try:
                self.api.delete(BY_KIND[kind], name, namespace, seconds)
            except Exception as exc:  # not waited for: logged
                log.warning("%s %s/%s not deleted: %s", kind, namespace, name, exc)

        self.bind_pool.submit(delete)

    def bind(self, decision: Bind) -> bool:
        """One write: pods/binding, or a BindRequest for a shared-GPU pod (kube/binder.py); a
        bind already started by ``bind_early`` is not made again, nor waited for: if it is
        still under way, False, and ``bind_answers`` gives its answer in a later round (so a
        round never waits on the apiserver's slowest bind)."""
        early = self._early.pop(_bind_key(decision), None)
        if early is None:
            self._bind_started()
            error = self._bind_now(decision)
        elif not early[1].done():
            self._under_way.append(early)
            return False
        else:
            error = early[1].result()
        if error:
            raise BindFailed(error)
        return True

    def bind_answers(self) -> builtins.list[tuple[Bind, str]]:
        """The answers come since to the binds ``bind`` left under way; a bound pod is cached
        as bound (``_cache_bound``). A bind that raised (a bug) is left to the watch."""
        answered: builtins.list[tuple[Bind, Future[str]]] = []
        waiting: builtins.list[tuple[Bind, Future[str]]] = []
        for entry in self._under_way:  # one look at each: a bind may end between two
            (answered if entry[1].done() else waiting).append(entry)
        self._under_way = waiting
        return self._cache_answered(answered)

    def bind_early(self, decision: Bind) -> None:
        """Start a committed allocation's bind while the cycle goes on (the engine's
        ``on_bind``); ``bind`` takes its answer when the cycle's binds are carried out, or
        leaves it to ``bind_answers``. On the bind pool, which runs nothing that waits."""
        self._bind_started()
        try:
            future = self.bind_pool.submit(self._bind_now, decision)
        except BaseException:  # the pool is shut down: no bind will count itself done
            with self._binding_lock:
                self._binding -= 1
            raise
        self._early[_bind_key(decision)] = (decision, future)

    def end_cycle(self) -> None:
        """After a cycle, the early binds it did not take the answer of (it failed half-way,
        or a pod changed in the cache meanwhile) are waited for; a pod one of them bound is
        cached as bound, so a state rebuilt from the cache before the pod's watch tells the
        bind does not place it again."""
        early, self._early = self._early, {}
        self._cache_answered(early.values())

    def rebuild_state(self) -> None:
        """As the cache's, after the binds still under way have answered: a pod one of them
        bound is cached as bound first, so the fresh state does not place it again (their
        answers still reach the next carry-out)."""
        self._cache_answered(self._under_way)
        super().rebuild_state()

    def _cache_answered(
        self, binds: Iterable[tuple[Bind, Future[str]]]
    ) -> builtins.list[tuple[Bind, str]]:
        """Each bind's answer, waited for; a pod one bound is cached as bound. A bind that
        raised (a bug) is left to the watch: what it did is unknown."""
        answers = []
        for decision, future in binds:
            try:
                error = future.result()
            except Exception:
                continue
            if not error:
                self._cache_bound(decision)
            answers.append((decision, error))
        return answers

    def _cache_bound(self, decision: Bind) -> None:
        """The pod a bind succeeded for, cached with its node until its watch tells (a
        shared-GPU pod is shown bound by its BindRequest)."""
        pod = self.get("Pod", decision.name, decision.namespace)
        if decision.gpu_groups or pod is None or pod["metadata"].get("uid") != decision.uid:
            return
        if not (pod.get("spec") or {}).get("nodeName"):
            spec = {**(pod.get("spec") or {}), "nodeName": decision.node}
            self.changes.put(Change("Pod", WRITTEN, {**pod, "spec": spec}))

    def _bind_now(self, decision: Bind) -> str:
        started = time.perf_counter()
        try:
            error = self.binder.bind(decision)
        finally:
            with self._binding_lock:
                self._binding -= 1
                self._binding_lock.notify_all()
        self.bound(time.perf_counter() - started, bool(error))
        return error

    def _bind_started(self) -> None:
        with self._binding_lock:
            self._binding += 1

    def wait_for_binds(self, below: int, timeout: float) -> None:
        """Until fewer than ``below`` binds are under way or queued, at most ``timeout``
        seconds: the loop lets a burst of binds through before its next cycle takes the
        process's time (one interpreter lock for the cycle and the bind threads)."""
        deadline = time.monotonic() + timeout
        with self._binding_lock:
            while self._binding >= below and time.monotonic() < deadline:
                self._binding_lock.wait(max(0.0, deadline - time.monotonic()))

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
        self, involved: Obj, reason: str, message: str, kind: str, **how: Unpack[Recording]
    ) -> None:
        """An event, written in the background."""
        self.events.record(involved, reason, message, kind, **how)

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
