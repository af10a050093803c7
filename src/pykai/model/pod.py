"""Typed view of a v1 Pod: effective requests, GPU-sharing request, node constraints."""

from __future__ import annotations

import math
from dataclasses import dataclass

from pykai.model import constants as c
from pykai.model.constraints import NodeConstraints, parse_constraints
from pykai.model.errors import FieldProblem, QuantityError, ValidationError
from pykai.model.meta import Meta, Obj, mapping, objects, parse_meta
from pykai.model.quantity import SATURATED, count, resource_amount, saturated_amount
from pykai.model.resources import Resources

KIND = "Pod"
_IGNORED_RESOURCES = {"ephemeral-storage", "pods"}


@dataclass(frozen=True, slots=True)
class GpuRequest:
    """What a pod asks of GPUs: whole devices, a fraction of N devices, or GPU memory."""

    whole: int = 0
    fraction: float = 0.0  # portion of each device, 0 < f <= 1
    memory_mib: int = 0
    devices: int = 1  # devices for a fraction or memory request

    @property
    def is_shared(self) -> bool:
        """True if the pod shares GPUs (fraction or memory request)."""
        return self.fraction > 0 or self.memory_mib > 0

    def devices_equivalent(self, gpu_memory_mib: float) -> float:
        """GPUs counted toward quota; a memory request is converted with ``gpu_memory_mib``."""
        if self.fraction:
            return self.fraction * self.devices
        if self.memory_mib:
            if gpu_memory_mib <= 0:
                return float(self.devices)
            return self.devices * min(1.0, self.memory_mib / gpu_memory_mib)
        return float(self.whole)


@dataclass(frozen=True, slots=True)
class PodView:
    """The scheduler's view of a pod."""

    meta: Meta
    scheduler_name: str
    node_name: str
    phase: str
    deleting: bool
    gated: bool  # spec.schedulingGates is not empty: not to be scheduled yet
    priority_class_name: str
    requests: Resources  # cpu, memory, and whole GPUs (fractions are in ``gpu``)
    gpu: GpuRequest
    extended: tuple[tuple[str, float], ...]
    constraints: NodeConstraints

    @property
    def finished(self) -> bool:
        """True if the pod has completed and holds nothing."""
        return self.phase in ("Succeeded", "Failed")


def parse_pod(obj: Obj) -> PodView:
    """Read and validate a pod; raises ValidationError naming the field and the fix."""
    view, problems = read_pod(obj)
    if problems:
        raise ValidationError(problems)
    return view


def read_pod(obj: Obj) -> tuple[PodView, list[FieldProblem]]:
    """A pod read as well as it can be, and every problem found. What a stored pod holds
    counts even when it is invalid: unreadable amounts are 0, amounts too large to take
    literally saturate, and unreadable GPU-sharing annotations hold a whole device.
    Raises ValidationError only for a pod that cannot even be named."""
    meta = parse_meta(obj, KIND)
    spec = mapping(obj.get("spec"))
    status = mapping(obj.get("status"))
    problems: list[FieldProblem] = []
    cpu, memory, whole, extended = _effective_requests(spec, meta.name, problems)
    gpu = _gpu_request(meta, whole, problems)
    try:
        constraints = parse_constraints(spec, KIND, meta.name)
    except ValidationError as exc:
        problems += exc.problems
        constraints = NodeConstraints()
    view = PodView(
        meta=meta,
        scheduler_name=str(spec.get("schedulerName") or "default-scheduler"),
        node_name=str(spec.get("nodeName") or ""),
        phase=str(status.get("phase") or "Pending"),
        deleting=bool(mapping(obj.get("metadata")).get("deletionTimestamp")),
        gated=bool(spec.get("schedulingGates")),
        priority_class_name=str(spec.get("priorityClassName") or ""),
        requests=Resources(cpu, memory, float(whole)),
        gpu=gpu,
        extended=tuple(sorted(extended.items())),
        constraints=constraints,
    )
    return view, problems


