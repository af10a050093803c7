"""``pykai describe``: a human account of one object, ending with its events as kubectl does."""

from __future__ import annotations

from collections.abc import Callable

from pykai.cli.cells import NONE, Context, shown
from pykai.cli.columns import columns_for, pod_status
from pykai.cli.related import Reader, descendant_pods, podgroup_pods, pods_by_node, usage
from pykai.cli.tables import age, table
from pykai.model import constants as c
from pykai.model.errors import ValidationError
from pykai.model.meta import Obj
from pykai.model.pod import GpuRequest, parse_pod
from pykai.model.priorityclass import default_priority, parse_priority_class
from pykai.model.quantity import format_number
from pykai.model.queue_status import queue_figures
from pykai.model.resources import format_cpu, format_gpu, format_memory

Lines = list[str]


def describe(reader: Reader, obj: Obj) -> str:
    """The description of ``obj``; its kind decides the sections between metadata and events."""
    meta = obj["metadata"]
    lines = [_line("Name", meta["name"])]
    if meta.get("namespace"):
        lines.append(_line("Namespace", meta["namespace"]))
    lines.append(_line("Kind", obj["kind"]))
    lines += _mapping("Labels", meta.get("labels") or {})
    lines += _mapping("Annotations", meta.get("annotations") or {})
    lines.append(_line("Age", age(meta.get("creationTimestamp"), reader.now())))
    section = _SECTIONS.get(obj["kind"], _other)
    lines += section(reader, obj)
    lines += _events(reader, obj)
    return "\n".join(lines)


def _line(label: str, value: object) -> str:
    return f"{label + ':':<15} {value}"


def _mapping(title: str, values: dict[str, str]) -> Lines:
    if not values:
        return [_line(title, NONE)]
    first, *rest = sorted(values.items())
    return [_line(title, f"{first[0]}={first[1]}"), *(f"{'':<16}{k}={v}" for k, v in rest)]


def _indented(title: str, text: str) -> Lines:
    return [f"{title}:", *(f"  {line}" for line in text.splitlines())]


def _table(title: str, headers: list[str], rows: list[list[str]]) -> Lines:
    """A sub-table under a title, with kubectl describe's dashes under the headers."""
    if not rows:
        return [_line(title, NONE)]
    dashes = ["-" * len(h) for h in headers]
    return _indented(title, table(headers, [dashes, *rows]))


def _events(reader: Reader, obj: Obj) -> Lines:
    meta = obj["metadata"]
    events = reader.events_for(obj["kind"], meta["name"], meta.get("namespace") or "")
    rows = [_event_row(e, reader.now()) for e in events]
    return _table("Events", _EVENT_HEADERS, rows)


_EVENT_HEADERS = ["Type", "Reason", "Age", "From", "Message"]


def _event_row(event: Obj, now: float) -> list[str]:
    return [
        str(event.get("type", "")),
        str(event.get("reason", "")),
        _event_age(event, now),
        str((event.get("source") or {}).get("component", "")),
        str(event.get("message", "")),
    ]


def _event_age(event: Obj, now: float) -> str:
    """``12s``, or ``12s (x3 over 2m)`` for an event that recurred, as kubectl describe shows."""
    last = age(event.get("lastTimestamp"), now)
    count = int(event.get("count") or 1)
    if count > 1:
        return f"{last} (x{count} over {age(event.get('firstTimestamp'), now)})"
    return last


_POD_HEADERS = ("NAME", "STATUS", "NODE", "GPU-FRACTION", "GPU-GROUP")


def _pods_table(reader: Reader, title: str, pods: list[Obj]) -> Lines:
    """Pods, where they run and the GPU share they hold (cells as ``get pods -o wide``)."""
    ctx = Context(reader)
    cells = [cell for header, cell in columns_for("Pod", wide=True) if header in _POD_HEADERS]
    rows = [[shown(cell, p, ctx) for cell in cells] for p in pods]
    return _table(title, list(_POD_HEADERS), rows)


def _conditions(podgroup: Obj, now: float) -> Lines:
    """The PodGroup's scheduling conditions: why it is pending, one row per reason."""
    conditions = (podgroup.get("status") or {}).get("schedulingConditions") or []
    rows = [
        [
            str(condition.get("type", "")),
            str(reason.get("reason", "")),
            age(condition.get("lastTransitionTime"), now),
            str(reason.get("message", "")),
        ]
        for condition in conditions
        for reason in condition.get("reasons") or []
    ]
    return _table("Scheduling Conditions", ["Type", "Reason", "Age", "Message"], rows)


def _gpu_text(gpu: GpuRequest) -> str:
    devices = f" on each of {gpu.devices} GPUs" if gpu.devices > 1 else ""
    if gpu.fraction:
        return f"{format_number(gpu.fraction)} of a GPU{devices} ({c.GPU_FRACTION_ANNOTATION})"
    if gpu.memory_mib:
        return f"{gpu.memory_mib} MiB of GPU memory{devices} ({c.GPU_MEMORY_ANNOTATION})"
    return f"{gpu.whole} whole" if gpu.whole else NONE


