"""The binder: carries a cycle's binds, and the PodGroup annotations it asks for, into the store.

A bind sets spec.nodeName; a pod on shared GPUs also gets KAI's GPU-group labels
(``runai-gpu-group=<group>``, ``runai-gpu-group/<group>=<group>`` for further devices) and the
values KAI's binder gives the container: GPU_PORTION and NVIDIA_VISIBLE_DEVICES.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pykai.embedded.events import record
from pykai.engine.decisions import Bind, CycleResult
from pykai.model import constants as c
from pykai.model.meta import Obj, format_time
from pykai.model.pod import gpu_container_index, gpu_group_labels

if TYPE_CHECKING:
    from pykai.embedded.cluster import EmbeddedCluster


def bind(cluster: EmbeddedCluster, result: CycleResult) -> bool:
    """Apply every Bind, and the PodGroup annotations the cycle asks for (last start time,
    stale-since time); True if anything was written."""
    isolation = cluster.isolation("the binder")
    changed = False
    for decision in result.binds:
        pod = cluster.store.get("Pod", decision.name, decision.namespace)
        if pod is None:
            cluster.state.forget_assumed(decision.namespace, decision.name)
            continue
        with isolation.isolated(pod):
            changed |= _bind_pod(cluster, decision, pod)
    annotations = {
        key: {c.LAST_START_ANNOTATION: format_time(t)} for key, t in result.started.items()
    }
    for key, since in result.stale.items():
        annotations.setdefault(key, {})[c.STALE_ANNOTATION] = (
            "" if since is None else format_time(since)
        )
    for key, values in sorted(annotations.items()):
        namespace, _, name = key.partition("/")
        group = cluster.store.get("PodGroup", name, namespace)
        if group is not None:
            with isolation.isolated(group):
                changed |= _annotate_podgroup(cluster, group, values)
    return changed


def _bind_pod(cluster: EmbeddedCluster, decision: Bind, pod: Obj) -> bool:
    """Bind one pod; a pod that was replaced or is already bound is left alone (and the engine
    stops assuming the bind)."""
    if pod["metadata"].get("uid") != decision.uid or (pod.get("spec") or {}).get("nodeName"):
        cluster.state.forget_assumed(decision.namespace, decision.name)
        return False
    pod.setdefault("spec", {})["nodeName"] = decision.node
    if decision.gpu_groups:
        _share_gpus(pod, decision)
    cluster.update(pod)
    message = f"Successfully assigned {decision.namespace}/{decision.name} to {decision.node}"
    record(cluster.store, pod, "Scheduled", message)
    return True


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


def _annotate_podgroup(cluster: EmbeddedCluster, group: Obj, values: dict[str, str]) -> bool:
    """Set the non-empty values and remove the empty ones; True if the PodGroup changed."""
    annotations = group["metadata"].setdefault("annotations", {})
    wanted = {k: v for k, v in values.items() if v}
    gone = [k for k, v in values.items() if not v and k in annotations]
    if all(annotations.get(k) == v for k, v in wanted.items()) and not gone:
        return False
    annotations.update(wanted)
    for k in gone:
        del annotations[k]
    cluster.update(group)
    return True
