"""The FGD paper's baseline policies, scored as its simulator's kube-scheduler plugins do
(hkust-adsl/kubernetes-scheduler-simulator, ``pkg/simulator/plugin/``): integer scores 0..100,
the best wins and ties go to the first node. Every task is scored by them, CPU-only ones too.
Unless a policy chooses devices itself, a share takes the fitting GPU with the least free
(gpupack)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pykai.engine.jobs import Task
from pykai.engine.nodes import GPU, MILLI, FloatArray, IntArray, NodeTable
from pykai.engine.policies.base import (
    devices_of,
    free_cpu,
    group_of_device,
    idle_gpu_milli,
    taken_milli,
    task_rng,
)
from pykai.engine.policies.kai import KaiChooser
from pykai.engine.state import gpu_class

MAX_SCORE = 100
MAX_SPEC_CPU, MAX_SPEC_GPU = 128_000, 8 * MILLI  # the simulator's normalisers


def _requested_gpu(nodes: NodeTable, task: Task, rows: IntArray) -> IntArray:
    requested: IntArray = taken_milli(nodes, task, rows) * devices_of(task)
    return requested


@dataclass(frozen=True)
class RandomScorer:
    """``RandomScore``: any feasible node, drawn anew for each pod."""

    name: str = "random"

    def score(self, nodes: NodeTable, task: Task, rows: IntArray, future: bool) -> FloatArray:
        """Uniform random scores, fixed by the task's UID."""
        scores: FloatArray = task_rng(task).random(len(rows))
        return scores


@dataclass(frozen=True)
class RandomChooser:
    """A share goes to any fitting GPU of the node (every idle GPU counts once)."""

    def choose(
        self, nodes: NodeTable, task: Task, row: int, portion: float, future: bool
    ) -> tuple[str, ...] | None:
        """A uniformly drawn fitting device, for one-device shares now; else gpupack."""
        if future or task.pod.gpu.devices != 1:
            return KaiChooser("pack").choose(nodes, task, row, portion, future)
        taken = taken_milli(nodes, task, np.array([row]))[0]
        fitting = np.flatnonzero(nodes.device_milli[row] >= taken)
        if not fitting.size:
            return None
        column = int(fitting[task_rng(task).integers(len(fitting))])
        return (group_of_device(nodes, task, row, column),)


@dataclass(frozen=True)
class DotProductScorer:
    """``DotProductScore`` (Tetris), the GPU dimension merged, normalised by the largest
    machine: 100 · (1 − (free · request) / 2), so the node left least aligned wins."""

    name: str = "dotprod"

    def score(self, nodes: NodeTable, task: Task, rows: IntArray, future: bool) -> FloatArray:
        """The plugin's integer scores."""
        product = free_cpu(nodes, rows) / MAX_SPEC_CPU * (task.request.cpu / MAX_SPEC_CPU)
        gpu = idle_gpu_milli(nodes, rows) / MAX_SPEC_GPU
        product = product + gpu * (_requested_gpu(nodes, task, rows) / MAX_SPEC_GPU)
        scores: FloatArray = np.trunc(MAX_SCORE * (1 - product / 2))
        return scores


def _go_div(a: IntArray, b: int) -> IntArray:
    """Integer division truncating toward zero, as Go does."""
    quotient: IntArray = np.sign(a) * (np.abs(a) // b)
    return quotient


@dataclass(frozen=True)
class ClusteringScorer:
    """``GpuClusteringScore``: nodes holding only pods of the task's GPU class (shares, or k
    whole GPUs) score 75-100, with other classes too 50-75, nodes without GPU pods 25-50, nodes
    of other classes only 0-25; within a tier the fuller node wins. CPU-only tasks score 0."""

    name: str = "clustering"

    def score(self, nodes: NodeTable, task: Task, rows: IntArray, future: bool) -> FloatArray:
        """The plugin's integer scores."""
        klass = gpu_class(task)
        if klass < 0:
            return np.zeros(len(rows))
        present = nodes.gpu_classes[rows] > 0
        same = present[:, klass]
        classes = present.sum(axis=1)
        base = np.where(same, np.where(classes == 1, 75, 50), np.where(classes == 0, 25, 0))
        fill = _go_div(MAX_SCORE // 4 * (MAX_SPEC_GPU - idle_gpu_milli(nodes, rows)), MAX_SPEC_GPU)
        scores: FloatArray = (fill + base).astype(np.float64)
        return scores


@dataclass(frozen=True)
class PackingScorer:
    """``GpuPackingScore``: shared GPUs first (100 − their free % / 10, at least 50), then free
    GPUs of used nodes (50 − GPUs taken, at least 33), then idle nodes (33 − their GPUs).
    CPU-only tasks score 0."""

    name: str = "packing"

    def score(self, nodes: NodeTable, task: Task, rows: IntArray, future: bool) -> FloatArray:
        """The plugin's integer scores."""
        devices = devices_of(task)
        if not devices:
            return np.zeros(len(rows))
        gpu = nodes.device_milli[rows]
        whole_free = (gpu == MILLI).sum(axis=1)
        ordered = np.sort(gpu, axis=1)  # least free first, as the plugin takes them
        fitting = ordered >= taken_milli(nodes, task, rows)[:, None]
        chosen = fitting & (np.cumsum(fitting, axis=1) <= devices)
        taken_whole = (chosen & (ordered == MILLI)).sum(axis=1)
        free_pct = np.where(chosen, ordered * 100 // MILLI, 0).sum(axis=1)
        count = np.rint(nodes.alloc[rows, GPU]).astype(np.int64)
        scores: FloatArray = np.where(
            whole_free == count,
            np.maximum(MAX_SCORE // 3 - whole_free, whole_free),
            np.where(
                taken_whole > 0,
                np.maximum(MAX_SCORE // 2 - taken_whole, MAX_SCORE // 3),
                np.maximum(MAX_SCORE - free_pct // 10, MAX_SCORE // 2),
            ),
        ).astype(np.float64)
        return scores


@dataclass(frozen=True)
class BestFitScorer:
    """``BestFitScore``: the node left with the least CPU and GPU, each normalised by the
    largest machine and weighted 1/2 (the plugin's min-max normalisation keeps the order)."""

    name: str = "bestfit"

    def score(self, nodes: NodeTable, task: Task, rows: IntArray, future: bool) -> FloatArray:
        """The plugin's integer scores."""
        left = (free_cpu(nodes, rows) - task.request.cpu) / MAX_SPEC_CPU * 0.5
        gpu = idle_gpu_milli(nodes, rows) - _requested_gpu(nodes, task, rows)
        left = left + gpu / MAX_SPEC_GPU * 0.5
        scores: FloatArray = np.trunc((1.0 - left) * MAX_SCORE)
        return scores