def _pod(reader: Reader, pod: Obj) -> Lines:
    spec = pod.get("spec") or {}
    view = parse_pod(pod)
    meta = pod["metadata"]
    lines = [
        _line("Node", spec.get("nodeName") or NONE),
        _line("Status", pod_status(pod)),
        _line("Scheduler", view.scheduler_name),
        _line("PodGroup", (meta.get("annotations") or {}).get(c.POD_GROUP_ANNOTATION, NONE)),
        _line("Queue", (meta.get("labels") or {}).get(c.QUEUE_LABEL, NONE)),
        _line(
            "Requests",
            f"cpu {format_cpu(view.requests.cpu)}, memory {format_memory(view.requests.memory)}",
        ),
        _line("GPU", _gpu_text(view.gpu)),
        _line("GPU group", (meta.get("labels") or {}).get(c.GPU_GROUP_LABEL, NONE)),
        "Containers:",
    ]
    for container in spec.get("containers") or []:
        resources = container.get("resources") or {}
        lines.append(f"  {container.get('name')}:")
        lines.append(f"    Image:     {container.get('image', NONE)}")
        for key in ("requests", "limits"):
            values = ", ".join(f"{k}={v}" for k, v in (resources.get(key) or {}).items())
            lines.append(f"    {key.capitalize() + ':':<10} {values or NONE}")
    return lines


def _podgroup(reader: Reader, podgroup: Obj) -> Lines:
    spec = podgroup.get("spec") or {}
    status = podgroup.get("status") or {}
    counts = f"running {status.get('running', 0)}, pending {status.get('pending', 0)}"
    return [
        _line("Queue", spec.get("queue") or NONE),
        _line("Min Member", spec.get("minMember", 1)),
        _line("Priority", _priority_class(reader, spec.get("priorityClassName"))),
        _line("Preemptibility", spec.get("preemptibility") or "by priority"),
        _line("Phase", f"{status.get('phase', 'Pending')} ({counts})"),
        *_conditions(podgroup, reader.now()),
        *_pods_table(reader, "Pods", podgroup_pods(reader, podgroup)),
    ]


def _number(value: object) -> str:
    """A queue's setting as written: a number in full, anything else as it is."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return format_number(value)
    return str(value)


def _priority_class(reader: Reader, name: object) -> str:
    """A PodGroup's priority class, and what is used instead when it does not exist."""
    if not name:
        return NONE
    if reader.get("PriorityClass", str(name)) is not None:
        return str(name)
    classes = []
    for obj in reader.list("PriorityClass"):
        try:
            classes.append(parse_priority_class(obj))
        except ValidationError:
            continue  # the scheduler skips it too
    used = default_priority(classes)
    return f'{name} (PriorityClass "{name}" does not exist: the default priority, {used}, is used)'


_QUEUE_FIGURES = ("deserved", "fairShare", "allocated", "allocatedNonPreemptible", "requested")


def _queue(reader: Reader, queue: Obj) -> Lines:
    spec = queue.get("spec") or {}
    status = queue.get("status") or {}
    figures = {**status, **queue_figures(status)}
    rows = []
    for resource, unit in (
        ("cpu", c.CPU_RESOURCE),
        ("memory", c.MEMORY_RESOURCE),
        ("gpu", c.GPU_RESOURCE),
    ):
        settings = (spec.get("resources") or {}).get(resource) or {}
        rows.append(
            [
                resource,
                *(
                    _number(settings.get(k, d))
                    for k, d in (("quota", 0), ("limit", -1), ("overQuotaWeight", 1))
                ),
                *(str((figures.get(f) or {}).get(unit, "-")) for f in _QUEUE_FIGURES),
            ]
        )
    headers = ["RESOURCE", "QUOTA", "LIMIT", "WEIGHT", "DESERVED", "FAIR-SHARE", "ALLOCATED",
               "NON-PREEMPTIBLE", "REQUESTED"]  # fmt: skip
    name = queue["metadata"]["name"]
    groups = [
        [
            g["metadata"]["namespace"],
            g["metadata"]["name"],
            (g.get("status") or {}).get("phase", "Pending"),
        ]
        for g in reader.list("PodGroup")
        if (g.get("spec") or {}).get("queue") == name
    ]
    return [
        _line("Display Name", spec.get("displayName") or NONE),
        _line("Parent", spec.get("parentQueue") or NONE),
        _line("Children", ", ".join(status.get("childQueues") or []) or NONE),
        _line("Priority", spec.get("priority", c.DEFAULT_QUEUE_PRIORITY)),
        *_indented("Resources", table(headers, rows)),
        _line("Evictions", figures.get("evictions", 0)),
        *_table("PodGroups", ["NAMESPACE", "NAME", "PHASE"], groups),
        *_pending(reader, name),
    ]


