"""Static packing of a GPU trace (the FGD paper's protocol, benchmarks.md §A.1).

Pods arrive one by one (sorted by name, shuffled by seed, inflated to ``tune`` × the cluster's
GPUs by sampling with replacement) and are placed by a policy or fail for good. After each pod
the arrived and allocated GPU milli are recorded; results are averaged per arrival percentage.
Each GPU has 1000 milli; a sharing pod fits on one GPU; k whole GPUs need k fully free GPUs.
"""

from __future__ import annotations

import random
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from pykai.sim.openb import TraceNode, TracePod

MILLI = 1000
IntArray = npt.NDArray[np.int64]
MAX_ARRIVAL = 130


@dataclass
class GpuCluster:
    """Free CPU, memory and per-GPU milli of every node (absent GPUs hold -1)."""

    cpu: IntArray
    memory: IntArray
    gpu: IntArray  # (nodes, max GPUs per node)
    models: list[str]
    total_gpu_milli: int

    @classmethod
    def of(cls, nodes: list[TraceNode]) -> GpuCluster:
        """A cluster with every node empty."""
        width = max((n.gpus for n in nodes), default=0) or 1
        gpu = np.full((len(nodes), width), -1, dtype=np.int64)
        for i, node in enumerate(nodes):
            gpu[i, : node.gpus] = MILLI
        return cls(
            cpu=np.array([n.cpu_milli for n in nodes], dtype=np.int64),
            memory=np.array([n.memory_mib for n in nodes], dtype=np.int64),
            gpu=gpu,
            models=[n.model for n in nodes],
            total_gpu_milli=MILLI * sum(n.gpus for n in nodes),
        )

    def feasible(self, pod: TracePod) -> IntArray:
        """Rows of the nodes the pod fits on."""
        fits = (self.cpu >= pod.cpu_milli) & (self.memory >= pod.memory_mib)
        if pod.gpu_spec:
            fits &= np.array([m in pod.gpu_spec for m in self.models])
        if pod.num_gpu:
            fits &= (self.gpu >= pod.gpu_milli).sum(axis=1) >= pod.num_gpu
        rows: IntArray = np.flatnonzero(fits)
        return rows

    def place(self, row: int, gpus: list[int], pod: TracePod) -> None:
        """Take the pod's resources on a node and GPUs."""
        self.cpu[row] -= pod.cpu_milli
        self.memory[row] -= pod.memory_mib
        for g in gpus:
            self.gpu[row, g] -= pod.gpu_milli


def whole_gpus(free: IntArray, count: int) -> list[int]:
    """The first ``count`` fully free GPUs of a node."""
    return [int(g) for g in np.flatnonzero(free == MILLI)[:count]]


@dataclass(frozen=True)
class TypicalPods:
    """The most frequent pod shapes covering 95 % of pods, with their frequencies."""

    cpu: IntArray
    milli: IntArray
    count: IntArray
    freq: npt.NDArray[np.float64]

    @classmethod
    def of(cls, pods: list[TracePod], coverage: float = 0.95) -> TypicalPods:
        """Shapes (cpu, gpu milli, GPU count) by frequency until ``coverage`` is reached."""
        shapes = Counter((p.cpu_milli, p.gpu_milli, p.num_gpu) for p in pods).most_common()
        kept, seen = [], 0
        for shape, n in shapes:
            if seen >= coverage * len(pods):
                break
            kept.append((shape, n))
            seen += n
        total = sum(n for _, n in kept)
        return cls(
            cpu=np.array([s[0] for s, _ in kept], dtype=np.int64),
            milli=np.array([s[1] for s, _ in kept], dtype=np.int64),
            count=np.array([s[2] for s, _ in kept], dtype=np.int64),
            freq=np.array([n / total for _, n in kept], dtype=float),
        )

    def fragmentation(self, cpu: IntArray, gpu: IntArray) -> npt.NDArray[np.float64]:
        """FGD's expected fragment (GPU milli) of node states: rows of ``cpu`` (K,) and ``gpu``
        (K, G). For each typical shape, all idle GPU counts as fragment unless the shape fits,
        in which case only GPUs with too little free milli count; CPU-only shapes count all."""
        idle = np.where(gpu > 0, gpu, 0)
        total = idle.sum(axis=1)
        milli = self.milli[None, :, None]
        enough = gpu[:, None, :] >= milli
        fits = (enough.sum(axis=2) >= self.count[None, :]) & (cpu[:, None] >= self.cpu[None, :])
        partial = np.where(~enough, idle[:, None, :], 0).sum(axis=2)
        fragment = np.where((self.milli[None, :] > 0) & fits, partial, total[:, None])
        result: npt.NDArray[np.float64] = fragment @ self.freq
        return result


Choice = tuple[int, list[int]]
Policy = Callable[["Context", TracePod, IntArray], Choice]


