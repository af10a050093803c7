"""Typed view of a v1 Node: allocatable resources, GPU memory and model, taints, readiness."""

from __future__ import annotations

import math
from dataclasses import dataclass

from pykai.model import constants as c
from pykai.model.conditions import find_condition
from pykai.model.constraints import Taint, parse_taints
from pykai.model.errors import FieldProblem, QuantityError, ValidationError
from pykai.model.meta import Meta, Obj, mapping, parse_meta
from pykai.model.quantity import is_extended_resource, resource_amount, saturated_amount
from pykai.model.resources import Resources

KIND = "Node"


@dataclass(frozen=True, slots=True)
class NodeView:
    """The scheduler's view of a node."""

    meta: Meta
    allocatable: Resources
    extended: dict[str, float]
    gpu_memory_mib: float  # memory of one GPU, from label nvidia.com/gpu.memory (0 = unknown)
    gpu_product: str
    taints: tuple[Taint, ...]
    ready: bool
    unschedulable: bool

    @property
    def name(self) -> str:
        """The node name."""
        return self.meta.name


# counts that Kubernetes keeps whole on a node (IsIntegerResourceName), besides extended resources
_INTEGER_RESOURCES = {"pods"}


def _amounts(raw: object, path: str, name: str, problems: list[FieldProblem]) -> dict[str, float]:
    """A node's capacity or allocatable in engine units, and what Kubernetes refuses in it:
    amounts below 0, and extended resources (nvidia.com/gpu) or pods that are not whole. A
    refused amount is still read as well as it can be, so what the node holds counts."""
    if raw is not None and not isinstance(raw, dict):
        problems.append(FieldProblem(KIND, name, path, "must be a map of resource quantities"))
    values: dict[str, float] = {}
    for rname, quantity in mapping(raw).items():
        field = f"{path}[{rname}]"
        try:
            amount = resource_amount(rname, quantity)
        except QuantityError as exc:
            problems.append(FieldProblem(KIND, name, field, str(exc)))
            values[rname] = saturated_amount(rname, quantity)
            continue
        whole = is_extended_resource(rname) or rname in _INTEGER_RESOURCES
        if amount < 0:
            problems.append(
                FieldProblem(KIND, name, field, f"must be at least 0, got {quantity!r}")
            )
            amount = 0.0
        elif whole and amount != int(amount):
            problems.append(
                FieldProblem(KIND, name, field, f"must be a whole number, got {quantity!r}")
            )
        values[rname] = amount
    return values


def parse_node(obj: Obj) -> NodeView:
    """Read and validate a node."""
    view, problems = read_node(obj)
    if problems:
        raise ValidationError(problems)
    return view


def read_node(obj: Obj) -> tuple[NodeView, list[FieldProblem]]:
    """A node read as well as it can be, and every problem found. A node with problems is
    unschedulable (nothing new goes there); what it holds still counts. Raises ValidationError
    only for a node that cannot even be named."""
    meta = parse_meta(obj, KIND)
    spec = mapping(obj.get("spec"))
    status = mapping(obj.get("status"))
    problems: list[FieldProblem] = []
    capacity = _amounts(status.get("capacity"), "status.capacity", meta.name, problems)
    given = _amounts(status.get("allocatable"), "status.allocatable", meta.name, problems)
    values = dict(given if mapping(status.get("allocatable")) else capacity)
    gpu_memory_text = meta.labels.get(c.GPU_MEMORY_NODE_LABEL, "0")
    try:
        gpu_memory = float(gpu_memory_text)
        if not 0 <= gpu_memory < math.inf:
            raise ValueError(gpu_memory_text)
    except ValueError:
        problems.append(
            FieldProblem(
                KIND,
                meta.name,
                f"metadata.labels[{c.GPU_MEMORY_NODE_LABEL}]",
                f"must be the memory of one GPU in MiB, got {gpu_memory_text!r}",
            )
        )
        gpu_memory = 0.0
    try:
        taints = parse_taints(spec, KIND, meta.name)
    except ValidationError as exc:
        problems += exc.problems
        taints = ()
    ready = find_condition(status.get("conditions"), "Ready")  # none reads as Ready
    allocatable = Resources(
        values.pop(c.CPU_RESOURCE, 0.0),
        values.pop(c.MEMORY_RESOURCE, 0.0),
        values.pop(c.GPU_RESOURCE, 0.0),
    )
    view = NodeView(
        meta=meta,
        allocatable=allocatable,
        extended=values,
        gpu_memory_mib=gpu_memory,
        gpu_product=meta.labels.get(c.GPU_PRODUCT_NODE_LABEL, ""),
        taints=taints,
        ready=not ready or ready.get("status") == "True",
        unschedulable=bool(spec.get("unschedulable", False)) or bool(problems),
    )
    return view, problems
