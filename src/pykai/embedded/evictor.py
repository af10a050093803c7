"""The evictor: an eviction deletes the pod, with a Warning event on the pod and on its
PodGroup, and counts toward the PodGroup's queue."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pykai.embedded.events import WARNING, record
from pykai.engine.decisions import CycleResult, Evict
from pykai.model.meta import Obj

if TYPE_CHECKING:
    from pykai.embedded.cluster import EmbeddedCluster


def evictions_counter(queue: str) -> str:
    """The store counter of a queue's evictions."""
    return f"evictions/{queue}"


def evict(cluster: EmbeddedCluster, result: CycleResult) -> bool:
    """Delete every evicted pod that still exists; True if any was deleted."""
    isolation = cluster.isolation("the evictor")
    changed = False
    for decision in result.evictions:
        pod = cluster.store.get("Pod", decision.name, decision.namespace)
        if pod is None or pod["metadata"].get("uid") != decision.uid:
            continue
        with isolation.isolated(pod):
            changed |= _evict(cluster, decision, pod)
    return changed


def _evict(cluster: EmbeddedCluster, decision: Evict, pod: Obj) -> bool:
    """Delete one pod, with its events; True (it is gone)."""
    record(cluster.store, pod, decision.reason, decision.message, WARNING)
    namespace, _, group = decision.job.partition("/")
    podgroup = cluster.store.get("PodGroup", group, namespace)
    if podgroup is not None:
        message = f"pod {decision.name}: {decision.message}"
        record(cluster.store, podgroup, decision.reason, message, WARNING)
        cluster.store.counter(evictions_counter(podgroup["spec"].get("queue", "")))
    cluster.remove("Pod", decision.name, decision.namespace)
    return True
