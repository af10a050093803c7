"""KAI's placement: binpack or spread per resource, plus its always-on node orders (a CPU-only
task prefers CPU-only nodes; a fractional task prefers nodes with a shared GPU it fits on), and
gpupack / gpuspread for the devices of a fractional task."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from pykai.engine.gpu_sharing import NodeGpuGroups, choose_devices
from pykai.engine.jobs import Task
from pykai.engine.nodes import CPU, GPU, FloatArray, IntArray, NodeTable
from pykai.engine.policies.base import portions
from pykai.engine.settings import Strategy
from pykai.model.resources import EPS

RESOURCE_TYPE_SCORE = 10.0  # a CPU-only task on a CPU-only node
BINPACK_MAX = 9.0
SHARED_GROUP_SCORE = 1000.0  # KAI's gpusharingorder: a node with a shared group that fits


@dataclass(frozen=True)
class KaiScorer:
    """binpack (fullest first, KAI's min-max scaled 0..9) or spread (the freest share of the
    node first) on the task's resource: GPU for GPU tasks, CPU for the others."""

    name: Strategy

    def score(self, nodes: NodeTable, task: Task, rows: IntArray, future: bool) -> FloatArray:
        """KAI's node scores for the rows."""
        gpu_task = task.request.gpu > 0
        column = GPU if gpu_task else CPU
        free = nodes.alloc[rows, column] - nodes.used[rows, column]
        if self.name == "binpack":
            low, high = float(free.min()), float(free.max())
            scores: FloatArray = (
                BINPACK_MAX * (1.0 - (free - low) / (high - low))
                if high > low
                else np.full(free.shape, BINPACK_MAX)
            )
        else:
            total = nodes.alloc[rows, column]
            scores = np.divide(free, total, out=np.zeros_like(free), where=total > 0)
        if not gpu_task:
            scores = scores + RESOURCE_TYPE_SCORE * (nodes.alloc[rows, GPU] <= 0)
        if task.pod.gpu.is_shared:
            groups = nodes.shared_future if future else nodes.shared_free
            share = portions(nodes, task)[rows]
            scores = scores + SHARED_GROUP_SCORE * ((groups[rows] >= share - EPS) & (share <= 1))
        return scores


@dataclass(frozen=True)
class KaiChooser:
    """gpupack (the fullest fitting shared GPU first, a new device last) or gpuspread (new
    devices first, then the emptiest shared GPU)."""

    order: Literal["pack", "spread"]

    def choose(
        self, nodes: NodeTable, task: Task, row: int, portion: float, future: bool
    ) -> tuple[str, ...] | None:
        """The groups, by :func:`choose_devices`."""
        free = nodes.alloc[row, GPU] - nodes.used[row, GPU]
        if future:
            free += nodes.releasing[row, GPU]
        return choose_devices(
            nodes.shared.get(nodes.names[row], NodeGpuGroups()),
            int(free + EPS),
            portion,
            task.pod.gpu.devices,
            task.uid,
            self.order,
            future=future,
        )
