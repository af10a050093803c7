"""Reading the Alibaba openb GPU trace (CSV): node lists and pod lists."""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path


class TraceError(ValueError):
    """A trace file that cannot be read; the message names file, line and column."""


@dataclass(frozen=True, slots=True)
class TraceNode:
    """A node of the trace: CPU in millicores, memory in MiB, its GPUs and their model."""

    name: str
    cpu_milli: int
    memory_mib: int
    gpus: int
    model: str


@dataclass(frozen=True, slots=True)
class TracePod:
    """A pod of the trace: ``gpu_milli`` < 1000 is a share of one GPU; ``gpu_spec`` lists the
    allowed GPU models (empty: any)."""

    name: str
    cpu_milli: int
    memory_mib: int
    num_gpu: int
    gpu_milli: int
    gpu_spec: frozenset[str] = frozenset()

    @property
    def gpu_request_milli(self) -> int:
        """GPU milli the pod asks for in all."""
        return self.num_gpu * self.gpu_milli


def _int(row: dict[str, str], column: str, path: Path, line: int) -> int:
    value = row.get(column)
    if value is None:
        raise TraceError(f"{path}:{line}: column {column!r} is missing")
    try:
        return int(float(value))
    except ValueError as exc:
        raise TraceError(
            f"{path}:{line}: column {column!r} must be a number, got {value!r}"
        ) from exc


def read_nodes(path: Path) -> list[TraceNode]:
    """Nodes from a node-list CSV (sn, cpu_milli, memory_mib, gpu, model)."""
    with path.open(newline="") as handle:
        return [
            TraceNode(
                name=row.get("sn") or f"node-{line}",
                cpu_milli=_int(row, "cpu_milli", path, line),
                memory_mib=_int(row, "memory_mib", path, line),
                gpus=_int(row, "gpu", path, line),
                model=row.get("model") or "",
            )
            for line, row in enumerate(csv.DictReader(handle), start=2)
        ]


def read_pods(path: Path) -> list[TracePod]:
    """Pods from a pod-list CSV; only name, cpu_milli, memory_mib, num_gpu and gpu_milli are
    required, gpu_spec is optional."""
    with path.open(newline="") as handle:
        pods = []
        for line, row in enumerate(csv.DictReader(handle), start=2):
            spec = row.get("gpu_spec") or ""
            pod = TracePod(
                name=row.get("name") or f"pod-{line}",
                cpu_milli=_int(row, "cpu_milli", path, line),
                memory_mib=_int(row, "memory_mib", path, line),
                num_gpu=_int(row, "num_gpu", path, line),
                gpu_milli=_int(row, "gpu_milli", path, line),
                gpu_spec=frozenset(s for s in spec.split("|") if s),
            )
            if pod.num_gpu > 1 and pod.gpu_milli not in (0, 1000):
                raise TraceError(
                    f"{path}:{line}: a pod with {pod.num_gpu} GPUs must use whole GPUs "
                    "(gpu_milli 1000)"
                )
            pods.append(pod)
        return pods
