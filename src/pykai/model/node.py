"""Typed view of a v1 Node: allocatable resources, GPU memory and model, taints, readiness."""

from __future__ import annotations

import math
from dataclasses import dataclass

from pykai.model import constants as c
from pykai.model.constraints import Taint, parse_taints
from pykai.model.errors import FieldProblem, QuantityError, ValidationError
from pykai.model.meta import Meta, Obj, mapping, objects, parse_meta
from pykai.model.quantity import resource_amount, saturated_amount
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
    values: dict[str, float] = {}
    for rname, quantity in mapping(status.get("allocatable") or status.get("capacity")).items():
        try:
            values[rname] = resource_amount(rname, quantity)
        except QuantityError as exc:
            problems.append(FieldProblem(KIND, meta.name, f"status.allocatable[{rname}]", str(exc)))
            values[rname] = saturated_amount(rname, quantity)
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
    conditions = {
        str(x.get("type")): str(x.get("status")) for x in objects(status.get("conditions"))
    }
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
        ready=conditions.get("Ready", "True") == "True",
        unschedulable=bool(spec.get("unschedulable", False)) or bool(problems),
    )
    return view, problems
