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
    (safe from many threads: one httpx client). The node is created with its status but the
    conditions (an apiserver keeps a Node's status on create): KWOK's node-initialize stage
    writes the allocatable and capacity it finds, or its defaults (1k cpu, 1Ti memory, 1M
    pods) when there are none, and its write may land after the patch below: a node created
    bare then ended with KWOK's defaults over the manifest's cpu, memory and pods (seen side
    by side: KAI scheduled on 1Ti of memory where the manifest gave 100M)."""
    kind = BY_KIND["Node"]
    for obj in nodes:
        name = obj["metadata"]["name"]
        body = {k: v for k, v in obj.items() if k != "status"}
        given = {k: v for k, v in (obj.get("status") or {}).items() if k != "conditions"}
        api.create_if_absent(kind, body | ({"status": given} if given else {}))
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
        api.patch(kind, name, {"status": status}, sub="status")
        api.patch(kind, name, {"spec": {"taints": (obj.get("spec") or {}).get("taints") or []}})
