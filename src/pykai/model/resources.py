"""Resource vectors: CPU in millicores, memory in bytes, GPU in devices (fractions allowed)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

from pykai.model.quantity import exact, format_number, format_quantity

RESOURCE_NAMES: tuple[str, str, str] = ("cpu", "memory", "gpu")
MB = 1_000_000.0  # queue memory is in MB (10^6 bytes), as in KAI
EPS = 1e-9
"""How far apart two amounts (millicores, bytes, GPUs) may be and still count as equal: below
any meaningful amount, above the noise of float sums."""


@dataclass(frozen=True, slots=True)
class Resources:
    """An amount of each schedulable resource. Unlimited is written as ``math.inf``."""

    cpu: float = 0.0
    memory: float = 0.0
    gpu: float = 0.0

    ZERO: ClassVar[Resources]

    def __add__(self, other: Resources) -> Resources:
        return Resources(self.cpu + other.cpu, self.memory + other.memory, self.gpu + other.gpu)

    def __sub__(self, other: Resources) -> Resources:
        return Resources(self.cpu - other.cpu, self.memory - other.memory, self.gpu - other.gpu)

    def scaled(self, factor: float) -> Resources:
        """Every resource multiplied by ``factor``."""
        return Resources(self.cpu * factor, self.memory * factor, self.gpu * factor)

    def fits_in(self, other: Resources, eps: float = EPS) -> bool:
        """True if every resource is at most the other's."""
        return (
            self.cpu <= other.cpu + eps
            and self.memory <= other.memory + eps
            and self.gpu <= other.gpu + eps
        )

    def minimum(self, other: Resources) -> Resources:
        """The element-wise minimum."""
        return Resources(
            min(self.cpu, other.cpu), min(self.memory, other.memory), min(self.gpu, other.gpu)
        )

    def maximum(self, other: Resources) -> Resources:
        """The element-wise maximum."""
        return Resources(
            max(self.cpu, other.cpu), max(self.memory, other.memory), max(self.gpu, other.gpu)
        )

    def get(self, name: str) -> float:
        """The amount of the named resource ("cpu", "memory" or "gpu")."""
        value: float = getattr(self, name)
        return value

    def __iter__(self):  # type: ignore[no-untyped-def]
        yield self.cpu
        yield self.memory
        yield self.gpu

    def describe(self) -> str:
        """Human form: ``cpu 1500m, memory 2Gi, gpu 1``."""
        cpu, memory, gpu = format_cpu(self.cpu), format_memory(self.memory), format_gpu(self.gpu)
        return f"cpu {cpu}, memory {memory}, gpu {gpu}"


Resources.ZERO = Resources()


def format_cpu(millis: float) -> str:
    """Millicores as Kubernetes writes a CPU quantity (``1500m``, ``2``); ``unlimited``."""
    if math.isinf(millis):
        return "unlimited"
    return format_quantity(exact(millis) / 1000)


def format_memory(size: float) -> str:
    """Bytes as Kubernetes writes a memory quantity (``6G``, ``512Mi``); ``unlimited``."""
    if math.isinf(size):
        return "unlimited"
    return format_quantity(exact(size), binary=True)


def format_gpu(devices: float) -> str:
    """GPU devices as a count, as KAI's messages and ``get nodes`` show them: fractions with up
    to two decimals (``2``, ``0.5``, ``1000000``, never ``1e+06``); ``unlimited``."""
    if math.isinf(devices):
        return "unlimited"
    return format_number(round(devices, 2))


def resource_list(amount: Resources) -> dict[str, str]:
    """Engine units as a Kubernetes ResourceList (cpu, memory, nvidia.com/gpu) of canonical
    quantities, the form Kubernetes itself writes (``1500m``, ``6G``, ``512Mi``, ``500m``)."""
    return {
        "cpu": format_quantity(exact(amount.cpu) / 1000),
        "memory": format_quantity(exact(amount.memory), binary=True),
        "nvidia.com/gpu": format_quantity(exact(amount.gpu)),
    }
