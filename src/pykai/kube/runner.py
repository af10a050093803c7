"""``pykai run``: pykai's components against a real API server, on the same engine as the
embedded cluster. One process runs any subset of them (all by default):

- ``podgrouper``: a PodGroup for every kai-scheduler pod without one (by its top owner);
- ``scheduler``: the cycle; binds (see kube/binder.py), evictions (one DELETE each, with a
  Warning event on the pod and its PodGroup), the PodGroup's scheduling conditions and its
  last-start / stale-since annotations;
- ``binder``: carries out BindRequests (shared-GPU pods) and frees unused GPU reservations;
- ``queuecontroller`` / ``podgroupcontroller``: queue status and PodGroup status;
- ``kubelet`` and ``kuberay``: stand-ins for a local cluster (bound pods start Running; the
  KubeRay emulator turns RayCluster/RayJob/RayService into pods).

Status is written only where it changed. Nothing is decided before every informer has listed
its kind, so a restarted process never acts on a half-filled cache. If the apiserver refuses
those first lists (or the first lease request) with 401/403, ``run`` raises RefusedAtStart:
the credentials or their RBAC are wrong, and retrying would only hide it.
"""

from __future__ import annotations

import itertools
import logging
import queue
import threading
import time
from concurrent.futures import Executor, ThreadPoolExecutor

from pykai.controllers.faults import Isolation, report_problems
from pykai.controllers.status import (
    held_pod_conditions,
    held_pods,
    invalid_podgroup_status,
    podgroup_status,
    queue_figures,
    queue_statuses,
    reason_text,
)
from pykai.engine.config import SchedulerConfig
from pykai.engine.decisions import Bind, CycleResult
from pykai.engine.scheduler import Scheduler
from pykai.engine.state import ClusterState
from pykai.kube.api import API_ERRORS, KINDS, Kind, KubeApi, RefusedAtStart, transient
from pykai.kube.binder import (
    FAILED,
    RESERVATION_NAMESPACE,
    BindBackoff,
    Binder,
    bound_view,
    groups_in_use,
    held_view,
    pending_request,
    read_bind_request,
    requested_for,
)
from pykai.kube.events import WARNING, EventRecorder
from pykai.kube.grouper import group_pods
from pykai.kube.informer import Change, Informer
from pykai.kube.leader import LeaderElector
from pykai.kube.workloads import KubeWorkloads
from pykai.model import constants as c
from pykai.model.meta import Obj, format_time

log = logging.getLogger("pykai.run")

COMPONENTS = (
    "scheduler",
    "binder",
    "podgrouper",
    "queuecontroller",
    "podgroupcontroller",
    "kubelet",
    "kuberay",
)
DEFAULT_COMPONENTS = frozenset(COMPONENTS[:5])
_ENGINE_KINDS = ("PriorityClass", "Queue", "Node", "PodGroup", "Pod", "BindRequest")
_NEEDS: dict[str, tuple[str, ...]] = {
    "scheduler": _ENGINE_KINDS,
    "binder": ("Pod", "BindRequest"),
    "podgrouper": ("Pod", "PodGroup", "PriorityClass"),
    "queuecontroller": _ENGINE_KINDS,
    "podgroupcontroller": _ENGINE_KINDS,
    "kubelet": ("Pod",),
    "kuberay": ("Pod", "RayCluster", "RayJob", "RayService"),
}
# owners the pod-grouper reads when they exist (a missing CRD only means no such owners)
_OWNER_KINDS = (
    "ReplicaSet",
    "Deployment",
    "StatefulSet",
    "Job",
    "CronJob",
    "RayCluster",
    "RayJob",
    "RayService",
    "PyTorchJob",
)
_OPTIONAL = frozenset(_OWNER_KINDS)
# fields of PodGroup status the scheduler owns; the podgroup controller owns the rest
_SCHEDULER_STATUS = frozenset({"schedulingConditions"})


def key_of(obj: Obj) -> tuple[str, str, str]:
    """(kind, namespace, name)."""
    meta = obj["metadata"]
    return obj["kind"], meta.get("namespace", "") or "", meta["name"]


def parse_components(text: str) -> frozenset[str]:
    """``scheduler,binder`` -> the set; raises ValueError naming an unknown component."""
    wanted = frozenset(part.strip() for part in text.split(",") if part.strip())
    unknown = sorted(wanted - set(COMPONENTS))
    if unknown or not wanted:
        raise ValueError(
            f"unknown component(s) {', '.join(unknown) or '(none given)'}; "
            f"choose from {', '.join(COMPONENTS)}"
        )
    return wanted


