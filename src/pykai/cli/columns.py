"""The table columns of each kind, as kubectl (or the kind's printer columns) shows them."""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import cached_property
from typing import TYPE_CHECKING, Any

from pykai.cli.kueue_columns import KUEUE_COLUMNS
from pykai.cli.related import Reader, descendant_pods, pods_by_node, usage
from pykai.cli.tables import age, table
from pykai.model import constants as c
from pykai.model.meta import Obj
from pykai.model.queue_status import queue_figures
from pykai.model.resources import format_gpu

if TYPE_CHECKING:
    from pykai.model.positions import Position

NONE = "<none>"


class Context:
    """What cells need beyond their object: the clock and, read once when a column asks,
    related objects."""

    def __init__(self, reader: Reader) -> None:
        self.reader = reader
        self.now = reader.now()
        self._owned: dict[str, list[Obj]] = {}

    @cached_property
    def placed_pods(self) -> dict[str, list[Obj]]:
        """Pods holding resources, by node."""
        return pods_by_node(self.reader.list("Pod"))

    @cached_property
    def positions(self) -> dict[str, Position]:
        """Where each pending job stands, by job key (as recorded, else worked out by the
        engine: cli/pending.py)."""
        from pykai.cli.pending import positions_of

        return positions_of(self.reader).by_job()

    def pods_of(self, owner: Obj) -> list[Obj]:
        """The pods a workload owns, through the objects it owns."""
        uid = str(owner["metadata"].get("uid"))
        if uid not in self._owned:
            self._owned[uid] = descendant_pods(self.reader, owner)
        return self._owned[uid]


Cell = Callable[[Obj, Context], str]
Column = tuple[str, Cell]


def _field(*path: str, missing: str = NONE) -> Cell:
    """The value at ``path`` (``missing`` when absent or empty); lists print as JSON."""

    def cell(obj: Obj, _: Context) -> str:
        value: Any = obj
        for key in path:
            value = value.get(key) if isinstance(value, dict) else None
        if value in (None, "", [], {}):
            return missing
        if isinstance(value, list | dict):
            return json.dumps(value, separators=(",", ":"))
        if isinstance(value, bool):
            return str(value).lower()
        if isinstance(value, float) and value.is_integer():
            return str(int(value))
        return str(value)

    return cell


def _printer_column(*path: str) -> Cell:
    """A CRD printer column: an empty cell when the value is missing, as kubectl prints it."""
    return _field(*path, missing="")


def _queue_fair_share(queue: Obj, _: Context) -> str:
    return str(queue_figures(queue.get("status")).get("fairShare", {}).get(c.GPU_RESOURCE, ""))


def _name(obj: Obj, _: Context) -> str:
    return str(obj["metadata"]["name"])


def _age(obj: Obj, ctx: Context) -> str:
    return age(obj["metadata"].get("creationTimestamp"), ctx.now)


def pod_status(pod: Obj) -> str:
    """kubectl's STATUS of a pod: Terminating, a reason such as Evicted, SchedulingGated, or
    the phase."""
    status = pod.get("status") or {}
    if pod["metadata"].get("deletionTimestamp"):
        return "Terminating"
    if status.get("reason"):
        return str(status["reason"])
    phase = str(status.get("phase") or "Pending")
    if phase == "Pending" and (pod.get("spec") or {}).get("schedulingGates"):
        return "SchedulingGated"
    return phase


def _pod_status(pod: Obj, _: Context) -> str:
    return pod_status(pod)


def _pod_ready(pod: Obj, _: Context) -> str:
    status = pod.get("status") or {}
    total = len((pod.get("spec") or {}).get("containers") or [])
    containers = status.get("containerStatuses")
    if containers is not None:
        ready = sum(1 for s in containers if s.get("ready"))
    else:
        conditions = {x.get("type"): x.get("status") for x in status.get("conditions") or []}
        ready = total if conditions.get("Ready") == "True" else 0
    return f"{ready}/{total}"


def _pod_restarts(pod: Obj, _: Context) -> str:
    statuses = (pod.get("status") or {}).get("containerStatuses") or []
    return str(sum(int(s.get("restartCount", 0)) for s in statuses))


