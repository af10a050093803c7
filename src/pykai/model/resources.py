"""Resource vectors: CPU in millicores, memory in bytes, GPU in devices (fractions allowed)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

from pykai.model.quantity import exact, format_quantity

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
        """Human form: ``cpu 1500m, memory 2.0Gi, gpu 1``."""
        cpu, memory, gpu = format_cpu(self.cpu), format_memory(self.memory), format_gpu(self.gpu)
        return f"cpu {cpu}, memory {memory}, gpu {gpu}"


Resources.ZERO = Resources()


def format_cpu(millis: float) -> str:
    """Millicores in Kubernetes form ("1500m", "2")."""
    if math.isinf(millis):
        return "unlimited"
    return f"{millis / 1000:g}" if millis % 1000 == 0 else f"{millis:g}m"


def format_memory(size: float) -> str:
    """Bytes in Kubernetes form ("2Gi", "6G", "512Mi")."""
    if math.isinf(size):
        return "unlimited"
    units: tuple[tuple[str, float], ...] = (
        ("Ti", 2.0**40), ("Gi", 2.0**30), ("Mi", 2.0**20), ("Ki", 2.0**10),
        ("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3),
    )  # fmt: skip
    for suffix, unit in units:
        if size >= unit and size % unit == 0:
            return f"{size / unit:g}{suffix}"
    if size >= 2**30:
        return f"{size / 2**30:.1f}Gi"
    if size >= 2**20:
        return f"{size / 2**20:.1f}Mi"
    return f"{size:g}"


def format_gpu(devices: float) -> str:
    """GPU devices, fractions with up to two decimals."""
    if math.isinf(devices):
        return "unlimited"
    return f"{round(devices, 2):g}"


def resource_list(amount: Resources) -> dict[str, str]:
    """Engine units as a Kubernetes ResourceList (cpu, memory, nvidia.com/gpu) of canonical
    quantities, the form Kubernetes itself writes (``1500m``, ``6G``, ``512Mi``, ``500m``)."""
    return {
        "cpu": format_quantity(exact(amount.cpu) / 1000),
        "memory": format_quantity(exact(amount.memory), binary=True),
        "nvidia.com/gpu": format_quantity(exact(amount.gpu)),
    }
