"""The table columns of each kind, as kubectl (or the kind's printer columns) shows them, in
the table model of cli/cells.py: Kubernetes' and KAI's kinds here, Kueue's in kueue_columns.py;
``columns_for`` finds either, ``render_table`` prints them."""

from __future__ import annotations

from pykai.cli.cells import (
    NAME_AGE,
    NONE,
    Cell,
    Column,
    Context,
    age_cell,
    field,
    name_cell,
    printer_column,
    shown,
)
from pykai.cli.kueue_columns import KUEUE_COLUMNS
from pykai.cli.related import usage
from pykai.cli.tables import age, table
from pykai.model import constants as c
from pykai.model.meta import Obj
from pykai.model.queue_status import queue_figures
from pykai.model.resources import format_gpu


def _queue_fair_share(queue: Obj, _: Context) -> str:
    return str(queue_figures(queue.get("status")).get("fairShare", {}).get(c.GPU_RESOURCE, ""))


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
    ("NAME", name_cell),
    ("READY", _pod_ready),
    ("STATUS", _pod_status),
    ("RESTARTS", _pod_restarts),
    ("AGE", age_cell),
]
_POD_WIDE = [
    ("NODE", field("spec", "nodeName")),
    ("GPU-FRACTION", field("metadata", "annotations", c.GPU_FRACTION_ANNOTATION)),
    ("GPU-GROUP", field("metadata", "labels", c.GPU_GROUP_LABEL)),
]
_QUEUE = [
    ("NAME", name_cell),
    ("PRIORITY", printer_column("spec", "priority")),
    ("PARENT", printer_column("spec", "parentQueue")),
    ("CHILDREN", printer_column("status", "childQueues")),
    ("DISPLAYNAME", printer_column("spec", "displayName")),
]
_QUEUE_WIDE = [
    ("GPU-QUOTA", printer_column("spec", "resources", "gpu", "quota")),
    ("GPU-LIMIT", printer_column("spec", "resources", "gpu", "limit")),
    ("FAIR-SHARE", _queue_fair_share),
    ("ALLOCATED", printer_column("status", "allocated", c.GPU_RESOURCE)),
]
_PODGROUP = [
    ("NAME", name_cell),
    ("QUEUE", field("spec", "queue")),
    ("MIN-MEMBER", field("spec", "minMember", missing="1")),
    ("PRIORITY", field("spec", "priorityClassName")),
    ("PHASE", field("status", "phase")),
    ("POSITION", _podgroup_position),
    ("AGE", age_cell),
]
_COLUMNS: dict[str, tuple[list[Column], list[Column]]] = {
    "Pod": (_POD, _POD_WIDE),
    "Queue": (_QUEUE, _QUEUE_WIDE),
    "PodGroup": (_PODGROUP, [("REASON", _podgroup_reasons)]),
    "Node": (
        [
            ("NAME", name_cell),
            ("STATUS", _node_status),
            ("GPUS", field("status", "allocatable", c.GPU_RESOURCE, missing="0")),
            ("GPU-ALLOCATED", _node_gpus_allocated),
            ("CPU", field("status", "allocatable", "cpu")),
            ("MEMORY", field("status", "allocatable", "memory")),
            ("AGE", age_cell),
        ],
        [],
    ),
    "PriorityClass": (
        [
            ("NAME", name_cell),
            ("VALUE", field("value")),
            ("GLOBAL-DEFAULT", field("globalDefault", missing="false")),
            ("AGE", age_cell),
        ],
        [],
    ),
    "Namespace": (
        [
            ("NAME", name_cell),
            ("STATUS", field("status", "phase", missing="Active")),
            ("AGE", age_cell),
        ],
        [],
    ),
    "Event": (
        [
            ("LAST SEEN", _event_last_seen),
            ("TYPE", field("type", missing="")),
            ("REASON", field("reason", missing="")),
            ("OBJECT", _event_object),
            ("MESSAGE", field("message", missing="")),
        ],
        [],
    ),
    "Deployment": (
        [
            ("NAME", name_cell),
            ("READY", _deployment_ready),
            ("UP-TO-DATE", _existing),
            ("AVAILABLE", _running),
            ("AGE", age_cell),
        ],
        [],
    ),
    "ReplicaSet": (
        [
            ("NAME", name_cell),
            ("DESIRED", _desired),
            ("CURRENT", _existing),
            ("READY", _running),
            ("AGE", age_cell),
        ],
        [],
    ),
    "RayCluster": (
        [
            ("NAME", name_cell),
            ("DESIRED WORKERS", printer_column("status", "desiredWorkerReplicas")),
            ("AVAILABLE WORKERS", printer_column("status", "availableWorkerReplicas")),
            ("STATUS", printer_column("status", "state")),
            ("AGE", age_cell),
        ],
        [],
    ),
}


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
    normal, extra = _COLUMNS.get(kind, (NAME_AGE, []))
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
        columns = [("NAMESPACE", field("metadata", "namespace", missing="")), *columns]
    if show_labels:
        columns = [*columns, ("LABELS", _labels)]
    rows = [[shown(cell, obj, ctx) for _, cell in columns] for obj in objects]
    return table([header for header, _ in columns], rows, no_headers=no_headers)