def _node_status(node: Obj, _: Context) -> str:
    conditions = {
        x.get("type"): x.get("status") for x in (node.get("status") or {}).get("conditions") or []
    }
    ready = conditions.get("Ready", "True")  # as the scheduler reads it: no condition = Ready
    text = {"True": "Ready", "False": "NotReady"}.get(str(ready), "Unknown")
    if (node.get("spec") or {}).get("unschedulable"):
        text += ",SchedulingDisabled"
    return text


def _node_gpus_allocated(node: Obj, ctx: Context) -> str:
    pods = ctx.placed_pods.get(node["metadata"]["name"], [])
    return format_gpu(usage(node, pods).gpu)


def _podgroup_reasons(podgroup: Obj, _: Context) -> str:
    conditions = (podgroup.get("status") or {}).get("schedulingConditions") or []
    reasons = [r["reason"] for cond in conditions for r in cond.get("reasons") or []]
    return ",".join(reasons) or NONE


def _podgroup_position(podgroup: Obj, ctx: Context) -> str:
    """Its place in its queue, 1 for the next to be tried; <none> when not pending or when the
    scheduler will not try it (REASON says why)."""
    from pykai.model.positions import job_key

    found = ctx.positions.get(job_key(podgroup))
    return NONE if found is None or found.in_queue is None else str(found.in_queue + 1)


def _event_object(event: Obj, _: Context) -> str:
    involved = event.get("involvedObject") or {}
    return f"{str(involved.get('kind', '')).lower()}/{involved.get('name', '')}"


def _event_last_seen(event: Obj, ctx: Context) -> str:
    return age(event.get("lastTimestamp") or event.get("eventTime"), ctx.now)


def _workload_pods(owner: Obj, ctx: Context) -> tuple[int, int]:
    """(running, existing) pods of a Deployment or ReplicaSet."""
    pods = ctx.pods_of(owner)
    running = sum(1 for p in pods if pod_status(p) == "Running")
    return running, len(pods)


def _replicas(obj: Obj) -> int:
    return int((obj.get("spec") or {}).get("replicas", 1))


def _deployment_ready(obj: Obj, ctx: Context) -> str:
    return f"{_workload_pods(obj, ctx)[0]}/{_replicas(obj)}"


def _existing(obj: Obj, ctx: Context) -> str:
    return str(_workload_pods(obj, ctx)[1])


def _running(obj: Obj, ctx: Context) -> str:
    return str(_workload_pods(obj, ctx)[0])


def _desired(obj: Obj, _: Context) -> str:
    return str(_replicas(obj))


