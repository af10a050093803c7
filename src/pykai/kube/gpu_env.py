"""GPU_PORTION and NVIDIA_VISIBLE_DEVICES for shared-GPU pods on a real cluster.

A container's env cannot change once the pod exists, and the values are known only at bind
time. So, as KAI does, the admission webhook gives each GPU-sharing pod an ``envFrom`` on a
ConfigMap named in annotation ``pykai.io/gpu-config`` (a name of its own, since a pod made with
``generateName`` has no name yet at admission), and the binder creates that ConfigMap, owned
by the pod, before it binds: the kubelet starts the container with the values in its env.

The name is always the webhook's: a pod that arrives with the annotation (copied from another
pod, or set by hand) gets a fresh name, and its envFrom on the old one now names the new one.
The binder only ever creates the ConfigMap, never changes one (its RBAC has no other verb on
ConfigMaps), so a name that is taken can never make it overwrite someone else's. To tell its
own ConfigMap, made before a restart, from someone else's, it writes on the pod, before the
create, what the ConfigMap holds (annotation ``pykai.io/gpu-config-written``).
"""

from __future__ import annotations

import secrets
from typing import Any

from pykai.model import constants as c
from pykai.model.meta import Obj
from pykai.model.pod import gpu_container_index

CONFIG_ANNOTATION = "pykai.io/gpu-config"
WRITTEN_ANNOTATION = "pykai.io/gpu-config-written"  # the binder's record, see written()
SHARING_ANNOTATIONS = frozenset({c.GPU_FRACTION_ANNOTATION, c.GPU_MEMORY_ANNOTATION})


def _pointer(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")


def env_patch(pod: Obj) -> list[dict[str, Any]]:
    """JSONPatch operations giving a GPU-sharing pod its ConfigMap (none for other pods): a
    fresh name, also for a pod that came with one."""
    annotations = pod["metadata"].get("annotations") or {}
    containers = (pod.get("spec") or {}).get("containers") or []
    if not SHARING_ANNOTATIONS & set(annotations) or not containers:
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
    sources = containers[index].get("envFrom") or []
    old = annotations.get(CONFIG_ANNOTATION)
    on_old = [
        i for i, s in enumerate(sources) if old and s.get("configMapRef", {}).get("name") == old
    ]
    path = f"/spec/containers/{index}/envFrom"
    if on_old:  # the pod came with the annotation and its envFrom: both are renewed
        ops.append({"op": "replace", "path": f"{path}/{on_old[0]}", "value": source})
    elif sources:
        ops.append({"op": "add", "path": f"{path}/-", "value": source})
    else:
        ops.append({"op": "add", "path": path, "value": [source]})
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


def written(body: Obj) -> str:
    """The binder's record of what ConfigMap ``body`` holds (annotation WRITTEN_ANNOTATION)."""
    values = " ".join(f"{key}={value}" for key, value in sorted(body["data"].items()))
    return f"{body['metadata']['name']} {values}"
