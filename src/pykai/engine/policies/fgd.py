"""Fragmentation-aware placement: FGD (Weng et al., ATC'23) and pykai's own refinement of it.

Both compare every placement of a task (each node; for a one-device share, each distinct
fitting device of a node) by how much it grows the node's fragmentation against the typical
pods (:mod:`pykai.engine.fragmentation`), and score it ``int(sigmoid(−growth / 1000) · 100)``
as FGD's plugin does, ties going to the first node. Every task is scored this way, CPU-only
ones too: a CPU pod must not take the last CPUs of a node whose idle GPUs the typical GPU pods
then cannot use. See docs/placement.md for what pykai adds and why.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pykai.engine.fragmentation import FragIndex
from pykai.engine.jobs import Task
from pykai.engine.nodes import MILLI, FloatArray, IntArray, NodeTable
from pykai.engine.policies.base import (
    devices_of,
    free_cpu,
    group_of_device,
    idle_gpu_milli,
    taken_milli,
)
from pykai.engine.policies.kai import KaiChooser
from pykai.engine.policies.paper import MAX_SCORE, MAX_SPEC_CPU, MAX_SPEC_GPU
from pykai.engine.typical import TypicalPods


@dataclass(frozen=True)
class Options:
    """The placements of one task to compare: ``at[i]`` indexes the candidate rows,
    ``column[i]`` is the device a one-device share would take (-1 otherwise), and ``growth[i]``
    the fragmentation growth (× the model's total) it causes."""

    at: IntArray
    column: IntArray
    growth: IntArray


TIE_BREAK = 0.999  # the largest tie-break fraction: below 1, the next integer score


def sigmoid_scores(growth: IntArray | FloatArray, total: int) -> FloatArray:
    """FGD's score: int(sigmoid(fragmentation decrease / 1000) · 100)."""
    decrease = -growth / max(total, 1) / MILLI
    scores: FloatArray = np.trunc(1.0 / (1.0 + np.exp(-decrease)) * MAX_SCORE)
    return scores


def _one_device_share(task: Task) -> bool:
    return task.pod.gpu.is_shared and task.pod.gpu.devices == 1


@dataclass(frozen=True)
class FgdScorer:
    """``FGDScore``: the placement whose node's fragmentation grows least."""

    typical: TypicalPods
    name: str = "fgd"

    def options(self, nodes: NodeTable, task: Task, rows: IntArray) -> Options:
        """Every distinct placement on the rows: each node for CPU and whole-GPU tasks (which
        device they take does not change the node's state), each fitting device of a distinct
        free milli for a one-device share."""
        index = FragIndex.of(nodes, self.typical)
        taken = taken_milli(nodes, task, rows)
        if _one_device_share(task):
            gpu = nodes.device_milli[rows]
            fits = gpu >= taken[:, None]
            for j in range(1, gpu.shape[1]):  # the same free milli twice: keep the first
                fits[:, j] &= ~(gpu[:, :j] == gpu[:, j : j + 1]).any(axis=1)
            at, column = np.nonzero(fits)
            before = gpu[at, column]
        else:
            at = np.arange(len(rows))
            column = np.full(len(rows), -1)
            before = np.full(len(rows), MILLI, dtype=np.int64)
        growth = index.growth(task, rows[at], before, taken[at])
        return Options(at, column, growth)

    def keys(self, nodes: NodeTable, task: Task, rows: IntArray, found: Options) -> FloatArray:
        """How good each option is (higher is better)."""
        return sigmoid_scores(found.growth, FragIndex.of(nodes, self.typical).model.total)

    def score(self, nodes: NodeTable, task: Task, rows: IntArray, future: bool) -> FloatArray:
        """Per row, the key of its best option."""
        found = self.options(nodes, task, rows)
        keys = self.keys(nodes, task, rows, found)
        best = np.full(len(rows), -np.inf)
        np.maximum.at(best, found.at, keys)
        return best

    def best_column(self, nodes: NodeTable, task: Task, row: int) -> int:
        """The device of the row's best option (the first of equal keys; -1: none fits)."""
        rows = np.array([row])
        found = self.options(nodes, task, rows)
        if not found.at.size:
            return -1
        return int(found.column[int(np.argmax(self.keys(nodes, task, rows, found)))])


def tie_breaks(*columns: FloatArray) -> FloatArray:
    """Per option, a fraction in (0, 1] ordering the options by ``columns`` lexicographically,
    lower values first: 1 for the best, equal for options equal in every column."""
    order = np.lexsort(columns[::-1])
    ranked = np.stack(columns)[:, order]
    distinct = np.ones(len(order), dtype=bool)
    distinct[1:] = (ranked[:, 1:] != ranked[:, :-1]).any(axis=0)
    rank = np.empty(len(order), dtype=np.int64)
    rank[order] = np.cumsum(distinct) - 1
    fraction: FloatArray = 1.0 - rank / (rank.max(initial=0) + 1.0)
    return fraction


@dataclass(frozen=True)
class PykaiScorer(FgdScorer):
    """FGD, aware of CPU stranding and at full resolution (docs/placement.md):

    1. for CPU-only tasks and shares, the growth of the node's stranded GPU (idle GPU milli
       beyond what its free CPU serves at the typical pods' CPU per GPU) is added to FGD's
       fragmentation growth before the sigmoid; whole-GPU tasks keep FGD's measure;
    2. equal (integer) sigmoid scores go to the placement whose growth is least, exactly (the
       sigmoid's truncation hides differences below about 0.04 GPU), then that strands least,
       then, for a CPU-only task, that leaves its node least free (BestFit), then to the first
       node and device, as in FGD.

    The key is the sigmoid score plus a tie-break fraction below 1, so its integer part is
    FGD's score of the placement."""

    name: str = "pykai"

    def keys(self, nodes: NodeTable, task: Task, rows: IntArray, found: Options) -> FloatArray:
        """Sigmoid score, then less growth, less stranding, (CPU-only tasks) the tighter node."""
        model = FragIndex.of(nodes, self.typical).model
        at = rows[found.at]
        requested = taken_milli(nodes, task, at) * devices_of(task)
        ratio = self.typical.cpu_per_gpu_milli or 1.0
        idle, cpu = idle_gpu_milli(nodes, at), free_cpu(nodes, at)
        stranded = np.maximum(0.0, idle - cpu / ratio)
        after = np.maximum(0.0, idle - requested - (cpu - task.request.cpu) / ratio)
        strand = after - stranded
        growth = found.growth.astype(np.float64)
        cpu_only = not task.request.gpu
        if cpu_only or task.pod.gpu.is_shared:
            growth = growth + strand * model.total
        left = np.zeros(len(at))
        if cpu_only:
            left = (cpu - task.request.cpu) / MAX_SPEC_CPU + (idle - requested) / MAX_SPEC_GPU
        ties = tie_breaks(growth, strand, left) * TIE_BREAK
        keys: FloatArray = sigmoid_scores(growth, model.total) + ties
        return keys


@dataclass(frozen=True)
class FragChooser:
    """A one-device share takes the device of its best option under ``scorer``; other
    fractional tasks, and pipelined ones, take devices by gpupack."""

    scorer: FgdScorer

    def choose(
        self, nodes: NodeTable, task: Task, row: int, portion: float, future: bool
    ) -> tuple[str, ...] | None:
        """The best option's device as a group."""
        if future or not _one_device_share(task):
            return KaiChooser("pack").choose(nodes, task, row, portion, future)
        column = self.scorer.best_column(nodes, task, row)
        return None if column < 0 else (group_of_device(nodes, task, row, column),)
