"""kubectl-style output: aligned tables, -o wide, json, yaml and custom-columns."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import yaml

from pykai.model import constants as c
from pykai.model.meta import Obj, parse_time
from pykai.model.quantity import count

Row = list[str]
Column = tuple[str, Callable[[Obj, float], str]]


def age(created: object, now: float) -> str:
    """kubectl's age: 45s, 3m2s, 5h, 2d."""
    seconds = max(0, int(now - parse_time(created)))
    if seconds < 120:
        return f"{seconds}s"
    minutes = seconds // 60
    if minutes < 10:
        return f"{minutes}m{seconds % 60}s"
    if minutes < 180:
        return f"{minutes}m"
    hours = minutes // 60
    if hours < 48:
        return f"{hours}h"
    return f"{hours // 24}d"


def table(headers: list[str], rows: list[Row]) -> str:
    """Columns separated by three spaces, left-aligned, like kubectl."""
    widths = [
        max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)
    ]
    lines = [headers, *rows]
    return "\n".join(
        "   ".join(cell.ljust(w) for cell, w in zip(line, widths, strict=True)).rstrip()
        for line in lines
    )


def jsonpath(obj: Any, path: str) -> Any:
    """A simple kubectl JSONPath such as ``.metadata.annotations.gpu-fraction`` (keys may hold
    dashes and slashes; a dot inside a key is written ``\\.``)."""
    parts = [p.replace("\x00", ".") for p in path.replace("\\.", "\x00").strip(".").split(".") if p]
    current = obj
    for part in parts:
        if isinstance(current, dict):
            current = current.get(part)
        elif isinstance(current, list) and part.isdigit() and int(part) < len(current):
            current = current[int(part)]
        else:
            return None
        if current is None:
            return None
    return current


def custom_columns(spec: str, objects: list[Obj]) -> str:
    """``-o custom-columns=NAME:.metadata.name,NODE:.spec.nodeName``."""
    columns = [tuple(part.split(":", 1)) for part in spec.split(",") if part]
    headers = [col[0] for col in columns]
    rows = []
    for obj in objects:
        row = []
        for col in columns:
            value = jsonpath(obj, col[1]) if len(col) > 1 else None
            row.append("<none>" if value is None else _scalar(value))
        rows.append(row)
    return table(headers, rows)


def _scalar(value: Any) -> str:
    if isinstance(value, dict | list):
        return json.dumps(value, separators=(",", ":"))
    return str(value)


def as_json(objects: list[Obj], single: bool) -> str:
    """One object, or a v1 List."""
    return json.dumps(objects[0] if single else _as_list(objects), indent=4)


def as_yaml(objects: list[Obj], single: bool) -> str:
    """One object, or a v1 List."""
    return yaml.safe_dump(objects[0] if single else _as_list(objects), sort_keys=False).rstrip()


def _as_list(objects: list[Obj]) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "List",
        "items": objects,
        "metadata": {"resourceVersion": ""},
    }


def _meta(obj: Obj, key: str) -> dict[str, str]:
    value: dict[str, str] = (obj.get("metadata") or {}).get(key) or {}
    return value


def _name(obj: Obj, _now: float) -> str:
    return str(obj["metadata"]["name"])


def _age(obj: Obj, now: float) -> str:
    return age(obj["metadata"].get("creationTimestamp"), now)


def _pod_status(obj: Obj, _now: float) -> str:
    if obj["metadata"].get("deletionTimestamp"):
        return "Terminating"
    return str((obj.get("status") or {}).get("phase") or "Pending")


def _pod_ready(obj: Obj, _now: float) -> str:
    total = len((obj.get("spec") or {}).get("containers") or [])
    running = _pod_status(obj, 0) == "Running"
    return f"{total if running else 0}/{total}"


def _node_gpus(obj: Obj, _now: float) -> str:
    return str((obj.get("status") or {}).get("allocatable", {}).get(c.GPU_RESOURCE, "0"))