@dataclass
class Context:
    """What a policy may read: the cluster, the typical pods, each node's current expected
    fragmentation, and the seeded random source."""

    cluster: GpuCluster
    typical: TypicalPods
    frag: npt.NDArray[np.float64]
    rng: random.Random
    keys: IntArray  # a hash of each node's (cpu, GPUs) state: equal keys, equal scores

    def refresh(self, row: int) -> None:
        """Recompute a node's fragmentation and state key after it changed."""
        c = self.cluster
        self.frag[row] = self.typical.fragmentation(c.cpu[row : row + 1], c.gpu[row : row + 1])[0]
        self.keys[row] = state_key(c, row)


def state_key(cluster: GpuCluster, row: int) -> int:
    """A hash of a node's free CPU and per-GPU free milli."""
    return hash((int(cluster.cpu[row]), *cluster.gpu[row].tolist()))


def _pick(scores: npt.NDArray[np.float64] | IntArray, rng: random.Random) -> int:
    """The index of a best score; ties broken at random, as kube-scheduler does."""
    best = np.flatnonzero(scores == scores.max())
    return int(best[rng.randrange(len(best))]) if len(best) > 1 else int(best[0])


def _best_fit_gpu(free: IntArray, pod: TracePod) -> list[int]:
    """GPUs for a pod on one node: the fitting GPU with the least free milli for a share."""
    if pod.num_gpu == 0:
        return []
    if pod.gpu_milli < MILLI:
        fitting = np.flatnonzero(free >= pod.gpu_milli)
        return [int(fitting[np.argmin(free[fitting])])]
    return whole_gpus(free, pod.num_gpu)


def random_policy(ctx: Context, pod: TracePod, rows: IntArray) -> Choice:
    """Any feasible node, any fitting GPU."""
    c, rng = ctx.cluster, ctx.rng
    row = int(rows[rng.randrange(len(rows))])
    if pod.num_gpu and pod.gpu_milli < MILLI:
        fitting = np.flatnonzero(c.gpu[row] >= pod.gpu_milli)
        return row, [int(fitting[rng.randrange(len(fitting))])]
    return row, _best_fit_gpu(c.gpu[row], pod)


MAX_SPEC_CPU, MAX_SPEC_GPU = 128_000, 8 * MILLI


def bestfit_policy(ctx: Context, pod: TracePod, rows: IntArray) -> Choice:
    """The node left with the least CPU and GPU (equal weights), integer scores 0..100."""
    c, rng = ctx.cluster, ctx.rng
    gpu_left = np.where(c.gpu[rows] > 0, c.gpu[rows], 0).sum(axis=1)
    left = (
        0.5 * (c.cpu[rows] - pod.cpu_milli) / MAX_SPEC_CPU
        + 0.5 * (gpu_left - pod.gpu_request_milli) / MAX_SPEC_GPU
    )
    row = int(rows[_pick(((1.0 - left) * 100).astype(np.int64), rng)])
    return row, _best_fit_gpu(c.gpu[row], pod)


