"""Placement policies: the six of the FGD paper, scored as the simulator's plugins do, and
pykai's own.

A policy gets the cluster, the pod, the rows of the nodes it fits on (tie-break order) and a
seeded random source, and returns the chosen row and GPU indices. The six paper policies score
nodes with integers 0..100 as kube-scheduler plugins do; the best score wins and ties go to the
first row, which is what the simulator's scheduler does (its smallest node name, see
:func:`pykai.sim.replay.tie_ranks`). Unless a policy chooses
GPUs itself, a share goes to the fitting GPU with the least free milli and whole GPUs are the
first fully free ones. pykai refines FGD's score with finer tie-breaks (:func:`pykai_policy`).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from pykai.sim.cluster import Cluster, affinity_tag, best_fit_gpus, first_rows
from pykai.sim.frag import NONZERO_CPU, IntArray
from pykai.sim.openb import MILLI, TracePod

FloatArray = npt.NDArray[np.float64]
Choice = tuple[int, list[int]]
Policy = Callable[[Cluster, TracePod, IntArray, random.Random], Choice]
MAX_SCORE = 100
MAX_SPEC_CPU, MAX_SPEC_GPU = 128_000, 8 * MILLI  # the simulator's normalisers


def _idle(cluster: Cluster, rows: IntArray) -> IntArray:
    idle: IntArray = cluster.gpu[rows].sum(axis=1)
    return idle


def random_policy(cluster: Cluster, pod: TracePod, rows: IntArray, rng: random.Random) -> Choice:
    """``RandomScore``: any feasible node; a share goes to any fitting GPU."""
    row = int(rows[rng.randrange(len(rows))])
    if pod.is_sharing:
        fitting = np.flatnonzero(cluster.gpu[row] >= pod.gpu_milli)
        return row, [int(fitting[rng.randrange(len(fitting))])]
    return row, best_fit_gpus(cluster.gpu[row], pod)


def dotprod_policy(cluster: Cluster, pod: TracePod, rows: IntArray, rng: random.Random) -> Choice:
    """``DotProductScore`` (Tetris), merged GPU dimension, normalised by the largest machine:
    100 · (1 − (free · request) / 2), so the node left with the least aligned room wins."""
    free_cpu = cluster.cpu[rows] / MAX_SPEC_CPU
    free_gpu = _idle(cluster, rows) / MAX_SPEC_GPU
    product = 0.0 + free_cpu * (pod.cpu_milli / MAX_SPEC_CPU)
    product = product + free_gpu * (pod.gpu_request_milli / MAX_SPEC_GPU)
    scores = (MAX_SCORE * (1 - product / 2)).astype(np.int64)
    row = first_rows(rows, scores)
    return row, best_fit_gpus(cluster.gpu[row], pod)


def _go_div(a: IntArray, b: int) -> IntArray:
    """Integer division truncating toward zero, as Go does."""
    quotient: IntArray = np.sign(a) * (np.abs(a) // b)
    return quotient


def clustering_policy(
    cluster: Cluster, pod: TracePod, rows: IntArray, rng: random.Random
) -> Choice:
    """``GpuClusteringScore``: nodes already holding only pods of the pod's GPU-affinity class
    (sharing, or k whole GPUs) score 75-100, with other classes too 50-75, empty nodes 25-50,
    nodes of other classes 0-25; within a tier the fuller node wins. CPU pods score 0."""
    if pod.num_gpu == 0:
        return int(rows[0]), []
    affinity = cluster.affinity[rows]
    same = affinity[:, affinity_tag(pod)] > 0
    classes = (affinity > 0).sum(axis=1)
    base = np.where(same, np.where(classes == 1, 75, 50), np.where(classes == 0, 25, 0))
    fill = _go_div(MAX_SCORE // 4 * (MAX_SPEC_GPU - _idle(cluster, rows)), MAX_SPEC_GPU)
    row = first_rows(rows, fill + base)
    return row, best_fit_gpus(cluster.gpu[row], pod)


def packing_policy(cluster: Cluster, pod: TracePod, rows: IntArray, rng: random.Random) -> Choice:
    """``GpuPackingScore``: shared GPUs first (100 − their free % / 10, at least 50), then free
    GPUs of used nodes (50 − GPUs taken, at least 33), then idle nodes (33 − their GPUs). CPU
    pods score 0."""
    if pod.num_gpu == 0:
        return int(rows[0]), []
    gpu = cluster.gpu[rows]
    whole_free = (gpu == MILLI).sum(axis=1)
    ordered = np.sort(gpu, axis=1)  # least free first, as the plugin takes them
    fitting = ordered >= pod.gpu_milli
    chosen = fitting & (np.cumsum(fitting, axis=1) <= pod.num_gpu)
    taken_whole = (chosen & (ordered == MILLI)).sum(axis=1)
    free_pct = np.where(chosen, ordered * 100 // MILLI, 0).sum(axis=1)
    scores = np.where(
        whole_free == cluster.gpu_count[rows],
        np.maximum(MAX_SCORE // 3 - whole_free, whole_free),
        np.where(
            taken_whole > 0,
            np.maximum(MAX_SCORE // 2 - taken_whole, MAX_SCORE // 3),
            np.maximum(MAX_SCORE - free_pct // 10, MAX_SCORE // 2),
        ),
    )
    row = first_rows(rows, scores)
    return row, best_fit_gpus(cluster.gpu[row], pod)


def bestfit_policy(cluster: Cluster, pod: TracePod, rows: IntArray, rng: random.Random) -> Choice:
    """``BestFitScore``: the node left with the least CPU and GPU, each normalised by the
    largest machine and weighted 1/2 (the plugin's min-max normalisation keeps the order)."""
    left = 0.0 + (cluster.cpu[rows] - pod.cpu_milli) / MAX_SPEC_CPU * 0.5
    left = left + (_idle(cluster, rows) - pod.gpu_request_milli) / MAX_SPEC_GPU * 0.5
    scores = ((1.0 - left) * MAX_SCORE).astype(np.int64)
    row = first_rows(rows, scores)
    return row, best_fit_gpus(cluster.gpu[row], pod)


@dataclass(frozen=True)
class Candidates:
    """Placements of one pod to compare: ``row[i]`` index into the feasible rows, ``gpu[i]``
    the GPU a share would take (-1 for other pods), and the fragmentation growth
    (× the frag model's total) each would cause."""

    row: IntArray
    gpu: IntArray
    growth: IntArray


def candidates(cluster: Cluster, pod: TracePod, rows: IntArray) -> Candidates:
    """Every distinct placement: each node for CPU and whole-GPU pods (whose GPU choice does not
    change the node's state), each fitting GPU of a distinct free milli for a share."""
    thresholds = cluster.frag_model.thresholds[None, :]
    gpu = cluster.gpu[rows]
    if pod.is_sharing:
        fits = gpu >= pod.gpu_milli
        for j in range(1, gpu.shape[1]):  # the same free milli twice on a node: keep the first
            fits[:, j] &= ~(gpu[:, :j] == gpu[:, j : j + 1]).any(axis=1)
        index, gpus = np.nonzero(fits)
        before, after = gpu[index, gpus][:, None], gpu[index, gpus][:, None] - pod.gpu_milli
        taken, removed = pod.gpu_milli, 1
    else:
        index, gpus = np.arange(len(rows)), np.full(len(rows), -1)
        before, after = np.full((1, 1), MILLI), np.zeros((1, 1), dtype=np.int64)
        taken, removed = pod.gpu_request_milli, pod.num_gpu
    nodes = rows[index]
    cnt = cluster.cnt[nodes] - removed * (before >= thresholds) + removed * (after >= thresholds)
    sums = cluster.sums[nodes] - removed * np.where(before >= thresholds, before, 0)
    sums = sums + removed * np.where(after >= thresholds, after, 0)
    new = cluster.frag_model.amount(
        cluster.cpu[nodes] - (pod.cpu_milli or NONZERO_CPU),
        gpu[index].sum(axis=1) - taken,
        cnt,
        sums,
        cluster.model[nodes],
    )
    return Candidates(index, gpus, new - cluster.frag[nodes])


def sigmoid_scores(growth: IntArray | FloatArray, total: int) -> IntArray:
    """FGD's score: int(sigmoid(fragmentation decrease / 1000) · 100)."""
    decrease = -growth / max(total, 1) / MILLI
    scores: IntArray = (1.0 / (1.0 + np.exp(-decrease)) * MAX_SCORE).astype(np.int64)
    return scores


def _best(
    cluster: Cluster, pod: TracePod, rows: IntArray, found: Candidates, scores: FloatArray
) -> Choice:
    """The first candidate of the best score: its node, then (for a share) its GPU."""
    best = int(np.argmax(scores))
    row = int(rows[found.row[best]])
    gpu = int(found.gpu[best])
    return row, [gpu] if gpu >= 0 else best_fit_gpus(cluster.gpu[row], pod)


def fgd_policy(cluster: Cluster, pod: TracePod, rows: IntArray, rng: random.Random) -> Choice:
    """``FGDScore``: the node (and, for a share, the GPU) whose fragmentation grows least,
    scored int(sigmoid(−growth / 1000) · 100); whole GPUs are the first fully free ones."""
    found = candidates(cluster, pod, rows)
    scores = sigmoid_scores(found.growth, cluster.frag_model.total)
    return _best(cluster, pod, rows, found, scores.astype(np.float64))


def stranding(cluster: Cluster, pod: TracePod, rows: IntArray, found: Candidates) -> FloatArray:
    """How much each placement grows the node's *stranded* GPU: idle GPU milli beyond what the
    node's free CPU could serve at the typical pods' CPU per GPU. FGD's measure only asks
    whether the next typical pod fits; this sees CPU running out a few pods ahead."""
    nodes = rows[found.row]
    ratio = cluster.cpu_per_gpu or 1.0
    idle, cpu = cluster.gpu[nodes].sum(axis=1), cluster.cpu[nodes]
    before = np.maximum(0.0, idle - cpu / ratio)
    after = np.maximum(0.0, idle - pod.gpu_request_milli - (cpu - pod.cpu_milli) / ratio)
    growth: FloatArray = after - before
    return growth


def _left(cluster: Cluster, pod: TracePod, nodes: IntArray) -> FloatArray:
    """BestFit's measure of what a node keeps free after the pod, 0..1."""
    left: FloatArray = (cluster.cpu[nodes] - pod.cpu_milli) / MAX_SPEC_CPU * 0.5 + (
        cluster.gpu[nodes].sum(axis=1) - pod.gpu_request_milli
    ) / MAX_SPEC_GPU * 0.5
    return left


def pykai_policy(cluster: Cluster, pod: TracePod, rows: IntArray, rng: random.Random) -> Choice:
    """pykai's placement: FGD, aware of CPU stranding.

    1. For CPU pods and GPU shares, the stranding growth (:func:`stranding`, in GPU milli) is
       added to FGD's fragmentation growth before FGD's coarse sigmoid score; whole-GPU pods
       keep FGD's score (taking whole GPUs with their CPU strands little, and the penalty would
       push them off the nodes that multi-GPU pods need).
    2. Equal scores go to the placement that strands least and, for a CPU pod, leaves its node
       the least free (BestFit), keeping CPU where idle GPUs will need it; then to the first
       node in the tie-break order and the first GPU, as FGD does.
    """
    found = candidates(cluster, pod, rows)
    strand = stranding(cluster, pod, rows, found)
    growth = found.growth.astype(np.float64)
    if not pod.num_gpu or pod.is_sharing:
        growth = growth + strand * cluster.frag_model.total
    key = sigmoid_scores(growth, cluster.frag_model.total) * 1e7 - strand
    if not pod.num_gpu:
        key = key - _left(cluster, pod, rows[found.row]) * MILLI
    return _best(cluster, pod, rows, found, key)


POLICIES: dict[str, Policy] = {
    "random": random_policy,
    "dotprod": dotprod_policy,
    "clustering": clustering_policy,
    "packing": packing_policy,
    "bestfit": bestfit_policy,
    "fgd": fgd_policy,
    "pykai": pykai_policy,
}