def _pending(reader: Reader, queue: str) -> Lines:
    """Its pending PodGroups (its subtree's, for a parent queue) in the order the scheduler
    will try them: ORDER in the whole cluster, POSITION in their own queue, both from 1."""
    from pykai.cli.pending import positions_of

    def place(value: int | None) -> str:
        return NONE if value is None else str(value + 1)

    rows = [
        [place(p.in_cycle), place(p.in_queue), p.job, p.queue, p.reason or NONE]
        for p in positions_of(reader).under(queue)
    ]
    headers = ["ORDER", "POSITION", "PODGROUP", "QUEUE", "REASON"]
    return _table("Pending PodGroups (in the order the scheduler tries them)", headers, rows)


def _node(reader: Reader, node: Obj) -> Lines:
    allocatable = (node.get("status") or {}).get("allocatable") or {}
    pods = pods_by_node(reader.list("Pod")).get(node["metadata"]["name"], [])
    used = usage(node, pods)
    requested = {
        c.CPU_RESOURCE: format_cpu(used.cpu),
        c.MEMORY_RESOURCE: format_memory(used.memory),
        c.GPU_RESOURCE: format_gpu(used.gpu),
    }
    resources = [[k, requested.get(k, "-"), str(v)] for k, v in allocatable.items()]
    now = reader.now()
    rows = [
        [
            p["metadata"].get("namespace", ""),
            p["metadata"]["name"],
            pod_status(p),
            age(p["metadata"].get("creationTimestamp"), now),
        ]
        for p in pods
    ]
    return [
        *_indented(
            "Allocated resources", table(["Resource", "Requests", "Allocatable"], resources)
        ),
        *_table(
            f"Non-terminated Pods ({len(pods)} in total)",
            ["NAMESPACE", "NAME", "STATUS", "AGE"],
            rows,
        ),
    ]


def _workload(reader: Reader, workload: Obj) -> Lines:
    """A workload: its status, its PodGroups and why they wait, its pods and their events."""
    lines = _status_block(workload)
    pods = descendant_pods(reader, workload)
    namespace = workload["metadata"].get("namespace") or "default"
    names = sorted(
        {(p["metadata"].get("annotations") or {}).get(c.POD_GROUP_ANNOTATION, "") for p in pods}
        - {""}
    )
    now = reader.now()
    for podgroup in filter(None, (reader.get("PodGroup", n, namespace) for n in names)):
        spec = podgroup.get("spec") or {}
        phase = (podgroup.get("status") or {}).get("phase", "Pending")
        lines.append(
            f"PodGroup {podgroup['metadata']['name']}: queue {spec.get('queue')}, "
            f"minMember {spec.get('minMember', 1)}, phase {phase}"
        )
        lines += ["  " + line for line in _conditions(podgroup, now)]
    lines += _pods_table(reader, "Pods", pods)
    rows = [
        [p["metadata"]["name"], *_event_row(e, now)]
        for p in pods
        for e in reader.events_for("Pod", p["metadata"]["name"], namespace)
    ]
    return lines + _table("Pod events", ["Pod", *_EVENT_HEADERS], rows)


def _kueue_queue(reader: Reader, queue: Obj) -> Lines:
    """A ClusterQueue or LocalQueue: spec, status, and its pending Workloads in Kueue's order
    with their positions (engine/kueue/positions.py, what Kueue's visibility API serves)."""
    from pykai.engine.kueue.positions import in_local_queue, pending_workloads

    meta = queue["metadata"]
    pending = pending_workloads(
        reader.list("Workload"), reader.list("LocalQueue"), reader.list("ClusterQueue")
    )
    if queue["kind"] == "ClusterQueue":
        found = pending.get(meta["name"], [])
    else:
        found = in_local_queue(pending, meta.get("namespace") or "default", meta["name"])
    rows = [
        [
            str(w.position_in_cluster_queue),
            str(w.position_in_local_queue),
            f"{w.namespace}/{w.obj['metadata']['name']}",
            str(w.priority),
            w.local_queue,
        ]
        for w in found
    ]
    headers = ["Position", "In LocalQueue", "Workload", "Priority", "LocalQueue"]
    return _other(reader, queue) + _table("Pending Workloads", headers, rows)


def _status_block(obj: Obj) -> Lines:
    status = obj.get("status")
    return _indented("Status", _yaml(status, sort_keys=True)) if status else []


def _other(reader: Reader, obj: Obj) -> Lines:
    spec = obj.get("spec")
    lines = _indented("Spec", _yaml(spec, sort_keys=False)) if spec else []
    return lines + _status_block(obj)


def _yaml(value: object, *, sort_keys: bool) -> str:
    import yaml  # only the kinds described as YAML need it: pods and queues start faster

    return yaml.safe_dump(value, sort_keys=sort_keys).rstrip()


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
_SECTIONS: dict[str, Callable[[Reader, Obj], Lines]] = {
    "Pod": _pod,
    "PodGroup": _podgroup,
    "Queue": _queue,
    "Node": _node,
    "ClusterQueue": _kueue_queue,
    "LocalQueue": _kueue_queue,
    **dict.fromkeys(_WORKLOADS, _workload),
}
