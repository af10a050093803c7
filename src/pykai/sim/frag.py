"""FGD's statistical GPU fragmentation (Weng et al., ATC'23, §3; ``pkg/utils/frag.go``).

The *typical pods* are the most frequent pod shapes (CPU, GPU milli per GPU, GPU count, allowed
GPU models) that together make up 95 % of the trace, CPU-only pods included; each has a
frequency. For one node and one shape, the node's idle GPU milli counts as fragment:

- all of it, when the shape is CPU-only, may not use the node's GPU model, lacks CPU, or lacks
  GPUs (fewer than ``count`` GPUs with at least ``milli`` free);
- otherwise (the shape fits) only the GPUs with less than ``milli`` free.

A node's fragmentation is the frequency-weighted sum over shapes. Here frequencies are kept as
integer pod counts, so amounts are exact integers (milli × pods); divide by :attr:`total`.

For speed, shapes are grouped by (milli, count): with ``cnt_m`` the number of GPUs with at least
``m`` free and ``sum_m`` their free milli, a fitting shape's fragment is ``idle − sum_m``, so

    fragment(node) = idle · total − Σ_groups [cnt_m ≥ count] · sum_m · weight(model, group, cpu)

where ``weight`` is the count of the group's shapes that the node's model and free CPU admit.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from pykai.sim.openb import TracePod

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]
COVERAGE = 0.95
NONZERO_CPU = 100  # kube-scheduler's default for a pod that requests no CPU

Shape = tuple[int, int, int, str]  # cpu, gpu milli, gpu count, gpu spec ("A|B", "" = any)


@dataclass(frozen=True)
class TypicalPods:
    """The typical pod shapes and how many trace pods each stands for."""

    shapes: list[Shape]
    counts: list[int]

    @classmethod
    def of(cls, pods: list[TracePod], coverage: float = COVERAGE) -> TypicalPods:
        """The most frequent shapes, one at a time, until they cover ``coverage`` of the pods.

        Equal counts are ordered as the simulator does: larger CPU, then milli, count, spec."""
        counter = Counter(
            (p.cpu_milli or NONZERO_CPU, p.gpu_milli, p.num_gpu, "|".join(p.gpu_spec)) for p in pods
        )
        ranked = sorted(counter.items(), key=lambda item: (item[1], item[0]), reverse=True)
        kept: list[tuple[Shape, int]] = []
        covered = 0
        for shape, count in ranked:
            if covered >= coverage * len(pods):
                break
            kept.append((shape, count))
            covered += count
        return cls([s for s, _ in kept], [c for _, c in kept])

    @property
    def cpu_per_gpu_milli(self) -> float:
        """CPU milli the typical GPU pods ask for per GPU milli (0 without GPU shapes)."""
        gpu = sum(n * s[1] * s[2] for s, n in zip(self.shapes, self.counts, strict=True))
        cpu = sum(n * s[0] for s, n in zip(self.shapes, self.counts, strict=True) if s[1])
        return cpu / gpu if gpu else 0.0


@dataclass(frozen=True)
class FragModel:
    """Typical pods compiled against a cluster's GPU models, to score many node states at once.

    ``thresholds`` are the distinct GPU milli of GPU shapes; a node state is summarised by
    ``cnt`` and ``sums`` (one column per threshold), its free CPU, idle GPU milli and model."""

    total: int
    thresholds: IntArray  # (M,)
    group_threshold: IntArray  # (R,) column of each (milli, count) group in thresholds
    group_count: IntArray  # (R,)
    cpu_levels: IntArray  # (L,) sorted distinct shape CPUs
    weights: IntArray  # (models, R, L + 1): shapes admitted with cpu index i = #levels <= cpu

    @classmethod
    def of(cls, typical: TypicalPods, models: list[str]) -> FragModel:
        """Compile ``typical`` for nodes whose GPU model index points into ``models``."""
        gpu_shapes = [(s, c) for s, c in zip(typical.shapes, typical.counts, strict=True) if s[1]]
        thresholds = sorted({s[1] for s, _ in gpu_shapes})
        groups = sorted({(s[1], s[2]) for s, _ in gpu_shapes})
        levels = sorted({s[0] for s, _ in gpu_shapes})
        weights = np.zeros((max(len(models), 1), len(groups), len(levels) + 1), dtype=np.int64)
        for (cpu, milli, count, spec), n in gpu_shapes:
            allowed = set(spec.split("|")) if spec else None
            g = groups.index((milli, count))
            first = levels.index(cpu) + 1
            for m, model in enumerate(models):
                if allowed is None or model in allowed:
                    weights[m, g, first:] += n
        return cls(
            total=sum(typical.counts),
            thresholds=np.array(thresholds, dtype=np.int64),
            group_threshold=np.array([thresholds.index(m) for m, _ in groups], dtype=np.int64),
            group_count=np.array([k for _, k in groups], dtype=np.int64),
            cpu_levels=np.array(levels, dtype=np.int64),
            weights=weights,
        )

    def summarise(self, gpu: IntArray) -> tuple[IntArray, IntArray]:
        """Per state (rows of ``gpu``, free milli per GPU): GPUs with at least each threshold
        free, and their free milli."""
        enough = gpu[:, None, :] >= self.thresholds[None, :, None]
        cnt: IntArray = enough.sum(axis=2)
        sums: IntArray = np.where(enough, gpu[:, None, :], 0).sum(axis=2)
        return cnt, sums

    def amount(
        self, cpu: IntArray, idle: IntArray, cnt: IntArray, sums: IntArray, model: IntArray
    ) -> IntArray:
        """Fragmentation × :attr:`total` of states given by free CPU, idle GPU milli, their
        :meth:`summarise` columns and GPU model index."""
        level = np.searchsorted(self.cpu_levels, cpu, side="right")
        weight = self.weights[
            model[:, None], np.arange(len(self.group_count))[None, :], level[:, None]
        ]
        fits = cnt[:, self.group_threshold] >= self.group_count[None, :]
        usable = np.where(fits, sums[:, self.group_threshold] * weight, 0).sum(axis=1)
        result: IntArray = idle * self.total - usable
        return result

    def of_states(self, cpu: IntArray, gpu: IntArray, model: IntArray) -> IntArray:
        """Fragmentation × :attr:`total` of whole node states (free CPU, free milli per GPU)."""
        cnt, sums = self.summarise(gpu)
        return self.amount(cpu, gpu.sum(axis=1), cnt, sums, model)