def _optional(getter: Callable[[Obj], Any]) -> Callable[[Obj, float], str]:
    def column(obj: Obj, _now: float) -> str:
        value = getter(obj)
        return "" if value in (None, "", []) else _scalar(value)

    return column


def _none(getter: Callable[[Obj], Any]) -> Callable[[Obj, float], str]:
    def column(obj: Obj, _now: float) -> str:
        value = getter(obj)
        return "<none>" if value in (None, "") else str(value)

    return column


def _reason(obj: Obj, _now: float) -> str:
    conditions = (obj.get("status") or {}).get("schedulingConditions") or []
    reasons = [r["reason"] for cond in conditions for r in cond.get("reasons") or []]
    return ",".join(reasons) or "<none>"


def _gpu(figures: str) -> Callable[[Obj], Any]:
    def read(obj: Obj) -> Any:
        section = (obj.get("status") or {}).get(figures) or {}
        return section.get(c.GPU_RESOURCE)

    return read


def _queue_spec_gpu(field: str) -> Callable[[Obj], Any]:
    def read(obj: Obj) -> Any:
        return ((obj.get("spec") or {}).get("resources") or {}).get("gpu", {}).get(field)

    return read


def _node_gpu_allocated(pods_by_node: dict[str, float]) -> Callable[[Obj, float], str]:
    def column(obj: Obj, _now: float) -> str:
        return f"{pods_by_node.get(obj['metadata']['name'], 0.0):g}"

    return column


def _count_gpus(pod: Obj) -> float:
    total = 0.0
    for container in (pod.get("spec") or {}).get("containers") or []:
        limits = (container.get("resources") or {}).get("limits") or {}
        if c.GPU_RESOURCE in limits:
            total += count(limits[c.GPU_RESOURCE])
    fraction = _meta(pod, "annotations").get(c.GPU_FRACTION_ANNOTATION)
    return total + (float(fraction) if fraction else 0.0)


