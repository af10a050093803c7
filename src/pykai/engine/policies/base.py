"""The two seams of placement: a node scorer (which node) and a GPU chooser (which shared
devices on it), and the measures of a node that scorers share."""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from pykai.engine.gpu_sharing import new_group_id
from pykai.engine.jobs import Task
from pykai.engine.nodes import CPU, MILLI, FloatArray, IntArray, NodeTable


class NodeScorer(Protocol):
    """Scores the candidate rows for a task: higher is better, and of equal scores the first
    row (the smallest node name) wins. ``future`` is set when the candidates fit only on
    resources being released."""

    @property
    def name(self) -> str:
        """The scorer's name, as decisions report it."""
        ...

    def score(self, nodes: NodeTable, task: Task, rows: IntArray, future: bool) -> FloatArray:
        """One finite score per row of ``rows``, in their order. Contract: every row given can
        hold the task (placement filtered them: fit, constraints, idle or, with ``future``,
        releasing resources); the scorer must not change ``nodes`` or ``task``, and gives the
        same scores for the same table and task (a scorer that draws does so from
        ``task_rng``), so a statement rolled back and tried again decides the same."""
        ...


class GpuChooser(Protocol):
    """Chooses the GPU groups a fractional task takes on the chosen node."""

    def choose(
        self, nodes: NodeTable, task: Task, row: int, portion: float, future: bool
    ) -> tuple[str, ...] | None:
        """Group ids for each device the task asks for: an existing shared group of the row
        with room for ``portion`` (idle, or with ``future`` releasing), or a new id for an idle
        whole device. ``None`` means the task does not fit on this row after all; placement
        then tries the next best row. Contract: it must not change ``nodes``; the caller
        allocates the groups it returns."""
        ...


@dataclass(frozen=True)
class PlacementPolicy:
    """A scorer for GPU tasks, one for CPU-only tasks, and a GPU chooser."""

    gpu: NodeScorer
    cpu: NodeScorer
    chooser: GpuChooser

    def scorer_for(self, task: Task) -> NodeScorer:
        """The scorer that places ``task``."""
        return self.gpu if task.request.gpu > 0 else self.cpu


def portions(nodes: NodeTable, task: Task) -> FloatArray:
    """The portion of a device the task takes on each node (inf where it cannot tell)."""
    request = task.pod.gpu
    if request.fraction:
        return np.full(len(nodes), request.fraction)
    memory = nodes.gpu_memory_mib
    found: FloatArray = np.divide(
        float(request.memory_mib), memory, out=np.full(len(nodes), np.inf), where=memory > 0
    )
    return found


def free_cpu(nodes: NodeTable, rows: IntArray) -> FloatArray:
    """Free CPU milli of the rows."""
    free: FloatArray = nodes.alloc[rows, CPU] - nodes.used[rows, CPU]
    return free


def idle_gpu_milli(nodes: NodeTable, rows: IntArray) -> IntArray:
    """Free GPU milli of the rows, over all their devices."""
    idle: IntArray = nodes.device_milli[rows].sum(axis=1)
    return idle


def taken_milli(nodes: NodeTable, task: Task, rows: IntArray) -> IntArray:
    """GPU milli the task takes from each of its devices on each row (0 for CPU tasks)."""
    gpu = task.pod.gpu
    if gpu.is_shared:
        share = np.minimum(portions(nodes, task)[rows], 1.0)
        taken: IntArray = np.rint(share * MILLI).astype(np.int64)
        return taken
    return np.full(len(rows), MILLI if gpu.whole else 0, dtype=np.int64)


def devices_of(task: Task) -> int:
    """How many devices the task takes."""
    gpu = task.pod.gpu
    return gpu.devices if gpu.is_shared else gpu.whole


def task_rng(task: Task) -> np.random.Generator:
    """A random source fixed by the task's UID (the same draw for the same pod)."""
    return np.random.default_rng(zlib.crc32(task.uid.encode()))


def group_of_device(nodes: NodeTable, task: Task, row: int, column: int) -> str:
    """The GPU group behind column ``column`` of a row's devices (``device_milli``: shared
    groups first, then idle whole GPUs, which open a new group)."""
    groups = nodes.shared.get(nodes.names[row])
    existing = list(groups.groups) if groups is not None else []
    return existing[column] if column < len(existing) else new_group_id(task.uid, 0)
