"""A fake kubelet: pods bound to a node that exists start Running (as kwok does)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pykai.engine.jobs import TaskStatus
from pykai.model.meta import Obj, format_time

if TYPE_CHECKING:
    from pykai.embedded.cluster import EmbeddedCluster

_CONDITIONS = ("PodScheduled", "Initialized", "ContainersReady", "Ready")


def run_pods(cluster: EmbeddedCluster) -> bool:
    """Mark bound, not yet running pods Running; True if any changed."""
    bound = [task for task in cluster.state.tasks.values() if task.status == TaskStatus.BOUND]
    stamp = format_time(cluster.now())
    isolation = cluster.isolation("the kubelet")
    changed = False
    for task in bound:
        if cluster.store.get("Node", task.node) is None:
            continue  # a pod on a node that does not exist stays Pending
        pod = cluster.store.get("Pod", task.name, task.namespace)
        if pod is not None:
            with isolation.isolated(pod):
                changed |= _start(cluster, pod, stamp)
    return changed


def _start(cluster: EmbeddedCluster, pod: Obj, stamp: str) -> bool:
    """A bound, pending pod starts Running; True if it did."""
    if (pod.get("status") or {}).get("phase", "Pending") != "Pending":
        return False
    pod["status"] = {
        **(pod.get("status") or {}),
        "phase": "Running",
        "startTime": stamp,
        "conditions": [
            {"type": kind, "status": "True", "lastTransitionTime": stamp} for kind in _CONDITIONS
        ],
    }
    cluster.update(pod)
    return True
