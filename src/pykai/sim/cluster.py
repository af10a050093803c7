"""The simulated cluster: free CPU, memory and per-GPU milli of every node, as numpy arrays.

Rows are kept in tie-break order, because the FGD simulator's scheduler breaks score ties by
the smallest node name: among equal scores, the lowest row wins. That order is the node names'
unless a rank is given; the replay gives the simulator's seeded random one
(:func:`pykai.sim.replay.tie_ranks`). A node's absent GPUs hold 0 free milli, so they never fit
a GPU request and add nothing to sums.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from pykai.sim.frag import BoolArray, FragModel, IntArray, TypicalPods
from pykai.sim.openb import MILLI, TraceNode, TracePod

SHARE_TAG = 0  # affinity column of GPU-sharing pods; column k holds pods of k whole GPUs


@dataclass
class Cluster:
    """Free resources of every node and, per node, its current fragmentation."""

    names: list[str]
    model_names: list[str]
    model: IntArray  # (N,) index into model_names
    cpu_capacity: IntArray
    cpu: IntArray
    memory: IntArray
    gpu_count: IntArray
    gpu: IntArray  # (N, G) free milli per GPU
    frag_model: FragModel
    cpu_per_gpu: float  # CPU milli the typical GPU pod needs per GPU milli
    cnt: IntArray = field(init=False)  # (N, M) GPUs with at least each threshold free
    sums: IntArray = field(init=False)  # (N, M) their free milli
    frag: IntArray = field(init=False)  # (N,) fragmentation × frag_model.total
    affinity: IntArray = field(init=False)  # (N, 9) pods per GPU-affinity class
    _spec_masks: dict[tuple[str, ...], BoolArray] = field(init=False, default_factory=dict)

    def __post_init__(self) -> None:
        self.cnt, self.sums = self.frag_model.summarise(self.gpu)
        self.frag = self.frag_model.amount(
            self.cpu, self.gpu.sum(axis=1), self.cnt, self.sums, self.model
        )
        self.affinity = np.zeros((len(self.names), 9), dtype=np.int64)

    @classmethod
    def of(
        cls, nodes: list[TraceNode], typical: TypicalPods, ranks: dict[str, int] | None = None
    ) -> Cluster:
        """An empty cluster of ``nodes`` measured with ``typical`` pods. Rows (and so ties) are
        in name order, or in the order of ``ranks[name]`` when given."""
        if ranks is not None and set(ranks) != {n.name for n in nodes}:
            raise ValueError("ranks must name every node exactly once")
        ordered = sorted(nodes, key=lambda n: (ranks[n.name] if ranks is not None else 0, n.name))
        model_names = sorted({n.model for n in ordered})
        width = max((n.gpus for n in ordered), default=0) or 1
        gpu = np.zeros((len(ordered), width), dtype=np.int64)
        for i, node in enumerate(ordered):
            gpu[i, : node.gpus] = MILLI
        cpu = np.array([n.cpu_milli for n in ordered], dtype=np.int64)
        return cls(
            names=[n.name for n in ordered],
            model_names=model_names,
            model=np.array([model_names.index(n.model) for n in ordered], dtype=np.int64),
            cpu_capacity=cpu.copy(),
            cpu=cpu,
            memory=np.array([n.memory_mib for n in ordered], dtype=np.int64),
            gpu_count=np.array([n.gpus for n in ordered], dtype=np.int64),
            gpu=gpu,
            frag_model=FragModel.of(typical, model_names),
            cpu_per_gpu=typical.cpu_per_gpu_milli,
        )

    @property
    def total_gpu_milli(self) -> int:
        """GPU milli of the whole cluster."""
        return MILLI * int(self.gpu_count.sum())

    def allowed(self, pod: TracePod) -> BoolArray:
        """Nodes whose GPU model the pod accepts (all nodes for a pod without a spec)."""
        mask = self._spec_masks.get(pod.gpu_spec)
        if mask is None:
            accepted = [pod.gpu_spec == () or m in pod.gpu_spec for m in self.model_names]
            mask = np.array(accepted, dtype=bool)[self.model]
            self._spec_masks[pod.gpu_spec] = mask
        return mask

    def feasible(self, pod: TracePod) -> IntArray:
        """Rows of the nodes the pod fits on, in tie-break order."""
        fits = (self.cpu >= pod.cpu_milli) & (self.memory >= pod.memory_mib)
        if pod.num_gpu:
            fits &= self.allowed(pod)
            fits &= (self.gpu >= pod.gpu_milli).sum(axis=1) >= pod.num_gpu
        rows: IntArray = np.flatnonzero(fits)
        return rows

    def place(self, row: int, gpus: list[int], pod: TracePod) -> None:
        """Take the pod's resources on a node and GPUs, and re-measure the node."""
        if len(gpus) != pod.num_gpu or any(self.gpu[row, g] < pod.gpu_milli for g in gpus):
            raise ValueError(f"pod {pod.name} does not fit GPUs {gpus} of {self.names[row]}")
        self.cpu[row] -= pod.cpu_milli
        self.memory[row] -= pod.memory_mib
        for g in gpus:
            self.gpu[row, g] -= pod.gpu_milli
        if pod.num_gpu:
            self.affinity[row, affinity_tag(pod)] += 1
        state = self.gpu[row : row + 1]
        cnt, sums = self.frag_model.summarise(state)
        self.cnt[row], self.sums[row] = cnt[0], sums[0]
        self.frag[row] = self.frag_model.amount(
            self.cpu[row : row + 1], state.sum(axis=1), cnt, sums, self.model[row : row + 1]
        )[0]

    def fragmentation_milli(self) -> float:
        """The cluster's fragmentation, in GPU milli."""
        return float(self.frag.sum()) / self.frag_model.total


def affinity_tag(pod: TracePod) -> int:
    """The GPU-affinity class of a GPU pod: sharing, or its number of whole GPUs."""
    return SHARE_TAG if pod.is_sharing else min(pod.num_gpu, 8)


def best_fit_gpus(free: IntArray, pod: TracePod) -> list[int]:
    """The simulator's default GPU choice: for a share, the fitting GPU with the least free
    milli (lowest index on ties); for whole GPUs, the first fully free ones."""
    if pod.num_gpu == 0:
        return []
    if pod.is_sharing:
        left = np.where(free >= pod.gpu_milli, free, MILLI + 1)
        return [int(np.argmin(left))]
    return [int(g) for g in np.flatnonzero(free == MILLI)[: pod.num_gpu]]


def first_rows(rows: IntArray, scores: npt.NDArray[np.int64] | npt.NDArray[np.float64]) -> int:
    """The row of the best score; on ties the first (the simulator's smallest name)."""
    return int(rows[int(np.argmax(scores))])
