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
from collections.abc import Iterable

from pykai.compare.record import pod_key
from pykai.kube.api import KubeApi
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

    def track(self, objects: Iterable[Obj]) -> None:
        """Remember the controlled pods among ``objects``."""
        for obj in objects:
            if controlled(obj):
                self.manifests[pod_key(obj)] = obj

    def forget(self, key: str) -> None:
        """The scenario deleted pod ``key`` itself: nothing creates it again."""
        self.manifests.pop(key, None)

    def restore(self, api: KubeApi, present: Iterable[str]) -> int:
        """Create again the tracked pods not in ``present``; how many were created."""
        here = set(present)
        created = 0
        for key, manifest in self.manifests.items():
            if key not in here and api.create_if_absent(BY_KIND["Pod"], pending(manifest)):
                created += 1
        self.recreated += created
        return created
