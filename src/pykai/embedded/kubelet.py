"""A fake kubelet: pods bound to an existing node start Running (as kwok does)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pykai.model.meta import format_time

if TYPE_CHECKING:
    from pykai.embedded.cluster import EmbeddedCluster


def run_pods(cluster: EmbeddedCluster) -> bool:
    """Mark bound Pending pods Running; True if any changed."""
    nodes = {n["metadata"]["name"] for n in cluster.store.select("Node")}
    changed = False
    stamp = format_time(cluster.now())
    for pod in cluster.store.select("Pod"):
        node = (pod.get("spec") or {}).get("nodeName")
        status = pod.setdefault("status", {})
        if not node or node not in nodes or status.get("phase", "Pending") != "Pending":
            continue
        if pod["metadata"].get("deletionTimestamp"):
            continue
        status.update(
            {
                "phase": "Running",
                "startTime": stamp,
                "conditions": [
                    {"type": kind, "status": "True", "lastTransitionTime": stamp}
                    for kind in ("PodScheduled", "Initialized", "ContainersReady", "Ready")
                ],
            }
        )
        cluster.update(pod)
        changed = True
    return changed
