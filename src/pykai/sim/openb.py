"""Reading the Alibaba openb GPU trace (CSV): node lists and pod lists.

Errors name the file, the line (1 = the header) and the column, e.g.
``pods.csv:7: column 'gpu_milli' must be a whole number, got 'half'``.
"""

from __future__ import annotations

import csv
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from pykai.model.errors import PykaiError

MILLI = 1000
NODE_COLUMNS = ("sn", "cpu_milli", "memory_mib", "gpu", "model")
POD_COLUMNS = ("name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli")


class TraceError(PykaiError, ValueError):
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
    """A pod of the trace.

    ``gpu_milli`` < 1000 with ``num_gpu`` 1 is a share of one GPU; ``num_gpu`` k > 1 means k
    whole GPUs. ``gpu_spec`` lists the allowed GPU models in trace order (empty: any).
    """

    name: str
    cpu_milli: int
    memory_mib: int
    num_gpu: int
    gpu_milli: int
    gpu_spec: tuple[str, ...] = ()

    @property
    def gpu_request_milli(self) -> int:
        """GPU milli the pod asks for in all."""
        return self.num_gpu * self.gpu_milli

    @property
    def is_sharing(self) -> bool:
        """True for a pod that takes a share of one GPU."""
        return self.num_gpu == 1 and self.gpu_milli < MILLI


def _rows(path: Path, required: tuple[str, ...]) -> Iterator[tuple[int, dict[str, str]]]:
    """The rows of a CSV with their line numbers, after checking the header."""
    with path.open(newline="") as handle:
        reader = csv.DictReader(handle)
        header = reader.fieldnames or []
        missing = [c for c in required if c not in header]
        if missing:
            raise TraceError(
                f"{path}:1: missing column(s) {', '.join(repr(c) for c in missing)}; "
                f"the header has {', '.join(header) or 'nothing'}"
            )
        yield from enumerate(reader, start=2)


def _int(row: dict[str, str], column: str, path: Path, line: int) -> int:
    """A non-negative whole number from a cell."""
    value = (row.get(column) or "").strip()
    try:
        number = float(value)
    except ValueError:
        number = float("nan")
    if not number.is_integer() or number < 0:
        raise TraceError(
            f"{path}:{line}: column {column!r} must be a whole number >= 0, got {value!r}"
        )
    return int(number)


def read_nodes(path: Path) -> list[TraceNode]:
    """Nodes from a node-list CSV: sn, cpu_milli, memory_mib and gpu are required; model (the
    GPU model) is optional."""
    nodes = []
    for line, row in _rows(path, NODE_COLUMNS[:4]):
        node = TraceNode(
            name=(row.get("sn") or "").strip() or f"node-{line:05d}",
            cpu_milli=_int(row, "cpu_milli", path, line),
            memory_mib=_int(row, "memory_mib", path, line),
            gpus=_int(row, "gpu", path, line),
            model=(row.get("model") or "").strip(),
        )
        nodes.append(node)
    return nodes


def _pod(row: dict[str, str], path: Path, line: int) -> TracePod:
    num_gpu = _int(row, "num_gpu", path, line)
    gpu_milli = _int(row, "gpu_milli", path, line)
    if gpu_milli > MILLI:
        raise TraceError(f"{path}:{line}: column 'gpu_milli' must be at most 1000, got {gpu_milli}")
    if num_gpu > 1 and gpu_milli != MILLI:
        raise TraceError(
            f"{path}:{line}: column 'gpu_milli' must be 1000 for a pod of {num_gpu} GPUs "
            f"(whole GPUs), got {gpu_milli}"
        )
    if num_gpu == 0 or gpu_milli == 0:  # no GPU asked for: a CPU pod
        num_gpu = gpu_milli = 0
    spec = tuple(s.strip() for s in (row.get("gpu_spec") or "").split("|") if s.strip())
    return TracePod(
        name=(row.get("name") or "").strip() or f"pod-{line:05d}",
        cpu_milli=_int(row, "cpu_milli", path, line),
        memory_mib=_int(row, "memory_mib", path, line),
        num_gpu=num_gpu,
        gpu_milli=gpu_milli,
        gpu_spec=spec if num_gpu else (),
    )


def read_pods(path: Path) -> list[TracePod]:
    """Pods from a pod-list CSV: name, cpu_milli, memory_mib, num_gpu and gpu_milli are
    required; gpu_spec is optional and other columns are ignored."""
    return [_pod(row, path, line) for line, row in _rows(path, POD_COLUMNS)]


def write_pods(pods: list[TracePod], path: Path) -> None:
    """Write pods as a pod-list CSV that :func:`read_pods` reads back."""
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow([*POD_COLUMNS, "gpu_spec"])
        for p in pods:
            writer.writerow(
                [p.name, p.cpu_milli, p.memory_mib, p.num_gpu, p.gpu_milli, "|".join(p.gpu_spec)]
            )
