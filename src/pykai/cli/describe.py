"""``pykai describe``: a human account of one object, with its events."""

from __future__ import annotations

from typing import Any

import yaml

from pykai.cli.printers import age, table
from pykai.embedded.cluster import EmbeddedCluster
from pykai.model import constants as c
from pykai.model.meta import Obj


def describe(cluster: EmbeddedCluster, obj: Obj) -> str:
    """The description of ``obj`` (its kind decides the sections)."""
    kind = obj["kind"]
    meta = obj["metadata"]
    lines = [f"Name:         {meta['name']}"]
    if meta.get("namespace"):
        lines.append(f"Namespace:    {meta['namespace']}")
    lines.append(f"Kind:         {kind}")
    lines += _map("Labels", meta.get("labels") or {})
    lines += _map("Annotations", meta.get("annotations") or {})
    section = _SECTIONS.get(kind)
    lines += section(cluster, obj) if section else _yaml_block("Spec", obj.get("spec"))
    lines += _events(cluster, obj)
    return "\n".join(lines)


def _map(title: str, values: dict[str, str]) -> list[str]:
    if not values:
        return [f"{title + ':':<14}<none>"]
    items = sorted(values.items())
    first, *rest = items
    return [f"{title + ':':<14}{first[0]}={first[1]}", *(f"{'':<14}{k}={v}" for k, v in rest)]


def _yaml_block(title: str, value: Any) -> list[str]:
    if not value:
        return []
    body = yaml.safe_dump(value, sort_keys=False).rstrip().splitlines()
    return [f"{title}:", *(f"  {line}" for line in body)]


def _pod(cluster: EmbeddedCluster, pod: Obj) -> list[str]:
    spec = pod.get("spec") or {}
    status = pod.get("status") or {}
    annotations = pod["metadata"].get("annotations") or {}
    lines = [
        f"Node:         {spec.get('nodeName') or '<none>'}",
        f"Status:       {status.get('phase', 'Pending')}",
        f"Scheduler:    {spec.get('schedulerName', 'default-scheduler')}",
        f"PodGroup:     {annotations.get(c.POD_GROUP_ANNOTATION, '<none>')}",
    ]
    gpu = [
        f"{k}={annotations[k]}"
        for k in (c.GPU_FRACTION_ANNOTATION, c.GPU_MEMORY_ANNOTATION)
        if k in annotations
    ]
    group = (pod["metadata"].get("labels") or {}).get(c.GPU_GROUP_LABEL)
    if gpu or group:
        lines.append(f"GPU sharing:  {', '.join(gpu) or '-'}; GPU group {group or '<none>'}")
    lines.append("Containers:")
    for container in spec.get("containers") or []:
        resources = container.get("resources") or {}
        lines.append(f"  {container.get('name')}:")
        for key in ("requests", "limits"):
            if resources.get(key):
                lines.append(
                    f"    {key.capitalize()}: "
                    + ", ".join(f"{k}={v}" for k, v in resources[key].items())
                )
    return lines


def _podgroup(cluster: EmbeddedCluster, podgroup: Obj) -> list[str]:
    spec = podgroup.get("spec") or {}
    status = podgroup.get("status") or {}
    lines = [
        f"Queue:        {spec.get('queue')}",
        f"MinMember:    {spec.get('minMember', 1)}",
        f"Priority:     {spec.get('priorityClassName') or '<none>'}",
        f"Phase:        {status.get('phase', 'Pending')}"
        f"  (running {status.get('running', 0)}, pending {status.get('pending', 0)})",
    ]
    conditions = status.get("schedulingConditions") or []
    if conditions:
        lines.append("Scheduling conditions:")
        for condition in conditions:
            for reason in condition.get("reasons") or []:
                lines.append(f"  {reason['reason']}: {reason['message']}")
    namespace = podgroup["metadata"]["namespace"]
    members = [
        p
        for p in cluster.list("Pod", namespace)
        if (p["metadata"].get("annotations") or {}).get(c.POD_GROUP_ANNOTATION)
        == podgroup["metadata"]["name"]
    ]
    if members:
        lines.append("Pods:")
        rows = [
            [
                p["metadata"]["name"],
                (p.get("status") or {}).get("phase", "Pending"),
                (p.get("spec") or {}).get("nodeName") or "<none>",
            ]
            for p in members
        ]
        lines += ["  " + line for line in table(["NAME", "STATUS", "NODE"], rows).splitlines()]
    return lines


