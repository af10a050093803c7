"""Trace nodes and pods as the Kubernetes objects the scheduler sees.

A node gets its CPU (millicores), memory (MiB), GPUs (``nvidia.com/gpu``) and GPU model (label
``nvidia.com/gpu.product``). A pod asks for whole GPUs as ``nvidia.com/gpu``, a share of one GPU
with the ``gpu-fraction`` annotation, and its allowed GPU models (``gpu_spec``) with a required
node affinity on the GPU model label.
"""

from __future__ import annotations

from typing import Any

from pykai.model import builders
from pykai.model import constants as c
from pykai.model.meta import Obj
from pykai.sim.openb import MILLI, TraceNode, TracePod


def node_object(node: TraceNode, name: str | None = None) -> Obj:
    """The Node for a trace node, named ``name`` (default: its own)."""
    labels = {c.GPU_PRODUCT_NODE_LABEL: node.model} if node.model else {}
    obj = builders.node(
        name or node.name,
        gpus=node.gpus,
        cpu=f"{node.cpu_milli}m",
        memory=f"{node.memory_mib}Mi",
        labels=labels,
    )
    obj["status"]["allocatable"]["pods"] = obj["status"]["capacity"]["pods"] = "100000"
    return obj


def pod_object(
    pod: TracePod,
    name: str | None = None,
    *,
    namespace: str = "default",
    annotations: dict[str, str] | None = None,
) -> Obj:
    """The Pod for a trace pod, named ``name`` (default: its own), ``annotations`` added."""
    extra = dict(annotations or {})
    if pod.is_sharing:
        extra[c.GPU_FRACTION_ANNOTATION] = f"{pod.gpu_milli / MILLI:g}"
    obj = builders.pod(
        name or pod.name,
        namespace=namespace,
        gpus=0 if pod.is_sharing else pod.num_gpu,
        cpu=f"{pod.cpu_milli}m",
        memory=f"{pod.memory_mib}Mi",
        annotations=extra,
    )
    if pod.gpu_spec:
        requirement: dict[str, Any] = {
            "key": c.GPU_PRODUCT_NODE_LABEL,
            "operator": "In",
            "values": list(pod.gpu_spec),
        }
        obj["spec"]["affinity"] = {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [{"matchExpressions": [requirement]}]
                }
            }
        }
    return obj
