"""Typed view of a v1 Pod: effective requests, GPU-sharing request, node constraints."""

from __future__ import annotations

import marshal
import math
from dataclasses import dataclass
from functools import lru_cache

from pykai.model import constants as c
from pykai.model.constraints import NodeConstraints, parse_constraints
from pykai.model.errors import FieldProblem, QuantityError, ValidationError
from pykai.model.meta import Meta, Obj, mapping, objects, parse_meta
from pykai.model.names import qualified_name
from pykai.model.quantity import (
    SATURATED,
    is_extended_resource,
    resource_amount,
    saturated_amount,
)
from pykai.model.resources import Resources

KIND = "Pod"
_IGNORED_RESOURCES = {"ephemeral-storage"}


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
    except (AttributeError, TypeError, ValueError) as exc:  # a shape only a bare store keeps
        problems.append(FieldProblem(KIND, meta.name, "spec", f"cannot be read: {exc}"))
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


_STANDARD_RESOURCES = {c.CPU_RESOURCE, c.MEMORY_RESOURCE, "ephemeral-storage"}


@lru_cache(maxsize=1024)
def _resource_name_problem(rname: str) -> str:
    """Why a container may not name this resource (Kubernetes' validateContainerResourceName):
    a name without a domain must be standard (cpu, memory, ephemeral-storage, hugepages-*)."""
    if "/" not in rname:
        if rname in _STANDARD_RESOURCES or rname.startswith("hugepages-"):
            return ""
        return (
            "must be a standard resource for containers (cpu, memory, ephemeral-storage, "
            "hugepages-<size>) or a domain-qualified extended resource such as nvidia.com/gpu"
        )
    return f"key {why}" if (why := qualified_name(rname)) else ""


def _amounts(values: Obj, path: str, name: str, problems: list[FieldProblem]) -> dict[str, float]:
    """requests or limits of one container in engine units, with a problem for each amount
    Kubernetes refuses (a name that is not a resource, no quantity, below 0, past int64, an
    extended resource not whole); such an amount is still read as well as it can be."""
    amounts: dict[str, float] = {}
    for rname, raw in values.items():
        field = f"{path}[{rname}]"
        if why := _resource_name_problem(str(rname)):
            problems.append(FieldProblem(KIND, name, field, why))
        try:
            amount = resource_amount(rname, raw)
        except QuantityError as exc:
            problems.append(FieldProblem(KIND, name, field, str(exc)))
            amounts[rname] = saturated_amount(rname, raw)
            continue
        if amount < 0:
            problems.append(
                FieldProblem(
                    KIND, name, field, f"must be at least 0, got {raw!r}", "remove the minus"
                )
            )
            amount = 0.0
        elif is_extended_resource(rname) and amount != int(amount):
            fix = 'for part of a GPU use the annotation gpu-fraction: "0.5"'
            problems.append(
                FieldProblem(
                    KIND,
                    name,
                    field,
                    f"must be a whole number, got {raw!r}",
                    fix if rname == c.GPU_RESOURCE else "",
                )
            )
        amounts[rname] = amount
    return amounts


def _container_requests(
    container: Obj, path: str, name: str, problems: list[FieldProblem]
) -> dict[str, float]:
    """One container's requests: requests, with limits filling in what is missing; an
    extended resource needs a limit equal to its request, and no request may exceed its
    limit."""
    resources = mapping(container.get("resources"))
    path = f"{path}.resources"
    limits = _amounts(mapping(resources.get("limits")), f"{path}.limits", name, problems)
    requests = _amounts(mapping(resources.get("requests")), f"{path}.requests", name, problems)
    for rname, amount in requests.items():
        field = f"{path}.requests[{rname}]"
        if is_extended_resource(rname) and rname not in limits:
            problems.append(
                FieldProblem(
                    KIND,
                    name,
                    f"{path}.limits[{rname}]",
                    f"is required: an extended resource such as {rname} needs a limit",
                    f"set limits.{rname} equal to requests.{rname}",
                )
            )
        elif is_extended_resource(rname) and amount != limits[rname]:
            problems.append(
                FieldProblem(
                    KIND,
                    name,
                    field,
                    "must equal the limit for an extended resource",
                    f"set requests.{rname} equal to limits.{rname}",
                )
            )
        elif rname in limits and amount > limits[rname]:
            problems.append(
                FieldProblem(
                    KIND,
                    name,
                    field,
                    f"must be less than or equal to the {rname} limit",
                    f"lower requests.{rname} or raise limits.{rname}",
                )
            )
    return {r: a for r, a in (limits | requests).items() if r not in _IGNORED_RESOURCES}


Requests = tuple[float, float, int, dict[str, float]]  # cpu, memory, whole GPUs, extended
_KNOWN_REQUESTS: dict[bytes, Requests] = {}  # by the containers' resources, problem-free only
_KNOWN_REQUESTS_LIMIT = 4096


def _effective_requests(spec: Obj, name: str, problems: list[FieldProblem]) -> Requests:
    """Kubernetes' rule: max(sum over containers, each init container), per resource. Every
    write of a pod is read again, and pods repeat a few shapes: requests that read without a
    problem are remembered by the containers' resources."""
    key = _resources_key(spec)
    known = _KNOWN_REQUESTS.get(key) if key is not None else None
    if known is not None:
        cpu, memory, gpus, extended = known
        return cpu, memory, gpus, dict(extended)
    found = len(problems)
    requests = _sum_requests(spec, name, problems)
    if key is not None and len(problems) == found:
        if len(_KNOWN_REQUESTS) >= _KNOWN_REQUESTS_LIMIT:
            _KNOWN_REQUESTS.clear()
        _KNOWN_REQUESTS[key] = (*requests[:3], dict(requests[3]))
    return requests


def _resources_key(spec: Obj) -> bytes | None:
    """The containers' and init containers' resources, all that their requests depend on, as
    bytes (None for values marshal cannot write, such as dates a YAML file made)."""
    try:
        return marshal.dumps(
            (
                [mapping(each.get("resources")) for each in objects(spec.get("containers"))],
                [mapping(each.get("resources")) for each in objects(spec.get("initContainers"))],
            )
        )
    except ValueError:
        return None


def _sum_requests(spec: Obj, name: str, problems: list[FieldProblem]) -> Requests:
    """Sum over containers, max with each init container, per resource."""
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
    # past int64 (refused above): not a real request, but it holds whatever it is on; a count
    # that is not whole (refused above) holds every device it touches
    gpus = min(math.ceil(totals.pop(c.GPU_RESOURCE, 0.0)), SATURATED)
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


DEFAULT_GRACE_SECONDS = 30  # Kubernetes' terminationGracePeriodSeconds when a pod sets none


def grace_period(pod: Obj) -> float:
    """The seconds a pod has to terminate once deleted (its terminationGracePeriodSeconds)."""
    value = mapping(pod.get("spec")).get("terminationGracePeriodSeconds", DEFAULT_GRACE_SECONDS)
    valid = isinstance(value, int | float) and not isinstance(value, bool) and value >= 0
    return float(value) if valid else float(DEFAULT_GRACE_SECONDS)


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
