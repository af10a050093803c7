"""A bind on the embedded cluster: spec.nodeName, and for a pod on shared GPUs KAI's GPU-group
labels (``runai-gpu-group=<group>``, ``runai-gpu-group/<group>=<group>`` for further devices)
and the values KAI's binder gives the container: GPU_PORTION and NVIDIA_VISIBLE_DEVICES (also
as annotations, for kubectl)."""

from __future__ import annotations

import copy
from typing import Any

from pykai.engine.decisions import Bind
from pykai.model import constants as c
from pykai.model.meta import Obj
from pykai.model.pod import gpu_container_index, gpu_group_labels


def bound_pod(pod: Obj, decision: Bind) -> Obj:
    """The pod as the bind leaves it (``pod`` itself is left as it was; what the bind does
    not change is shared with it)."""
    bound = {**pod, "spec": {**(pod.get("spec") or {}), "nodeName": decision.node}}
    if decision.gpu_groups:  # labels, annotations and a container's env change too
        bound = copy.deepcopy(bound)
        _share_gpus(bound, decision)
    return bound


def _share_gpus(pod: Obj, decision: Bind) -> None:
    pod["metadata"].setdefault("labels", {}).update(gpu_group_labels(decision.gpu_groups))
    values = {
        c.GPU_PORTION_ENV: f"{decision.gpu_portion:.2f}",
        c.VISIBLE_DEVICES_ENV: ",".join(decision.gpu_groups),
    }
    annotations = pod["metadata"].setdefault("annotations", {})
    annotations[c.GPU_PORTION_ANNOTATION] = values[c.GPU_PORTION_ENV]
    annotations[c.VISIBLE_DEVICES_ANNOTATION] = values[c.VISIBLE_DEVICES_ENV]
    containers: list[dict[str, Any]] = pod["spec"].get("containers") or []
    if containers:
        container = containers[gpu_container_index(pod)]
        env: list[dict[str, Any]] = [
            e for e in container.get("env") or [] if e.get("name") not in values
        ]
        container["env"] = env + [{"name": k, "value": v} for k, v in values.items()]
