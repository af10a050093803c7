"""The binder and the evictor: carry a cycle's decisions into the store.

A bind sets spec.nodeName; a pod on shared GPUs also gets KAI's GPU-group labels
(``runai-gpu-group=<group>``, ``runai-gpu-group/<group>=<group>`` for further devices) and the
values KAI's binder gives the container: GPU_PORTION and NVIDIA_VISIBLE_DEVICES.
An eviction deletes the pod, with events on the pod and its PodGroup.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pykai.embedded.events import record
from pykai.engine.decisions import Bind, CycleResult
from pykai.model import constants as c
from pykai.model.meta import Obj, format_time

if TYPE_CHECKING:
    from pykai.embedded.cluster import EmbeddedCluster

PORTION_ANNOTATION = "pykai.io/gpu-portion"
DEVICES_ANNOTATION = "pykai.io/visible-devices"


def bind(cluster: EmbeddedCluster, result: CycleResult) -> bool:
    """Apply every Bind, and the PodGroup annotations the cycle asks for."""
    changed = False
    for decision in result.binds:
        pod = cluster.store.get("Pod", decision.name, decision.namespace)
        if pod is None or pod["metadata"].get("uid") != decision.uid:
            continue
        pod["spec"]["nodeName"] = decision.node
        if decision.gpu_groups:
            _share_gpus(pod, decision)
        cluster.update(pod)
        record(
            cluster,
            pod,
            "Scheduled",
            f"Successfully assigned {decision.namespace}/{decision.name} to {decision.node}",
        )
        changed = True
    annotations = {
        key: {c.LAST_START_ANNOTATION: format_time(t)} for key, t in result.started.items()
    }
    for key, since in result.stale.items():
        annotations.setdefault(key, {})[c.STALE_ANNOTATION] = (
            "" if since is None else format_time(since)
        )
    for key, values in sorted(annotations.items()):
        changed |= _annotate_podgroup(cluster, key, values)
    return changed


def evict(cluster: EmbeddedCluster, result: CycleResult) -> bool:
    """Delete evicted pods, with a Warning event on the pod and its PodGroup."""
    for decision in result.evictions:
        pod = cluster.store.get("Pod", decision.name, decision.namespace)
        if pod is None:
            continue
        record(cluster, pod, decision.reason, decision.message, "Warning")
        namespace, _, group = decision.job.partition("/")
        podgroup = cluster.store.get("PodGroup", group, namespace)
        if podgroup is not None:
            record(
                cluster,
                podgroup,
                decision.reason,
                f"pod {decision.name}: {decision.message}",
                "Warning",
            )
            cluster.count_eviction(podgroup["spec"].get("queue", ""))
        cluster.remove("Pod", decision.name, decision.namespace)
    return bool(result.evictions)


def _share_gpus(pod: Obj, decision: Bind) -> None:
    labels = pod["metadata"].setdefault("labels", {})
    first, *others = decision.gpu_groups
    labels[c.GPU_GROUP_LABEL] = first
    for group in others:
        labels[f"{c.GPU_GROUP_LABEL}/{group}"] = group
    portion = f"{decision.gpu_portion:.2f}"
    devices = ",".join(decision.gpu_groups)
    annotations = pod["metadata"].setdefault("annotations", {})
    annotations[PORTION_ANNOTATION] = portion
    annotations[DEVICES_ANNOTATION] = devices
    container = _gpu_container(pod)
    if container is not None:
        env: list[dict[str, Any]] = [
            e
            for e in container.get("env") or []
            if e.get("name") not in ("GPU_PORTION", "NVIDIA_VISIBLE_DEVICES")
        ]
        env += [
            {"name": "GPU_PORTION", "value": portion},
            {"name": "NVIDIA_VISIBLE_DEVICES", "value": devices},
        ]
        container["env"] = env


def _gpu_container(pod: Obj) -> dict[str, Any] | None:
    """The container named by gpu-fraction-container-name, else the first one."""
    containers: list[dict[str, Any]] = pod["spec"].get("containers") or []
    wanted = pod["metadata"].get("annotations", {}).get(c.GPU_FRACTION_CONTAINER_ANNOTATION)
    for container in containers:
        if wanted and container.get("name") == wanted:
            return container
    return containers[0] if containers else None


def _annotate_podgroup(cluster: EmbeddedCluster, key: str, values: dict[str, str]) -> bool:
    namespace, _, name = key.partition("/")
    podgroup = cluster.store.get("PodGroup", name, namespace)
    if podgroup is None:
        return False
    annotations = podgroup["metadata"].setdefault("annotations", {})
    wanted = {k: v for k, v in values.items() if v}
    gone = [k for k, v in values.items() if not v and k in annotations]
    if all(annotations.get(k) == v for k, v in wanted.items()) and not gone:
        return False
    annotations.update(wanted)
    for k in gone:
        del annotations[k]
    cluster.update(podgroup)
    return True
