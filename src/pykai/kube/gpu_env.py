"""GPU_PORTION and NVIDIA_VISIBLE_DEVICES for shared-GPU pods on a real cluster.

A container's env cannot change once the pod exists, and the values are known only at bind
time. So, as KAI does, the admission webhook gives each GPU-sharing pod an ``envFrom`` on a
ConfigMap named in annotation ``pykai.io/gpu-config`` (a name of its own, since a pod made with
``generateName`` has no name yet at admission), and the binder creates that ConfigMap, owned
by the pod, before it binds: the kubelet starts the container with the values in its env.
"""

from __future__ import annotations

import secrets
from typing import Any

from pykai.model import constants as c
from pykai.model.meta import Obj
from pykai.model.pod import gpu_container_index

CONFIG_ANNOTATION = "pykai.io/gpu-config"
SHARING_ANNOTATIONS = frozenset({c.GPU_FRACTION_ANNOTATION, c.GPU_MEMORY_ANNOTATION})


def _pointer(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")


def env_patch(pod: Obj) -> list[dict[str, Any]]:
    """JSONPatch operations giving a GPU-sharing pod its ConfigMap (none for other pods)."""
    annotations = pod["metadata"].get("annotations") or {}
    containers = (pod.get("spec") or {}).get("containers") or []
    if (
        not SHARING_ANNOTATIONS & set(annotations)
        or not containers
        or CONFIG_ANNOTATION in annotations
    ):
        return []
    name = f"pykai-gpu-{secrets.token_hex(6)}"
    ops: list[dict[str, Any]] = (
        [
            {
                "op": "add",
                "path": f"/metadata/annotations/{_pointer(CONFIG_ANNOTATION)}",
                "value": name,
            }
        ]
        if "annotations" in pod["metadata"]
        else [{"op": "add", "path": "/metadata/annotations", "value": {CONFIG_ANNOTATION: name}}]
    )
    index = gpu_container_index(pod)
    source = {"configMapRef": {"name": name}}
    if containers[index].get("envFrom"):
        ops.append({"op": "add", "path": f"/spec/containers/{index}/envFrom/-", "value": source})
    else:
        ops.append({"op": "add", "path": f"/spec/containers/{index}/envFrom", "value": [source]})
    return ops


def config_map(pod: Obj, portion: str, devices: list[str]) -> Obj | None:
    """The ConfigMap the binder writes for ``pod`` (None if the webhook gave it none)."""
    meta = pod["metadata"]
    name = (meta.get("annotations") or {}).get(CONFIG_ANNOTATION)
    if not name:
        return None
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": name,
            "namespace": meta["namespace"],
            "ownerReferences": [
                {"apiVersion": "v1", "kind": "Pod", "name": meta["name"], "uid": meta["uid"]}
            ],
        },
        "data": {c.GPU_PORTION_ENV: portion, c.VISIBLE_DEVICES_ENV: ",".join(devices)},
    }