def packing_policy(ctx: Context, pod: TracePod, rows: IntArray) -> Choice:
    """GPU packing: shared GPUs first, then free GPUs of used nodes, then empty nodes."""
    c, rng = ctx.cluster, ctx.rng
    gpu = c.gpu[rows]
    exists = gpu >= 0
    fully_free = (gpu == MILLI).sum(axis=1)
    scores = np.zeros(len(rows), dtype=np.int64)
    if pod.num_gpu:
        for i in range(len(rows)):
            free = gpu[i][exists[i]]
            if fully_free[i] == len(free):
                scores[i] = max(100 // 3 - int(fully_free[i]), int(fully_free[i]))
                continue
            order = np.argsort(free, kind="stable")
            use = [g for g in order if free[g] >= pod.gpu_milli][: pod.num_gpu]
            whole = sum(1 for g in use if free[g] == MILLI)
            if whole:
                scores[i] = max(100 // 2 - whole, 100 // 3)
            else:
                scores[i] = max(100 - int(sum(free[g] * 100 // MILLI for g in use)) // 10, 100 // 2)
    row = int(rows[_pick(scores, rng)])
    return row, _best_fit_gpu(c.gpu[row], pod)


def _sigmoid_scores(delta: npt.NDArray[np.float64]) -> IntArray:
    scores: IntArray = (100.0 / (1.0 + np.exp(-delta / 1000.0))).astype(np.int64)
    return scores


def fgd_policy(ctx: Context, pod: TracePod, rows: IntArray) -> Choice:
    """Fragmentation gradient descent: the node (and GPU) whose placement grows the expected
    fragmentation least; scores int(sigmoid(Δ/1000) × 100), ties at random. Nodes in the same
    state score the same, so each distinct state is scored once."""
    c, typical = ctx.cluster, ctx.typical
    _, first, inverse = np.unique(ctx.keys[rows], return_index=True, return_inverse=True)
    reps = rows[first]
    if pod.num_gpu == 1 and pod.gpu_milli < MILLI:
        rep_index, gpu_index = np.nonzero(c.gpu[reps] >= pod.gpu_milli)
        after_gpu = c.gpu[reps][rep_index].copy()
        after_gpu[np.arange(len(rep_index)), gpu_index] -= pod.gpu_milli
        after = typical.fragmentation(c.cpu[reps][rep_index] - pod.cpu_milli, after_gpu)
        scores = _sigmoid_scores(ctx.frag[reps][rep_index] - after)
        rep_scores = np.full(len(reps), -1, dtype=np.int64)
        rep_gpu = np.zeros(len(reps), dtype=np.int64)
        for k in range(len(rep_index) - 1, -1, -1):  # the first best GPU of each node wins
            i = rep_index[k]
            if scores[k] >= rep_scores[i]:
                rep_scores[i], rep_gpu[i] = scores[k], gpu_index[k]
        chosen = _pick(rep_scores[inverse.reshape(-1)], ctx.rng)
        return int(rows[chosen]), [int(rep_gpu[inverse.reshape(-1)[chosen]])]
    after_gpu = c.gpu[reps].copy()
    if pod.num_gpu:
        free = after_gpu == MILLI
        after_gpu[free & (np.cumsum(free, axis=1) <= pod.num_gpu)] = 0
    after = typical.fragmentation(c.cpu[reps] - pod.cpu_milli, after_gpu)
    rep_scores = _sigmoid_scores(ctx.frag[reps] - after)
    row = int(rows[_pick(rep_scores[inverse.reshape(-1)], ctx.rng)])
    return row, _best_fit_gpu(c.gpu[row], pod)


POLICIES: dict[str, Policy] = {
    "random": random_policy,
    "bestfit": bestfit_policy,
    "packing": packing_policy,
    "fgd": fgd_policy,
}


def arrivals(pods: list[TracePod], seed: int, tune: float, total_gpu_milli: int) -> list[TracePod]:
    """Sorted by name, shuffled by seed, inflated by sampling until ``tune`` × capacity."""
    rng = random.Random(seed)
    order = sorted(pods, key=lambda p: p.name)
    rng.shuffle(order)
    requested = sum(p.gpu_request_milli for p in order)
    while True:
        extra = order[rng.randrange(len(pods))]
        if requested + extra.gpu_request_milli > tune * total_gpu_milli:
            return order
        order.append(extra)
        requested += extra.gpu_request_milli


@dataclass
class Run:
    """One seed's curves, indexed by arrival percentage 0..130 (None where no event)."""

    seed: int
    unallocated_gpu_pct: list[float | None] = field(default_factory=list)
    fragmentation_pct: list[float | None] = field(default_factory=list)
    seconds: float = 0.0


def replay(
    nodes: list[TraceNode],
    pods: list[TracePod],
    policy: str,
    seed: int,
    tune: float = 1.3,
    max_pods: int | None = None,
) -> Run:
    """Replay one seed with one policy."""
    started = time.perf_counter()
    cluster = GpuCluster.of(nodes)
    typical = TypicalPods.of(pods)
    place = POLICIES[policy]
    frag = typical.fragmentation(cluster.cpu, cluster.gpu)
    keys = np.array([state_key(cluster, i) for i in range(len(nodes))], dtype=np.int64)
    context = Context(cluster, typical, frag, random.Random(seed), keys)
    sums = np.zeros((MAX_ARRIVAL + 1, 3))
    arrived = used = 0
    for pod in arrivals(pods, seed, tune, cluster.total_gpu_milli)[:max_pods]:
        arrived += pod.gpu_request_milli
        rows = cluster.feasible(pod)
        if len(rows):
            row, gpus = place(context, pod, rows)
            cluster.place(row, gpus, pod)
            used += pod.gpu_request_milli
            context.refresh(row)
        k = round(arrived / cluster.total_gpu_milli * 100)
        if k <= MAX_ARRIVAL:
            sums[k] += (
                used / cluster.total_gpu_milli * 100,
                frag.sum() / cluster.total_gpu_milli * 100,
                1,
            )
    run = Run(seed, seconds=time.perf_counter() - started)
    for k in range(MAX_ARRIVAL + 1):
        n = sums[k, 2]
        run.unallocated_gpu_pct.append(round(100 - sums[k, 0] / n, 3) if n else None)
        run.fragmentation_pct.append(round(sums[k, 1] / n, 3) if n else None)
    return run


def median(runs: list[list[float | None]]) -> list[float | None]:
    """Per arrival percentage, the median over runs (None where no run has a value)."""
    out: list[float | None] = []
    for k in range(MAX_ARRIVAL + 1):
        values = sorted(v for r in runs if (v := r[k]) is not None)
        out.append(None if not values else round(float(np.median(values)), 3))
    return out