def _container_requests(
    container: Obj, path: str, name: str, problems: list[FieldProblem]
) -> dict[str, float]:
    """One container's requests: requests, with limits filling in what is missing."""
    resources = mapping(container.get("resources"))
    limits = mapping(resources.get("limits"))
    requests = mapping(resources.get("requests"))
    result: dict[str, float] = {}
    for rname in set(limits) | set(requests):
        if rname in _IGNORED_RESOURCES:
            continue
        source, raw = (
            ("requests", requests[rname]) if rname in requests else ("limits", limits[rname])
        )
        field = f"{path}.resources.{source}[{rname}]"
        try:
            amount = resource_amount(rname, raw)
        except QuantityError as exc:
            problems.append(FieldProblem(KIND, name, field, str(exc)))
            result[rname] = saturated_amount(rname, raw)
            continue
        if not 0 <= amount < SATURATED:  # past int64, or negative: not a request to honour
            problems.append(
                FieldProblem(
                    KIND,
                    name,
                    field,
                    f"{raw!r} is not a quantity a pod can request",
                    "request a non-negative amount Kubernetes can represent",
                )
            )
            amount = saturated_amount(rname, raw)
        result[rname] = amount
        if rname not in (c.CPU_RESOURCE, c.MEMORY_RESOURCE):
            _check_extended(rname, limits, requests, path, name, problems)
    return result


def _check_extended(
    rname: str, limits: Obj, requests: Obj, path: str, name: str, problems: list[FieldProblem]
) -> None:
    """An extended resource (nvidia.com/gpu) needs a limit equal to its request."""
    if rname not in limits:
        problems.append(
            FieldProblem(
                KIND,
                name,
                f"{path}.resources.limits[{rname}]",
                f"is required: an extended resource such as {rname} needs a limit",
                f"set limits.{rname} equal to requests.{rname}",
            )
        )
    elif rname in requests:
        try:
            differs = count(requests[rname]) != count(limits[rname])
        except QuantityError:
            return
        if differs:
            problems.append(
                FieldProblem(
                    KIND,
                    name,
                    f"{path}.resources.requests[{rname}]",
                    "must equal the limit for an extended resource",
                    f"set requests.{rname} equal to limits.{rname}",
                )
            )


def _effective_requests(
    spec: Obj, name: str, problems: list[FieldProblem]
) -> tuple[float, float, int, dict[str, float]]:
    """Kubernetes' rule: max(sum over containers, each init container), per resource."""
    totals: dict[str, float] = {}
    for i, container in enumerate(objects(spec.get("containers"))):
        for rname, value in _container_requests(
            container, f"spec.containers[{i}]", name, problems
        ).items():
            totals[rname] = totals.get(rname, 0.0) + value
    for i, container in enumerate(objects(spec.get("initContainers"))):
        path = f"spec.initContainers[{i}]"
        for rname, value in _container_requests(container, path, name, problems).items():
            totals[rname] = max(totals.get(rname, 0.0), value)
    cpu = totals.pop(c.CPU_RESOURCE, 0.0)
    memory = totals.pop(c.MEMORY_RESOURCE, 0.0)
    gpus = totals.pop(c.GPU_RESOURCE, 0.0)
    if gpus >= SATURATED:  # past int64: not a real request, but it holds whatever it is on
        gpus = SATURATED
    elif gpus != int(gpus) or gpus < 0:
        problems.append(
            FieldProblem(
                KIND,
                name,
                f"spec.containers[*].resources.limits[{c.GPU_RESOURCE}]",
                f"must be a whole number of devices, got {gpus:g}",
                'for part of a GPU use the annotation gpu-fraction: "0.5"',
            )
        )
        gpus = math.ceil(max(gpus, 0))  # an unreadable count holds every device it touches
    return cpu, memory, int(gpus), totals


def _gpu_request(meta: Meta, whole: int, problems: list[FieldProblem]) -> GpuRequest:
    """Read the GPU-sharing annotations and reject the combinations KAI rejects. Unreadable
    annotations read as a share of a whole device, so a bound pod with them holds its device."""
    found = len(problems)
    request = _sharing_request(meta, whole, problems)
    if len(problems) == found:
        return request
    return GpuRequest(whole=whole) if whole else GpuRequest(fraction=1.0, devices=request.devices)


_MAX_DEVICES = 1024  # more devices than any node has
_MAX_MEMORY_MIB = 2**31  # 2 PiB of GPU memory


