"""Fake GPU nodes on a real API server: Node objects with GPUs in allocatable, marked Ready
with the not-ready taint cleared, as a kubelet and the node-lifecycle controller would."""

from __future__ import annotations

from pykai.kube.api import KubeApi
from pykai.model import builders
from pykai.model.kinds import BY_KIND
from pykai.model.meta import Obj, format_time


def gpu_nodes(count: int, gpus_per_node: int) -> list[Obj]:
    """``count`` node objects named gpu-node-0.. with ``gpus_per_node`` GPUs each."""
    return [builders.node(f"gpu-node-{i}", gpus=gpus_per_node) for i in range(count)]


def create_ready_nodes(api: KubeApi, nodes: list[Obj], now: float) -> None:
    """Create (or keep) each node, then mark it Ready and clear its taints from admission
    (safe from many threads: one httpx client).

    A node is created with its status (allocatable, capacity, Ready), as a kubelet registers
    one, so that no revision of it is ever not Ready. KWOK's node-initialize stage takes a node
    that is not Ready and writes its status from the object it read, with its own defaults
    (cpu 1k, memory 1Ti) where that had no allocatable. A node created bare and patched after
    lost that race now and then: KWOK's write, made from its earlier read, replaced the patched
    capacity, and the schedulers saw 1,000 cores (found side by side with KAI, scenario 92).
    The patches after the create do the same for a node that existed already."""
    kind = BY_KIND["Node"]
    for obj in nodes:
        name = obj["metadata"]["name"]
        stamp = format_time(now)
        status = dict(obj.get("status") or {})
        status["conditions"] = [
            {
                "type": "Ready",
                "status": "True",
                "reason": "KubeletReady",
                "lastHeartbeatTime": stamp,
                "lastTransitionTime": stamp,
                "message": "pykai fake kubelet",
            },
        ]
        api.create_if_absent(kind, {**obj, "status": status})
        api.patch(kind, name, {"status": status}, sub="status")
        api.patch(kind, name, {"spec": {"taints": (obj.get("spec") or {}).get("taints") or []}})