class KubeRunner:
    """Keeps a ClusterState in step with the apiserver and runs the chosen components."""

    def __init__(
        self,
        api: KubeApi,
        config: SchedulerConfig | None = None,
        components: frozenset[str] = DEFAULT_COMPONENTS,
        pool: Executor | None = None,
    ) -> None:
        """``pool`` carries out the writes (default: 32 threads)."""
        self.api = api
        self.components = components
        config = config or SchedulerConfig()
        if "scheduler" not in components:  # status only: fair share without actions
            config = config.model_copy(update={"actions": []})
        self.scheduler = Scheduler(config)
        self.state = ClusterState()
        self.objects: dict[tuple[str, str, str], Obj] = {}
        self.changes: queue.Queue[Change] = queue.Queue()
        self.pool = pool or ThreadPoolExecutor(max_workers=32, thread_name_prefix="pykai-write")
        self.events = EventRecorder(api, self.pool)
        self.backoff = BindBackoff()
        self.binder = Binder(api, self.pool, self.events)
        self.workloads = KubeWorkloads(api, self.events)
        self.kinds = sorted({k for name in components for k in _NEEDS[name]})
        if "podgrouper" in components:
            self.kinds = sorted(set(self.kinds) | _OPTIONAL)
        self.synced: set[str] = set()
        self.evictions: dict[str, int] = {}  # queue -> evictions counted by this process
        self._reported: dict[str, str] = {}  # job key -> reasons last reported as an event
        self._failed_requests: set[str] = set()  # uids of BindRequests the binder gave up
        self._in_flight: set[tuple[str, str, str, str]] = set()  # background patches under way
        self._isolations: dict[str, Isolation] = {}
        self.cycles = 0  # cycles run by this process

    def isolation(self, component: str) -> Isolation:
        """Per-object fault isolation for one component (controllers/faults.py)."""
        isolation = self._isolations.get(component)
        if isolation is None:
            isolation = Isolation(component, self.events.report, transient)
            self._isolations[component] = isolation
        return isolation

    def run(
        self, stop: threading.Event, period: float = 1.0, elector: LeaderElector | None = None
    ) -> None:
        """Run cycles every ``period`` seconds until ``stop`` is set; with an elector, only
        while this replica holds the lease (the caches stay warm for a fast failover). Raises
        RefusedAtStart (and sets ``stop``) if the apiserver refuses the credentials at start."""
        informers = [Informer(self.api, KINDS[kind], self.changes, stop) for kind in self.kinds]
        for informer in informers:
            informer.start()
        try:
            while not stop.is_set():
                self.drain()
                try:
                    if self.ready() and (elector is None or elector.step()):
                        self.cycle()
                        self._cycled()
                except API_ERRORS as exc:  # the apiserver may be restarting
                    log.warning("cycle failed: %s", exc)
                except RefusedAtStart:
                    raise
                except Exception:  # a bug: objects cannot make a cycle fail; go on with the next
                    log.exception("cycle failed; the state is rebuilt from the cache")
                    self.rebuild_state()
                stop.wait(period)
        except RefusedAtStart:
            stop.set()  # the other first lists end too, so their log lines come before ours
            deadline = time.monotonic() + 5.0
            for informer in informers:
                informer.join(max(0.0, deadline - time.monotonic()))
            raise
        finally:
            stop.set()  # ends the informers too
            self.pool.shutdown(wait=True)

    def _cycled(self) -> None:
        """Count a finished cycle: the first says the process is ready; each is logged at
        debug level (tests wait for cycles, not for time)."""
        self.cycles += 1
        if self.cycles == 1:
            log.info("ready: every informer has listed its kind; first cycle done")
        log.debug("cycle %d done", self.cycles)

    def ready(self) -> bool:
        """True once every required kind has been listed."""
        return all(kind in self.synced for kind in self.kinds if kind not in _OPTIONAL)

    # ---- keeping the state in step -----------------------------------------------------------

    def drain(self) -> None:
        """Apply every change the informers queued."""
        while True:
            try:
                change = self.changes.get_nowait()
            except queue.Empty:
                return
            self.apply(change)

    def apply(self, change: Change) -> None:
        """One informer change into the object cache and the engine's state (an object that
        cannot be taken in is reported and skipped)."""
        if change.error is not None:
            raise change.error
        cache = self.isolation("the scheduler's cache")
        if change.type == "SYNC":
            self.synced.add(change.kind)
            fresh = {key_of(o) for o in change.objects}
            for key in [k for k in self.objects if k[0] == change.kind and k not in fresh]:
                self._forget(key)
            for obj in change.objects:
                with cache.isolated(obj):
                    self._remember(obj)
        elif change.obj is not None and change.type == "DELETED":
            self._forget(key_of(change.obj))
        elif change.obj is not None:
            with cache.isolated(change.obj):
                self._remember(change.obj)

    def rebuild_state(self) -> None:
        """A fresh engine state from the object cache (after a cycle failed half-way)."""
        self.state = ClusterState()
        for kind in _ENGINE_KINDS:
            for obj in self.of_kind(kind):
                self._remember(obj)

    def _remember(self, obj: Obj) -> None:
        key = key_of(obj)
        self.objects[key] = obj
        if key[0] == "BindRequest":
            pod = self.objects.get(("Pod", key[1], (obj.get("spec") or {}).get("podName", "")))
            if pod is not None:
                if requested_for(obj, pod) and self._gave_up(obj, pod):
                    self.backoff.fail(pod["metadata"].get("uid", ""), time.time())
                self._feed(pod)
        else:
            self._feed(obj)

    def _gave_up(self, request: Obj, pod: Obj) -> bool:
        """True the first time this process sees the binder give up on ``request`` (the
        scheduler reports it on the pod: the controllers may not write events)."""
        status = request.get("status") or {}
        uid = request["metadata"].get("uid", "")
        if status.get("phase") != FAILED or uid in self._failed_requests:
            return False
        self._failed_requests.add(uid)
        message = f"binder gave up after {status.get('failedAttempts')} attempts: " + str(
            status.get("reason", "")
        )
        if "scheduler" in self.components:
            self.events.record(pod, "FailedBinding", message, WARNING)
        return True

    def _forget(self, key: tuple[str, str, str]) -> None:
        obj = self.objects.pop(key, None)
        if key[0] == "BindRequest" and obj is not None:
            pod = self.objects.get(("Pod", key[1], (obj.get("spec") or {}).get("podName", "")))
            if pod is not None:
                self._feed(pod)
            return
        if key[0] == "Pod" and obj is not None:
            self.backoff.forget(obj["metadata"].get("uid", ""))
        self.state.remove(*key)

    def _feed(self, obj: Obj) -> None:
        """Into the engine, as the scheduler must count it (see kube/binder.py)."""
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
        request = self.objects.get(("BindRequest", meta.get("namespace", ""), meta["name"]))
        if request is not None and pending_request(request) and requested_for(request, pod):
            try:
                return bound_view(pod, read_bind_request(request))
            except ValueError:
                pass  # not one pykai made (reported by the binder): the pod is as it is
        if self.backoff.held(meta.get("uid", ""), time.time()):
            return held_view(pod)
        return pod

    def of_kind(self, kind: str) -> list[Obj]:
        """Cached objects of a kind."""
        return [o for k, o in self.objects.items() if k[0] == kind]

    # ---- one cycle ---------------------------------------------------------------------------

    def cycle(self) -> CycleResult:
        """Run each component of this process once; log the phases of a cycle that decided
        something."""
        marks = [("start", time.perf_counter())]
        self._release_expired_holds()
        if "kuberay" in self.components:
            self.workloads.reconcile(self.objects, self._remember, self.isolation)
        if "podgrouper" in self.components:
            group_pods(
                self.api, self.pool, self.objects, self._remember, self.isolation("the pod-grouper")
            )
        marks.append(("group", time.perf_counter()))
        self._report_problems()
        result = self.scheduler.run_cycle(self.state, time.time())
        marks.append(("schedule", time.perf_counter()))
        if "scheduler" in self.components:
            self._carry_out(result)
        marks.append(("bind+evict", time.perf_counter()))
        if "binder" in self.components:
            self._run_binder()
        if "kubelet" in self.components:
            self.run_pods()
        self.write_status(result)
        marks.append(("status", time.perf_counter()))
        if result.binds or result.evictions:
            phases = ", ".join(
                f"{name} {end - begin:.3f}s"
                for (_, begin), (name, end) in itertools.pairwise(marks)
            )
            log.info(
                "cycle: %d binds, %d evictions (%s)",
                len(result.binds),
                len(result.evictions),
                phases,
            )
        return result

    def _report_problems(self) -> None:
        """Objects the engine could not take in: an event per version, and pending pods held
        back marked PodScheduled=False (the scheduler's, once per message)."""
        report_problems(
            self.state.problems.values(),
            lambda p: self.objects.get((p.kind, p.namespace, p.name)),
            self.events.report,
        )
        if "scheduler" not in self.components:
            return
        for task, problem in held_pods(self.state):
            pod = self.objects.get(("Pod", task.namespace, task.name))
            conditions = pod and held_pod_conditions(pod, problem.message, time.time())
            if conditions:
                self._patch_once(
                    "condition",
                    KINDS["Pod"],
                    task.name,
                    task.namespace,
                    {"status": {"conditions": conditions}},
                    "status",
                )

    def _release_expired_holds(self) -> None:
        expired = set(self.backoff.expired(time.time()))
        if expired:
            for pod in self.of_kind("Pod"):
                if pod["metadata"].get("uid") in expired:
                    self._feed(pod)

    def _carry_out(self, result: CycleResult) -> None:
        """Binds in parallel, evictions, events and PodGroup annotations."""
        for decision, error in zip(
            result.binds, self.pool.map(self.binder.bind, result.binds), strict=True
        ):
            if error:
                self._bind_failed(decision, error)
        for eviction in result.evictions:
            pod = self.objects.get(("Pod", eviction.namespace, eviction.name))
            if pod is not None:
                self.events.record(pod, eviction.reason, eviction.message, WARNING)
            group = self._podgroup(eviction.job)
            if group is not None:
                message = f"pod {eviction.name}: {eviction.message}"
                self.events.record(group, eviction.reason, message, WARNING)
                queue_name = (group.get("spec") or {}).get("queue", "")
                self.evictions[queue_name] = self.evictions.get(queue_name, 0) + 1
        evictor = self.isolation("the evictor")
        deletes = [
            (e, self.pool.submit(self.api.delete, KINDS["Pod"], e.name, e.namespace))
            for e in result.evictions
        ]
        for eviction, deleted in deletes:
            pod = self.objects.get(("Pod", eviction.namespace, eviction.name))
            with evictor.isolated(pod or {"kind": "Pod", "metadata": {"name": eviction.name}}):
                deleted.result()
        self._annotate_podgroups(result)
        for key, reasons in result.unschedulable.items():
            text = reason_text(reasons)
            group = self._podgroup(key)
            if group is not None and self._reported.get(key) != text:
                self._reported[key] = text
                self.events.record(group, "Unschedulable", text, WARNING)

    def _bind_failed(self, decision: Bind, error: str) -> None:
        log.warning("bind of %s/%s failed: %s", decision.namespace, decision.name, error)
        self.state.forget_assumed(decision.namespace, decision.name)
        delay = self.backoff.fail(decision.uid, time.time())
        pod = self.objects.get(("Pod", decision.namespace, decision.name))
        if pod is not None:
            message = f"binding to {decision.node} failed, retrying in {delay:g}s: {error}"
            self.events.record(pod, "FailedBinding", message, WARNING)
            self._feed(pod)

    def _podgroup(self, job_key: str) -> Obj | None:
        namespace, _, name = job_key.partition("/")
        return self.objects.get(("PodGroup", namespace, name))

    def _annotate_podgroups(self, result: CycleResult) -> None:
        """Last-start and stale-since times, kept on the PodGroup so a restart remembers."""
        wanted: dict[str, dict[str, str | None]] = {
            key: {c.LAST_START_ANNOTATION: format_time(t)} for key, t in result.started.items()
        }
        for key, since in result.stale.items():
            wanted.setdefault(key, {})[c.STALE_ANNOTATION] = (
                None if since is None else format_time(since)
            )
        for key, values in wanted.items():
            group = self._podgroup(key)
            if group is None:
                continue
            current = group["metadata"].get("annotations") or {}
            if all(current.get(k) == v for k, v in values.items()):
                continue
            meta = group["metadata"]
            self._patch_once(
                "annotations",
                KINDS["PodGroup"],
                meta["name"],
                meta["namespace"],
                {"metadata": {"annotations": values}},
            )

    def _run_binder(self) -> None:
        requests = self.of_kind("BindRequest")
        pods = {(k[1], k[2]): o for k, o in self.objects.items() if k[0] == "Pod"}
        reservation_pods = [p for (ns, _), p in pods.items() if ns == RESERVATION_NAMESPACE]
        reserved = {
            (p["metadata"].get("labels") or {}).get(c.GPU_GROUP_LABEL, "")
            for p in reservation_pods
            if not p["metadata"].get("deletionTimestamp")
        }
        self.binder.reconcile(requests, pods, reserved, self.isolation("the binder"))
        self.binder.release(reservation_pods, groups_in_use(pods.values(), requests))

    def run_pods(self) -> None:
        """A fake kubelet: bound pods start Running; terminating pods are removed."""
        for pod in self.of_kind("Pod"):
            meta = pod["metadata"]
            if not pod.get("spec", {}).get("nodeName"):
                continue
            if meta.get("deletionTimestamp"):
                self.pool.submit(self.api.delete, KINDS["Pod"], meta["name"], meta["namespace"], 0)
            elif pod.get("status", {}).get("phase") == "Pending":
                self._patch_once(
                    "phase",
                    KINDS["Pod"],
                    meta["name"],
                    meta["namespace"],
                    {"status": {"phase": "Running"}},
                    "status",
                )

    def write_status(self, result: CycleResult) -> None:
        """Queue status (queuecontroller) and PodGroup status (podgroupcontroller; the
        scheduling conditions are the scheduler's) where it changed, written in the
        background."""
        writes: list[tuple[Kind, Obj, Obj]] = []
        if "queuecontroller" in self.components:
            queues = self.of_kind("Queue")
            statuses = queue_statuses(queues, result, lambda q: self._evictions_of(q, queues))
            writes += [
                (KINDS["Queue"], q, statuses[q["metadata"]["name"]])
                for q in queues
                if (q.get("status") or {}) != statuses[q["metadata"]["name"]]
            ]
        owned: set[str] = set()
        if "scheduler" in self.components:
            owned |= _SCHEDULER_STATUS
        if "podgroupcontroller" in self.components:
            owned |= {"phase", "running", "pending", "resourcesStatus"}
        now = time.time()
        for group in self.of_kind("PodGroup") if owned else []:
            meta = group["metadata"]
            job = self.state.jobs.get(f"{meta['namespace']}/{meta['name']}")
            old = group.get("status") or {}
            if job is None:
                problem = self.state.problems.get(("PodGroup", meta["namespace"], meta["name"]))
                if problem is not None and "scheduler" in self.components:
                    status = invalid_podgroup_status(problem, old, now)
                    if status != old:
                        writes.append((KINDS["PodGroup"], group, status))
                continue
            computed = podgroup_status(job, result.unschedulable.get(job.key), old, now)
            status = {k: v for k, v in old.items() if k not in owned}
            status |= {k: v for k, v in computed.items() if k in owned}
            if old != status:
                writes.append((KINDS["PodGroup"], group, status))
        for kind, obj, status in writes:
            old = obj.get("status") or {}
            patch = {"status": {key: None for key in old if key not in status} | status}
            meta = obj["metadata"]
            self._patch_once(
                "status", kind, meta["name"], meta.get("namespace", ""), patch, "status"
            )

    def _evictions_of(self, queue_name: str, queues: list[Obj]) -> int:
        """Evictions in a queue: the count already in its status plus this process's."""
        stored = next(
            (
                queue_figures(q.get("status")).get("evictions", 0)
                for q in queues
                if q["metadata"]["name"] == queue_name
            ),
            0,
        )
        counted = stored if isinstance(stored, int) and stored > 0 else 0  # ours, or none
        return counted + self.evictions.pop(queue_name, 0)

    def _patch_once(
        self, purpose: str, kind: Kind, name: str, namespace: str, patch: Obj, sub: str = ""
    ) -> None:
        """A merge patch in the background, at most one per (purpose, object) at a time: the
        patched object comes back through the change queue, so the cycle never waits for it
        and the next cycle does not send it again (a failed one is tried again)."""
        key = (purpose, kind.kind, namespace, name)
        if key in self._in_flight:
            return
        self._in_flight.add(key)

        def write() -> None:
            try:
                written = self.api.patch(kind, name, patch, namespace, sub)
                self.changes.put(Change(kind.kind, "MODIFIED", written))
            except API_ERRORS as exc:
                log.warning("%s of %s %s not written: %s", purpose, kind.kind, name, exc)
            finally:
                self._in_flight.discard(key)

        self.pool.submit(write)