def _queue(cluster: EmbeddedCluster, queue: Obj) -> list[str]:
    spec = queue.get("spec") or {}
    status = queue.get("status") or {}
    lines = [
        f"Parent:       {spec.get('parentQueue') or '<none>'}",
        f"Children:     {', '.join(status.get('childQueues') or []) or '<none>'}",
        f"Priority:     {spec.get('priority', c.DEFAULT_QUEUE_PRIORITY)}",
        "Resources:",
    ]
    rows = []
    for resource, unit in (("cpu", "cpu"), ("memory", "memory"), ("gpu", c.GPU_RESOURCE)):
        settings = (spec.get("resources") or {}).get(resource) or {}
        figures = [
            str((status.get(f) or {}).get(unit, "-"))
            for f in ("deserved", "fairShare", "allocated", "allocatedNonPreemptible", "requested")
        ]
        rows.append(
            [
                resource,
                str(settings.get("quota", 0)),
                str(settings.get("limit", -1)),
                str(settings.get("overQuotaWeight", 1)),
                *figures,
            ]
        )
    headers = [
        "RESOURCE",
        "QUOTA",
        "LIMIT",
        "WEIGHT",
        "DESERVED",
        "FAIR-SHARE",
        "ALLOCATED",
        "NON-PREEMPTIBLE",
        "REQUESTED",
    ]
    lines += ["  " + line for line in table(headers, rows).splitlines()]
    lines.append(f"Evictions:    {status.get('evictions', 0)}")
    groups = [
        g
        for g in cluster.list("PodGroup")
        if (g.get("spec") or {}).get("queue") == queue["metadata"]["name"]
    ]
    if groups:
        lines.append("PodGroups:")
        lines += [
            f"  {g['metadata']['namespace']}/{g['metadata']['name']}"
            f"  {(g.get('status') or {}).get('phase', 'Pending')}"
            for g in groups
        ]
    return lines


def _node(cluster: EmbeddedCluster, node: Obj) -> list[str]:
    allocatable = (node.get("status") or {}).get("allocatable") or {}
    lines = ["Allocatable:", *(f"  {k}: {v}" for k, v in allocatable.items())]
    pods = [
        p
        for p in cluster.list("Pod")
        if (p.get("spec") or {}).get("nodeName") == node["metadata"]["name"]
    ]
    lines.append(f"Pods:         {len(pods)}")
    lines += [f"  {p['metadata']['namespace']}/{p['metadata']['name']}" for p in pods]
    return lines


def _events(cluster: EmbeddedCluster, obj: Obj) -> list[str]:
    meta = obj["metadata"]
    events = cluster.events_for(obj["kind"], meta["name"], meta.get("namespace", ""))
    if not events:
        return ["Events:       <none>"]
    now = cluster.now()
    rows = [
        [
            e["type"],
            e["reason"],
            age(e.get("lastTimestamp"), now),
            e["source"]["component"],
            e["message"],
        ]
        for e in events
    ]
    return [
        "Events:",
        *(
            "  " + line
            for line in table(["Type", "Reason", "Age", "From", "Message"], rows).splitlines()
        ),
    ]


def _descendant_pods(cluster: EmbeddedCluster, owner: Obj) -> list[Obj]:
    """Pods owned by ``owner``, directly or through owned objects (ReplicaSet, RayCluster)."""
    found: list[Obj] = []
    frontier = [owner["metadata"].get("uid")]
    for _ in range(4):
        children = [o for uid in frontier if uid for o in cluster.store.owned_by(uid)]
        found += [o for o in children if o["kind"] == "Pod"]
        frontier = [o["metadata"].get("uid") for o in children if o["kind"] != "Pod"]
    return found


def _workload(cluster: EmbeddedCluster, workload: Obj) -> list[str]:
    """A workload: its status, its PodGroups' scheduling conditions, and its pods."""
    lines = _yaml_block("Status", workload.get("status"))
    pods = _descendant_pods(cluster, workload)
    groups = sorted(
        {(p["metadata"].get("annotations") or {}).get(c.POD_GROUP_ANNOTATION, "") for p in pods}
        - {""}
    )
    namespace = workload["metadata"].get("namespace", "default")
    for name in groups:
        group = cluster.get("PodGroup", name, namespace)
        if group is None:
            continue
        spec = group.get("spec") or {}
        lines.append(
            f"PodGroup {name}: queue {spec.get('queue')}, minMember {spec.get('minMember', 1)}, "
            f"phase {(group.get('status') or {}).get('phase', 'Pending')}"
        )
        for condition in (group.get("status") or {}).get("schedulingConditions") or []:
            for reason in condition.get("reasons") or []:
                lines.append(f"  {reason['reason']}: {reason['message']}")
    if pods:
        rows = [
            [
                p["metadata"]["name"],
                (p.get("status") or {}).get("phase", "Pending"),
                (p.get("spec") or {}).get("nodeName") or "<none>",
            ]
            for p in pods
        ]
        lines += [
            "Pods:",
            *("  " + line for line in table(["NAME", "STATUS", "NODE"], rows).splitlines()),
        ]
        now = cluster.now()
        events = [
            [
                p["metadata"]["name"],
                e["type"],
                e["reason"],
                age(e.get("lastTimestamp"), now),
                e["message"],
            ]
            for p in pods
            for e in cluster.events_for("Pod", p["metadata"]["name"], namespace)
        ]
        if events:
            lines += [
                "Pod events:",
                *(
                    "  " + line
                    for line in table(
                        ["POD", "Type", "Reason", "Age", "Message"], events
                    ).splitlines()
                ),
            ]
    return lines


_WORKLOADS = (
    "RayCluster",
    "RayJob",
    "RayService",
    "Deployment",
    "ReplicaSet",
    "StatefulSet",
    "Job",
    "PyTorchJob",
)
_SECTIONS = {"Pod": _pod, "PodGroup": _podgroup, "Queue": _queue, "Node": _node} | dict.fromkeys(
    _WORKLOADS, _workload
)
