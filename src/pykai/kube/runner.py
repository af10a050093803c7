"""``pykai run``: the scheduler, pod-grouper, binder, evictor and status writer against a real
API server, in one process, on the same engine as the embedded cluster.

Writes per decision: a bind is one POST of pods/binding (whole-GPU and CPU pods need nothing
else); shared-GPU pods also get their GPU-group labels in one merge patch before the bind; an
eviction is one DELETE; status is written only when it changed.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from concurrent.futures import ThreadPoolExecutor

from pykai.controllers.status import podgroup_status, queue_statuses
from pykai.engine.config import SchedulerConfig
from pykai.engine.decisions import Bind, CycleResult
from pykai.engine.scheduler import Scheduler
from pykai.engine.state import ClusterState
from pykai.grouping.podgrouper import plan_for
from pykai.kube.api import KINDS, ApiError, Kind, KubeApi
from pykai.kube.informer import Change, Informer
from pykai.kube.leader import LeaderElector
from pykai.model import constants as c
from pykai.model.errors import ValidationError
from pykai.model.meta import Obj

log = logging.getLogger("pykai.run")
WATCHED = ("PriorityClass", "Queue", "Node", "PodGroup", "Pod")


def key_of(obj: Obj) -> tuple[str, str, str]:
    """(kind, namespace, name)."""
    meta = obj["metadata"]
    return obj["kind"], meta.get("namespace", "") or "", meta["name"]


class KubeRunner:
    """Keeps a ClusterState in step with the apiserver and acts on each cycle's decisions."""

    def __init__(
        self, api: KubeApi, config: SchedulerConfig | None = None, *, fake_kubelet: bool = False
    ) -> None:
        self.api = api
        self.scheduler = Scheduler(config)
        self.fake_kubelet = fake_kubelet
        self.state = ClusterState()
        self.objects: dict[tuple[str, str, str], Obj] = {}
        self.changes: queue.Queue[Change] = queue.Queue()
        self.pool = ThreadPoolExecutor(max_workers=32, thread_name_prefix="pykai-write")

    def run(
        self, stop: threading.Event, period: float = 1.0, elector: LeaderElector | None = None
    ) -> None:
        """Run cycles every ``period`` seconds until ``stop`` is set; with an elector, only
        while this replica holds the lease (the caches stay warm for a fast failover)."""
        for kind in WATCHED:
            Informer(self.api, KINDS[kind], self.changes, stop).start()
        while not stop.is_set():
            self.drain()
            try:
                if elector is None or elector.step():
                    self.cycle()
            except (ApiError, OSError) as exc:  # the apiserver may be restarting
                log.warning("cycle failed: %s", exc)
            stop.wait(period)
        self.pool.shutdown(wait=True)

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
        """One informer change into the object cache and the engine's state."""
        if change.type == "SYNC":
            fresh = {key_of(o) for o in change.objects}
            for key in [k for k in self.objects if k[0] == change.kind and k not in fresh]:
                self._forget(key)
            for obj in change.objects:
                self._remember(obj)
        elif change.obj is not None and change.type == "DELETED":
            self._forget(key_of(change.obj))
        elif change.obj is not None:
            self._remember(change.obj)

    def _remember(self, obj: Obj) -> None:
        self.objects[key_of(obj)] = obj
        try:
            self.state.upsert(obj)
        except ValidationError as exc:
            log.warning("ignoring invalid %s: %s", obj.get("kind"), exc)

    def _forget(self, key: tuple[str, str, str]) -> None:
        self.objects.pop(key, None)
        self.state.remove(*key)

    def of_kind(self, kind: str) -> list[Obj]:
        """Cached objects of a kind."""
        return [o for k, o in self.objects.items() if k[0] == kind]

    # ---- one cycle ---------------------------------------------------------------------------

    def cycle(self) -> CycleResult:
        """Group new pods, schedule, and carry out the decisions."""
        self.group_pods()
        result = self.scheduler.run_cycle(self.state, time.time())
        list(self.pool.map(self._bind, result.binds))
        for eviction in result.evictions:
            self.api.delete(KINDS["Pod"], eviction.name, eviction.namespace)
        if self.fake_kubelet:
            self.run_pods()
        self.write_status(result)
        return result

    def group_pods(self) -> None:
        """KAI's pod-grouper for pods that have no PodGroup yet."""
        classes = frozenset(pc["metadata"]["name"] for pc in self.of_kind("PriorityClass"))
        for pod in self.of_kind("Pod"):
            annotations = pod["metadata"].get("annotations") or {}
            spec = pod.get("spec") or {}
            if (
                spec.get("schedulerName") != c.SCHEDULER_NAME
                or c.POD_GROUP_ANNOTATION in annotations
            ):
                continue
            plan = plan_for(pod, lambda kind, name, ns: self.objects.get((kind, ns, name)), classes)
            group = plan.to_object()
            if ("PodGroup", plan.namespace, plan.name) not in self.objects:
                try:
                    self._remember(self.api.create(KINDS["PodGroup"], group))
                except ApiError as exc:
                    if exc.status != 409:
                        raise
            patch: Obj = {"metadata": {"annotations": {c.POD_GROUP_ANNOTATION: plan.name}}}
            if plan.subgroup_of_pod:
                patch["metadata"]["labels"] = {c.SUBGROUP_LABEL: plan.subgroup_of_pod}
            self._remember(
                self.api.patch(KINDS["Pod"], pod["metadata"]["name"], patch, plan.namespace)
            )

    def _bind(self, decision: Bind) -> None:
        try:
            if decision.gpu_groups:
                labels = {c.GPU_GROUP_LABEL: decision.gpu_groups[0]}
                labels |= {f"{c.GPU_GROUP_LABEL}/{g}": g for g in decision.gpu_groups[1:]}
                annotations = {"pykai.io/gpu-portion": f"{decision.gpu_portion:.2f}"}
                self.api.patch(
                    KINDS["Pod"],
                    decision.name,
                    {"metadata": {"labels": labels, "annotations": annotations}},
                    decision.namespace,
                )
            self.api.bind(decision.namespace, decision.name, decision.node)
        except ApiError as exc:
            log.warning("bind of %s/%s failed: %s", decision.namespace, decision.name, exc)
            self.state.forget_assumed(decision.namespace, decision.name)

    def run_pods(self) -> None:
        """A fake kubelet: bound pods start Running."""
        for pod in self.of_kind("Pod"):
            if (
                pod.get("spec", {}).get("nodeName")
                and pod.get("status", {}).get("phase") == "Pending"
            ):
                self.pool.submit(
                    self.api.patch,
                    KINDS["Pod"],
                    pod["metadata"]["name"],
                    {"status": {"phase": "Running"}},
                    pod["metadata"]["namespace"],
                    "status",
                )

    def write_status(self, result: CycleResult) -> None:
        """Queue and PodGroup status (status subresource) where it changed."""
        queues = self.of_kind("Queue")
        statuses = queue_statuses(queues, result, lambda _: 0)
        for queue_obj in queues:
            name = queue_obj["metadata"]["name"]
            if (queue_obj.get("status") or {}) != statuses[name]:
                self._write(KINDS["Queue"], queue_obj, statuses[name])
        now = time.time()
        for group in self.of_kind("PodGroup"):
            meta = group["metadata"]
            key = f"{meta['namespace']}/{meta['name']}"
            job = self.state.jobs.get(key)
            if job is None:
                continue
            status = podgroup_status(
                job, result.unschedulable.get(key), group.get("status") or {}, now
            )
            if (group.get("status") or {}) != status:
                self._write(KINDS["PodGroup"], group, status)

    def _write(self, kind: Kind, obj: Obj, status: Obj) -> None:
        """Replace an object's status with a merge patch (keys that are gone are set to null)."""
        old = obj.get("status") or {}
        patch = {key: None for key in old if key not in status} | status
        meta = obj["metadata"]
        namespace = meta.get("namespace", "")
        self._remember(self.api.patch(kind, meta["name"], {"status": patch}, namespace, "status"))