_POD = [
    ("NAME", _name),
    ("READY", _pod_ready),
    ("STATUS", _pod_status),
    ("RESTARTS", _pod_restarts),
    ("AGE", _age),
]
_POD_WIDE = [
    ("NODE", _field("spec", "nodeName")),
    ("GPU-FRACTION", _field("metadata", "annotations", c.GPU_FRACTION_ANNOTATION)),
    ("GPU-GROUP", _field("metadata", "labels", c.GPU_GROUP_LABEL)),
]
_QUEUE = [
    ("NAME", _name),
    ("PRIORITY", _printer_column("spec", "priority")),
    ("PARENT", _printer_column("spec", "parentQueue")),
    ("CHILDREN", _printer_column("status", "childQueues")),
    ("DISPLAYNAME", _printer_column("spec", "displayName")),
]
_QUEUE_WIDE = [
    ("GPU-QUOTA", _printer_column("spec", "resources", "gpu", "quota")),
    ("GPU-LIMIT", _printer_column("spec", "resources", "gpu", "limit")),
    ("FAIR-SHARE", _queue_fair_share),
    ("ALLOCATED", _printer_column("status", "allocated", c.GPU_RESOURCE)),
]
_PODGROUP = [
    ("NAME", _name),
    ("QUEUE", _field("spec", "queue")),
    ("MIN-MEMBER", _field("spec", "minMember", missing="1")),
    ("PRIORITY", _field("spec", "priorityClassName")),
    ("PHASE", _field("status", "phase")),
    ("POSITION", _podgroup_position),
    ("AGE", _age),
]
_COLUMNS: dict[str, tuple[list[Column], list[Column]]] = {
    "Pod": (_POD, _POD_WIDE),
    "Queue": (_QUEUE, _QUEUE_WIDE),
    "PodGroup": (_PODGROUP, [("REASON", _podgroup_reasons)]),
    "Node": (
        [
            ("NAME", _name),
            ("STATUS", _node_status),
            ("GPUS", _field("status", "allocatable", c.GPU_RESOURCE, missing="0")),
            ("GPU-ALLOCATED", _node_gpus_allocated),
            ("CPU", _field("status", "allocatable", "cpu")),
            ("MEMORY", _field("status", "allocatable", "memory")),
            ("AGE", _age),
        ],
        [],
    ),
    "PriorityClass": (
        [
            ("NAME", _name),
            ("VALUE", _field("value")),
            ("GLOBAL-DEFAULT", _field("globalDefault", missing="false")),
            ("AGE", _age),
        ],
        [],
    ),
    "Namespace": (
        [("NAME", _name), ("STATUS", _field("status", "phase", missing="Active")), ("AGE", _age)],
        [],
    ),
    "Event": (
        [
            ("LAST SEEN", _event_last_seen),
            ("TYPE", _field("type", missing="")),
            ("REASON", _field("reason", missing="")),
            ("OBJECT", _event_object),
            ("MESSAGE", _field("message", missing="")),
        ],
        [],
    ),
    "Deployment": (
        [
            ("NAME", _name),
            ("READY", _deployment_ready),
            ("UP-TO-DATE", _existing),
            ("AVAILABLE", _running),
            ("AGE", _age),
        ],
        [],
    ),
    "ReplicaSet": (
        [
            ("NAME", _name),
            ("DESIRED", _desired),
            ("CURRENT", _existing),
            ("READY", _running),
            ("AGE", _age),
        ],
        [],
    ),
    "RayCluster": (
        [
            ("NAME", _name),
            ("DESIRED WORKERS", _printer_column("status", "desiredWorkerReplicas")),
            ("AVAILABLE WORKERS", _printer_column("status", "availableWorkerReplicas")),
            ("STATUS", _printer_column("status", "state")),
            ("AGE", _age),
        ],
        [],
    ),
}
_GENERIC: list[Column] = [("NAME", _name), ("AGE", _age)]


def _prefixed(prefix: str) -> Cell:
    def cell(obj: Obj, _: Context) -> str:
        return f"{prefix}/{obj['metadata']['name']}"

    return cell


def _labels(obj: Obj, _: Context) -> str:
    labels = obj["metadata"].get("labels") or {}
    return ",".join(f"{k}={v}" for k, v in sorted(labels.items())) or NONE


def columns_for(kind: str, *, wide: bool = False) -> list[Column]:
    """The columns of a kind (with -o wide's extra columns when ``wide``)."""
    if kind in KUEUE_COLUMNS:
        return KUEUE_COLUMNS[kind][wide]
    normal, extra = _COLUMNS.get(kind, (_GENERIC, []))
    return normal + extra if wide else normal


def render_table(
    kind: str,
    objects: list[Obj],
    ctx: Context,
    *,
    wide: bool = False,
    namespace_column: bool = False,
    no_headers: bool = False,
    show_labels: bool = False,
    name_prefix: str = "",
) -> str:
    """A kubectl-style table of objects of one kind; ``show_labels`` adds kubectl's LABELS
    column, ``name_prefix`` shows names as ``PREFIX/NAME``."""
    columns = columns_for(kind, wide=wide)
    if name_prefix:
        columns = [(h, _prefixed(name_prefix) if h == "NAME" else c) for h, c in columns]
    if namespace_column:
        columns = [("NAMESPACE", _field("metadata", "namespace", missing="")), *columns]
    if show_labels:
        columns = [*columns, ("LABELS", _labels)]
    rows = [[shown(cell, obj, ctx) for _, cell in columns] for obj in objects]
    return table([header for header, _ in columns], rows, no_headers=no_headers)


INVALID = "<invalid>"


def shown(cell: Cell, obj: Obj, ctx: Context) -> str:
    """A cell's text; a field that cannot be read shows as ``<invalid>`` (the object is
    listed whatever is stored in it)."""
    try:
        return cell(obj, ctx)
    except (ValueError, TypeError, KeyError, AttributeError, ArithmeticError):
        return INVALID
