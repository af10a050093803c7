"""The pods' controller of a ``recreate_evicted`` scenario, played by the side-by-side harness
on a real cluster, the same way on both sides.

KAI's integration tests give every fake pod a controlling owner, and their framework turns an
evicted task back into a Pending one after each round (tests/test_scenarios.py, "How KAI's
test framework maps onto this"). On a real cluster the pod the scheduler evicted is deleted;
this controller creates it again from its manifest, Pending.

Contract of ``PodController``: ``track(objects)`` remembers the pods among a step's applied
objects that have a controlling ownerReference (``controlled``); ``forget(key)`` drops one the
scenario deletes itself (a ``delete`` step: nothing recreates it); ``restore(api, present)``
creates again, from its manifest as ``pending`` makes it (no ``nodeName``, no status, no
``deletionTimestamp``), every tracked pod whose ``namespace/name`` is not in ``present`` (the
pods the caller just read), and returns how many it created (a pod of that name created
meanwhile by someone else is left alone and not counted); ``recreated`` is the running total.
``start(api)`` also watches pods (on ``api``, a client of its own: the watch runs in a thread)
and creates a tracked pod again as soon as its deletion arrives, as a controller reacts to
the event: a scheduler's next cycle (pykai's every 0.3 s) should find it back, as KAI's test
framework restores it before the next round (with a stale-gang grace of 0 s, a gang missing
its evicted pods for one cycle is evicted whole); ``stop`` ends the watch within a few
seconds. ``restore`` stays the check after each read (a deletion the watch missed).

The owner itself is never created. kube-controller-manager's garbage collector deletes a pod
whose controlling owner is of a kind the apiserver serves but does not exist (measured on
LocalCluster, v1.34: such pods are gone within seconds), but it never deletes one whose owner
is of a kind the apiserver does not serve: it cannot map the kind and retries the owner forever
(k8s.io/kubernetes v1.34 pkg/controller/garbagecollector/garbagecollector.go attemptToDeleteWorker,
restMappingError; operations.go apiResource). The ported cases' owners are ``kai.test/v1
TestJob``, so they stay. A real owner would not do either: KAI's podgrouper would find it and
group the pod into a PodGroup of its own, ``pg-<owner>-<uid>``, re-annotating the pod
(pkg/podgrouper/pod_controller.go Reconcile, plugins/defaultgrouper); with an owner it cannot
read it logs an error and leaves the pod's ``pod-group-name`` alone.
``expressible.plan`` lists owners the garbage collector would delete as not expressible."""

from __future__ import annotations

import copy
import threading
from collections.abc import Iterable

from pykai.compare.record import pod_key
from pykai.kube.api import ApiError, KubeApi
from pykai.model.kinds import BY_KIND
from pykai.model.meta import Obj


def controlled(obj: Obj) -> bool:
    """Whether ``obj`` is a pod with a controlling ownerReference."""
    refs = obj["metadata"].get("ownerReferences") or []
    return obj.get("kind") == "Pod" and any(ref.get("controller") for ref in refs)


def pending(manifest: Obj) -> Obj:
    """A pod's manifest as its controller creates it again: not bound, no status, not
    terminating."""
    pod = copy.deepcopy(manifest)
    pod["spec"].pop("nodeName", None)
    pod.pop("status", None)
    pod["metadata"].pop("deletionTimestamp", None)
    pod["metadata"]["namespace"] = pod["metadata"].get("namespace") or "default"
    return pod


class PodController:
    """The controller of a scenario's controlled pods (see the module's contract)."""

    def __init__(self) -> None:
        self.manifests: dict[str, Obj] = {}
        self.recreated = 0
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None

    def track(self, objects: Iterable[Obj]) -> None:
        """Remember the controlled pods among ``objects``."""
        with self._lock:
            for obj in objects:
                if controlled(obj):
                    self.manifests[pod_key(obj)] = obj

    def forget(self, key: str) -> None:
        """The scenario deleted pod ``key`` itself: nothing creates it again."""
        with self._lock:
            self.manifests.pop(key, None)

    def restore(self, api: KubeApi, present: Iterable[str]) -> int:
        """Create again the tracked pods not in ``present``; how many were created."""
        here = set(present)
        with self._lock:
            missing = [m for key, m in self.manifests.items() if key not in here]
        return sum(self._create(api, manifest) for manifest in missing)

    def _create(self, api: KubeApi, manifest: Obj) -> int:
        """1 if the pod was created again (0: one of its name exists)."""
        if api.create_if_absent(BY_KIND["Pod"], pending(manifest)) is None:
            return 0
        with self._lock:
            self.recreated += 1
        return 1

    def start(self, api: KubeApi) -> None:
        """Watch pods in a thread of its own, creating again each tracked pod whose deletion
        arrives (see the module's contract)."""
        self._stopping.clear()
        self._thread = threading.Thread(target=self._watch, args=(api,), daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """End the watch (it notices within its 2 s timeout)."""
        self._stopping.set()
        if self._thread is not None:
            self._thread.join(timeout=30)
        self._thread = None

    def _watch(self, api: KubeApi) -> None:
        version = ""
        while not self._stopping.is_set():
            try:
                if not version:
                    version = api.list(BY_KIND["Pod"], limit=1)[1]
                for event, pod in api.watch(BY_KIND["Pod"], version, timeout=2):
                    version = str(pod["metadata"].get("resourceVersion") or version)
                    if event == "DELETED":
                        with self._lock:
                            manifest = self.manifests.get(pod_key(pod))
                        if manifest is not None:
                            self._create(api, manifest)
                    if self._stopping.is_set():
                        return
            except (ApiError, OSError, ValueError):
                version = ""  # expired or broken: list again (restore covers the gap)
