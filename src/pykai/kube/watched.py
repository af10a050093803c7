"""What ``pykai run`` watches: the kinds each component reads, and their informers.

This module is light on purpose (no engine): ``pykai run`` starts the informers as soon as
it has a client, so the apiserver answers the first lists while the process imports the
engine. The kinds the engine's decisions and the controllers read are listed first; the kinds
only Kueue's pass reads (it waits until all of them have listed, see
``KubeRunner.kueue_ready``) follow once those are in, so they do not compete with the large
first lists (pods, PodGroups, nodes) for the apiserver and the interpreter.
"""

from __future__ import annotations

import queue
import threading
import time

from pykai.kube.api import KubeApi
from pykai.kube.informer import Change, Informer
from pykai.model.kinds import BY_KIND
from pykai.model.kueue.jobs import MANAGED_KINDS
from pykai.model.partition import PARTITIONED_KINDS, Partition

ENGINE_KINDS = ("PriorityClass", "Queue", "Node", "PodGroup", "Pod", "BindRequest")
# what Kueue's controllers read, where Kueue's CRDs are installed (they run once all have listed)
KUEUE_READS = (
    "ClusterQueue",
    "LocalQueue",
    "Workload",
    "Cohort",
    "ResourceFlavor",
    "WorkloadPriorityClass",
    "AdmissionCheck",
    "ProvisioningRequestConfig",
    "PodTemplate",  # the pod sets of the ProvisioningRequests admission checks make
    "Namespace",  # their labels, for a ClusterQueue's namespaceSelector
)
# answered by the cluster autoscaler, whose CRD may be missing: never waited for
PROVISIONING = ("ProvisioningRequest",)
# the kinds each component reads (the scheduler's Kueue pass apart: KUEUE_ONLY)
NEEDS: dict[str, tuple[str, ...]] = {
    "scheduler": (*ENGINE_KINDS, *MANAGED_KINDS),
    "binder": ("Pod", "BindRequest"),
    "podgrouper": ("Pod", "PodGroup", "PriorityClass"),
    "queuecontroller": ENGINE_KINDS,
    "podgroupcontroller": ENGINE_KINDS,
    # the check-capacity stand-in places a request's pods on the nodes with the engine
    "provisioning": (*ENGINE_KINDS, "ProvisioningRequest", "PodTemplate"),
}
KUEUE_ONLY = (*KUEUE_READS, *PROVISIONING)  # read by the scheduler's Kueue pass
# owners the pod-grouper reads when they exist (a missing CRD only means no such owners)
OWNER_KINDS = (
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
# not waited for (CRDs may lack)
OPTIONAL = frozenset(OWNER_KINDS) | frozenset(KUEUE_READS) | frozenset(PROVISIONING)


# the embedded cluster's stand-ins for parts a real cluster has: refused by name
EMBEDDED_ONLY = {
    "kubelet": "the kubelets (KWOK on `pykai local-cluster up`)",
    "kuberay": "the KubeRay operator (`pykai local-cluster up` runs the real one)",
}


def parse_components(text: str) -> frozenset[str]:
    """``scheduler,binder`` -> the set; raises ValueError naming an unknown component."""
    wanted = frozenset(part.strip() for part in text.split(",") if part.strip())
    for name in sorted(wanted & set(EMBEDDED_ONLY)):
        raise ValueError(
            f"{name} is a stand-in of the embedded cluster only; on a real cluster "
            f"{EMBEDDED_ONLY[name]} do its work"
        )
    unknown = sorted(wanted - set(NEEDS))
    if unknown or not wanted:
        raise ValueError(
            f"unknown component(s) {', '.join(unknown) or '(none given)'}; "
            f"choose from {', '.join(NEEDS)}"
        )
    return wanted


def first_kinds(components: frozenset[str]) -> list[str]:
    """The kinds listed first: what the chosen components read, Kueue's pass apart."""
    kinds = {kind for name in components for kind in NEEDS[name]}
    if "podgrouper" in components:
        kinds |= set(OWNER_KINDS)
    return sorted(kinds)


def later_kinds(components: frozenset[str]) -> list[str]:
    """The kinds only the scheduler's Kueue pass reads, listed after the first ones."""
    if "scheduler" not in components:
        return []
    return sorted(set(KUEUE_ONLY) - set(first_kinds(components)))


class Watch:
    """The informers of a process's kinds, feeding one queue of changes; ``start`` lists the
    first kinds, ``start_later`` the others (once the first are in). With a ``partition`` (a
    scheduling shard's), the partitioned kinds are listed and watched through its label
    selector: the process never sees another shard's nodes, queues, PodGroups or
    BindRequests."""

    def __init__(
        self, api: KubeApi, components: frozenset[str], partition: Partition | None = None
    ) -> None:
        self.api = api
        self.partition = partition
        self.first = first_kinds(components)
        self.later = later_kinds(components)
        self.kinds = sorted({*self.first, *self.later})
        self.changes: queue.Queue[Change] = queue.Queue()
        self.stop = threading.Event()
        self.informers: list[Informer] = []

    def start(self) -> None:
        """Start the informers of the first kinds (once)."""
        if not self.informers:
            self._start(self.first)

    def start_later(self) -> None:
        """Start the informers of the later kinds (once)."""
        if len(self.informers) == len(self.first):
            self._start(self.later)

    def _start(self, kinds: list[str]) -> None:
        selector = self.partition.selector() if self.partition is not None else ""
        for kind in kinds:
            chosen = selector if kind in PARTITIONED_KINDS else ""
            informer = Informer(self.api, BY_KIND[kind], self.changes, self.stop, chosen)
            self.informers.append(informer)
            informer.start()

    def join(self, timeout: float) -> None:
        """Wait for the stopped informers to end, at most ``timeout`` seconds in all."""
        end = time.monotonic() + timeout
        for informer in self.informers:
            informer.join(max(0.0, end - time.monotonic()))
