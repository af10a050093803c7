"""FGD's statistical GPU fragmentation (Weng et al., ATC'23, §3; ``pkg/utils/frag.go``), over
the node table.

For one node and one typical shape, the node's idle GPU milli counts as fragment: all of it when
the shape is CPU-only, may not use the node, lacks CPU, or lacks devices (fewer than ``devices``
with at least ``gpu_milli`` free); otherwise only the devices with less than ``gpu_milli`` free.
A node's fragmentation is the frequency-weighted sum over shapes, kept as exact integers
(milli × pods); divide by :attr:`FragModel.total`.

Shapes are grouped by (milli, devices): with ``cnt_m`` the devices with at least ``m`` free and
``sum_m`` their free milli, a fitting shape's fragment is ``idle − sum_m``, so

    fragment(node) = idle · total − Σ_groups [cnt_m ≥ devices] · sum_m · weight(node, group, cpu)

where ``weight`` counts the group's shapes that the node admits with its free CPU.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pykai.engine.jobs import Task
from pykai.engine.nodes import CPU, BoolArray, IntArray, NodeTable
from pykai.engine.typical import NONZERO_CPU, TypicalPods, shape_of


@dataclass(frozen=True)
class FragModel:
    """Typical pods compiled against the nodes, to measure many node states at once."""

    total: int
    thresholds: IntArray  # (M,) distinct GPU milli of the GPU shapes
    group_threshold: IntArray  # (R,) column of each (milli, devices) group in thresholds
    group_count: IntArray  # (R,) devices of each group
    cpu_levels: IntArray  # (L,) sorted distinct CPU milli of the GPU shapes
    weights: IntArray  # (N, R, L + 1): shapes node n admits with i = #levels <= its free cpu

    @classmethod
    def compile(cls, typical: TypicalPods, admits: list[BoolArray], nodes: int) -> FragModel:
        """Compile ``typical`` for ``nodes`` rows; ``admits[s]`` marks the rows shape ``s`` may
        use."""
        gpu_shapes = [
            (s, n, mask)
            for s, n, mask in zip(typical.shapes, typical.counts, admits, strict=True)
            if s.gpu_milli
        ]
        thresholds = sorted({s.gpu_milli for s, _, _ in gpu_shapes})
        groups = sorted({(s.gpu_milli, s.devices) for s, _, _ in gpu_shapes})
        levels = sorted({s.cpu_milli for s, _, _ in gpu_shapes})
        weights = np.zeros((nodes, len(groups), len(levels) + 1), dtype=np.int64)
        for shape, n, mask in gpu_shapes:
            g = groups.index((shape.gpu_milli, shape.devices))
            first = levels.index(shape.cpu_milli) + 1
            weights[mask, g, first:] += n
        return cls(
            total=sum(typical.counts),
            thresholds=np.array(thresholds, dtype=np.int64),
            group_threshold=np.array([thresholds.index(m) for m, _ in groups], dtype=np.int64),
            group_count=np.array([k for _, k in groups], dtype=np.int64),
            cpu_levels=np.array(levels, dtype=np.int64),
            weights=weights,
        )

    def summarise(self, gpu: IntArray) -> tuple[IntArray, IntArray]:
        """Per state (rows of ``gpu``, free milli per device): devices with at least each
        threshold free, and their free milli."""
        enough = gpu[:, None, :] >= self.thresholds[None, :, None]
        cnt: IntArray = enough.sum(axis=2)
        sums: IntArray = np.where(enough, gpu[:, None, :], 0).sum(axis=2)
        return cnt, sums

    def amount(
        self, rows: IntArray, cpu: IntArray, idle: IntArray, cnt: IntArray, sums: IntArray
    ) -> IntArray:
        """Fragmentation × :attr:`total` of states of node ``rows`` given by free CPU, idle GPU
        milli and their :meth:`summarise` columns."""
        level = np.searchsorted(self.cpu_levels, cpu, side="right")
        weight = self.weights[
            rows[:, None], np.arange(len(self.group_count))[None, :], level[:, None]
        ]
        fits = cnt[:, self.group_threshold] >= self.group_count[None, :]
        usable = np.where(fits, sums[:, self.group_threshold] * weight, 0).sum(axis=1)
        result: IntArray = idle * self.total - usable
        return result


class FragIndex:
    """Every node's current fragmentation under one model, re-measured only for rows that
    changed since (the node table's row versions)."""

    def __init__(self, model: FragModel, nodes: NodeTable, typical: TypicalPods) -> None:
        self.model = model
        self.nodes = nodes
        self.typical = typical
        size = len(nodes)
        self._version = np.full(size, -1, dtype=np.int64)
        self.cnt: IntArray = np.zeros((size, len(model.thresholds)), dtype=np.int64)
        self.sums: IntArray = np.zeros_like(self.cnt)
        self.frag: IntArray = np.zeros(size, dtype=np.int64)

    @classmethod
    def of(cls, nodes: NodeTable, typical: TypicalPods) -> FragIndex:
        """The index of ``nodes`` for ``typical``, kept with the table (one at a time: other
        typical pods replace it) until its nodes change."""
        index = nodes.derived.get(cls)
        if not isinstance(index, FragIndex) or index.typical != typical:
            admits = [
                nodes.constraint_mask(s.constraints) if s.gpu_milli else np.zeros(0, dtype=bool)
                for s in typical.shapes
            ]
            index = cls(FragModel.compile(typical, admits, len(nodes)), nodes, typical)
            nodes.derived[cls] = index
        index.typical = typical  # equal: the next call with the same one compares identity
        index.refresh()
        return index

    def free_cpu(self, rows: IntArray) -> IntArray:
        """Free CPU milli of the rows, as whole numbers."""
        cpu: IntArray = np.rint(self.nodes.alloc[rows, CPU] - self.nodes.used[rows, CPU]).astype(
            np.int64
        )
        return cpu

    def refresh(self) -> None:
        """Re-measure the rows whose node changed."""
        stale = np.flatnonzero(self._version != self.nodes.row_version)
        if not stale.size:
            return
        gpu = self.nodes.device_milli[stale]
        cnt, sums = self.model.summarise(gpu)
        self.cnt[stale], self.sums[stale] = cnt, sums
        self.frag[stale] = self.model.amount(
            stale, self.free_cpu(stale), gpu.sum(axis=1), cnt, sums
        )
        self._version[stale] = self.nodes.row_version[stale]

    def total_milli(self) -> float:
        """The cluster's fragmentation, in GPU milli."""
        return float(self.frag.sum()) / max(self.model.total, 1)

    def growth(self, task: Task, rows: IntArray, before: IntArray, taken: IntArray) -> IntArray:
        """How much the fragmentation of each of ``rows`` grows (× total) if the task takes
        ``taken[i]`` milli from each of its devices on row i, which now have ``before[i]``
        free (whole devices: 1000)."""
        shape = shape_of(task)
        devices = max(shape.devices, 1) if shape.gpu_milli else 0
        thresholds = self.model.thresholds[None, :]
        old, new = before[:, None], (before - taken)[:, None]
        was, stays = old >= thresholds, new >= thresholds
        cnt = self.cnt[rows] - devices * was + devices * stays
        sums = self.sums[rows] - devices * np.where(was, old, 0) + devices * np.where(stays, new, 0)
        idle = self.nodes.device_milli[rows].sum(axis=1) - devices * taken
        cpu = self.free_cpu(rows) - (round(task.request.cpu) or NONZERO_CPU)
        after = self.model.amount(rows, cpu, idle, cnt, sums)
        grown: IntArray = after - self.frag[rows]
        return grown