def columns_for(kind: str, wide: bool, pods: list[Obj]) -> list[Column]:
    """The table columns of a kind, as kubectl (or KAI's printer columns) shows them."""
    if kind == "Pod":
        cols: list[Column] = [
            ("NAME", _name),
            ("READY", _pod_ready),
            ("STATUS", _pod_status),
            ("RESTARTS", lambda o, n: "0"),
            ("AGE", _age),
        ]
        if wide:
            cols += [
                ("NODE", _none(lambda o: (o.get("spec") or {}).get("nodeName"))),
                (
                    "GPU-FRACTION",
                    _none(lambda o: _meta(o, "annotations").get(c.GPU_FRACTION_ANNOTATION)),
                ),
                ("GPU-GROUP", _none(lambda o: _meta(o, "labels").get(c.GPU_GROUP_LABEL))),
            ]
        return cols
    if kind == "Node":
        used: dict[str, float] = {}
        for pod in pods:
            node = (pod.get("spec") or {}).get("nodeName")
            if node and (pod.get("status") or {}).get("phase") not in ("Succeeded", "Failed"):
                used[node] = used.get(node, 0.0) + _count_gpus(pod)
        return [
            ("NAME", _name),
            ("STATUS", lambda o, n: "Ready"),
            ("GPUS", _node_gpus),
            ("GPU-ALLOCATED", _node_gpu_allocated(used)),
            (
                "CPU",
                lambda o, n: str((o.get("status") or {}).get("allocatable", {}).get("cpu", "")),
            ),
            (
                "MEMORY",
                lambda o, n: str((o.get("status") or {}).get("allocatable", {}).get("memory", "")),
            ),
            ("AGE", _age),
        ]
    if kind == "Queue":
        cols = [
            ("NAME", _name),
            ("PRIORITY", _optional(lambda o: (o.get("spec") or {}).get("priority"))),
            ("PARENT", _optional(lambda o: (o.get("spec") or {}).get("parentQueue"))),
            ("CHILDREN", _optional(lambda o: (o.get("status") or {}).get("childQueues"))),
            ("DISPLAYNAME", _optional(lambda o: (o.get("spec") or {}).get("displayName"))),
        ]
        if wide:
            cols += [
                ("GPU-QUOTA", _optional(_queue_spec_gpu("quota"))),
                ("GPU-LIMIT", _optional(_queue_spec_gpu("limit"))),
                ("FAIR-SHARE", _optional(_gpu("fairShare"))),
                ("ALLOCATED", _optional(_gpu("allocated"))),
            ]
        return cols
    if kind == "PodGroup":
        cols = [
            ("NAME", _name),
            ("QUEUE", _none(lambda o: (o.get("spec") or {}).get("queue"))),
            ("MIN-MEMBER", _none(lambda o: (o.get("spec") or {}).get("minMember", 1))),
            ("PRIORITY", _none(lambda o: (o.get("spec") or {}).get("priorityClassName"))),
            ("PHASE", _none(lambda o: (o.get("status") or {}).get("phase"))),
            ("AGE", _age),
        ]
        return [*cols, ("REASON", _reason)] if wide else cols
    if kind == "PriorityClass":
        return [
            ("NAME", _name),
            ("VALUE", lambda o, n: str(o.get("value", ""))),
            ("GLOBAL-DEFAULT", lambda o, n: str(bool(o.get("globalDefault"))).lower()),
            ("AGE", _age),
        ]
    if kind == "Namespace":
        return [("NAME", _name), ("STATUS", lambda o, n: "Active"), ("AGE", _age)]
    if kind == "Event":
        return [
            ("LAST SEEN", lambda o, n: age(o.get("lastTimestamp"), n)),
            ("TYPE", lambda o, n: o.get("type", "")),
            ("REASON", lambda o, n: o.get("reason", "")),
            (
                "OBJECT",
                lambda o, n: f"{o['involvedObject']['kind'].lower()}/{o['involvedObject']['name']}",
            ),
            ("MESSAGE", lambda o, n: o.get("message", "")),
        ]
    if kind == "RayCluster":
        return [
            ("NAME", _name),
            ("DESIRED WORKERS", _status_field("desiredWorkerReplicas")),
            ("AVAILABLE WORKERS", _status_field("availableWorkerReplicas")),
            ("STATUS", _status_field("state")),
            ("AGE", _age),
        ]
    if kind in ("Deployment", "ReplicaSet"):
        return [("NAME", _name), ("READY", _ready_replicas(pods)), ("AGE", _age)]
    return [("NAME", _name), ("AGE", _age)]


def _status_field(field: str) -> Callable[[Obj, float], str]:
    def column(obj: Obj, _now: float) -> str:
        return str((obj.get("status") or {}).get(field, ""))

    return column


def _ready_replicas(pods: list[Obj]) -> Callable[[Obj, float], str]:
    """READY of a Deployment or ReplicaSet: running pods / replicas (pods by name prefix)."""

    def column(obj: Obj, _now: float) -> str:
        prefix = obj["metadata"]["name"] + "-"
        mine = [p for p in pods if p["metadata"]["name"].startswith(prefix)]
        running = sum(1 for p in mine if (p.get("status") or {}).get("phase") == "Running")
        return f"{running}/{(obj.get('spec') or {}).get('replicas', 1)}"

    return column


def render_table(
    kind: str, objects: list[Obj], now: float, *, wide: bool, all_namespaces: bool, pods: list[Obj]
) -> str:
    """A kubectl-style table of objects of one kind."""
    cols = columns_for(kind, wide, pods)
    headers = [h for h, _ in cols]
    rows = [[get(o, now) for _, get in cols] for o in objects]
    if all_namespaces:
        headers = ["NAMESPACE", *headers]
        rows = [
            [str(o["metadata"].get("namespace", "")), *r]
            for o, r in zip(objects, rows, strict=True)
        ]
    return table(headers, rows)