def _positive_int(text: str, limit: int) -> int | None:
    """A positive whole number written in decimal digits, at most ``limit``; else None."""
    if not text.isdigit() or len(text) > len(str(limit)):
        return None
    number = int(text)
    return number if 0 < number <= limit else None


def _sharing_request(meta: Meta, whole: int, problems: list[FieldProblem]) -> GpuRequest:
    """The request the sharing annotations make, with a problem for each one unreadable."""
    ann = meta.annotations
    fraction_text = ann.get(c.GPU_FRACTION_ANNOTATION)
    memory_text = ann.get(c.GPU_MEMORY_ANNOTATION)
    devices_text = ann.get(c.GPU_FRACTION_NUM_DEVICES_ANNOTATION)
    field = "metadata.annotations"
    fraction = 0.0
    memory = 0
    devices = 1
    if fraction_text is not None:
        try:
            fraction = float(fraction_text)
        except ValueError:
            fraction = math.nan
        if not 0 < fraction <= 1:
            problems.append(
                FieldProblem(
                    KIND,
                    meta.name,
                    f"{field}[{c.GPU_FRACTION_ANNOTATION}]",
                    f"must be a number in (0, 1], got {fraction_text!r}",
                    'write the share of one GPU, e.g. gpu-fraction: "0.5"',
                )
            )
            fraction = 0.0
        if whole:
            problems.append(
                FieldProblem(
                    KIND,
                    meta.name,
                    f"{field}[{c.GPU_FRACTION_ANNOTATION}]",
                    f"cannot be combined with a {c.GPU_RESOURCE} limit",
                    f"request either whole GPUs ({c.GPU_RESOURCE}) or a fraction, not both",
                )
            )
    if memory_text is not None:
        memory_mib = _positive_int(memory_text, _MAX_MEMORY_MIB)
        if memory_mib is None:
            problems.append(
                FieldProblem(
                    KIND,
                    meta.name,
                    f"{field}[{c.GPU_MEMORY_ANNOTATION}]",
                    f"must be a positive whole number of MiB, got {memory_text!r}",
                    'e.g. gpu-memory: "4000"',
                )
            )
        else:
            memory = memory_mib
        if whole or fraction_text is not None:
            problems.append(
                FieldProblem(
                    KIND,
                    meta.name,
                    f"{field}[{c.GPU_MEMORY_ANNOTATION}]",
                    f"cannot be combined with gpu-fraction or a {c.GPU_RESOURCE} limit",
                    "request GPU memory, a fraction, or whole GPUs: only one of them",
                )
            )
    if devices_text is not None:
        count_of_devices = _positive_int(devices_text, _MAX_DEVICES)
        if count_of_devices is None:
            problems.append(
                FieldProblem(
                    KIND,
                    meta.name,
                    f"{field}[{c.GPU_FRACTION_NUM_DEVICES_ANNOTATION}]",
                    f"must be a whole number from 1 to {_MAX_DEVICES}, got {devices_text!r}",
                )
            )
        elif fraction_text is None and memory_text is None:
            problems.append(
                FieldProblem(
                    KIND,
                    meta.name,
                    f"{field}[{c.GPU_FRACTION_NUM_DEVICES_ANNOTATION}]",
                    "needs gpu-fraction or gpu-memory beside it",
                    "add gpu-fraction (the share of each device) or remove this annotation",
                )
            )
        else:
            devices = count_of_devices
    return GpuRequest(whole=whole, fraction=fraction, memory_mib=memory, devices=devices)


def gpu_group_labels(groups: tuple[str, ...] | list[str]) -> dict[str, str]:
    """KAI's binding labels for shared GPUs: ``runai-gpu-group=<first>`` and
    ``runai-gpu-group/<g>=<g>`` for each further device."""
    if not groups:
        return {}
    first, *others = groups
    return {c.GPU_GROUP_LABEL: first} | {f"{c.GPU_GROUP_LABEL}/{g}": g for g in others}


def gpu_container_index(pod: Obj) -> int:
    """Which container gets the GPU env: the one named by gpu-fraction-container-name, else
    the first."""
    containers = (pod.get("spec") or {}).get("containers") or []
    wanted = (pod["metadata"].get("annotations") or {}).get(c.GPU_FRACTION_CONTAINER_ANNOTATION)
    return next((i for i, ct in enumerate(containers) if wanted and ct.get("name") == wanted), 0)
