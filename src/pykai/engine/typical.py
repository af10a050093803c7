"""Typical pods: the pod shapes a fragmentation-aware placement expects to come next.

FGD (Weng et al., ATC'23, §3) measures a node's GPU fragmentation against the most frequent pod
shapes (CPU, GPU milli per device, device count, where it may run) that together make up 95 %
of the workload, CPU-only pods included, each weighted by how often it occurs. Here they come
from the pods the cluster has seen (the last ``window`` new pods, :class:`SeenPods`) or are
given (from a trace, through the placement configuration).
"""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Iterable
from dataclasses import dataclass, field

from pykai.engine.jobs import Task
from pykai.engine.nodes import MILLI
from pykai.model.constraints import NodeConstraints

COVERAGE = 0.95
DEFAULT_WINDOW = 1000  # pods seen most recently that make up the typical pods
NONZERO_CPU = 100  # kube-scheduler's default for a pod that requests no CPU


@dataclass(frozen=True, slots=True)
class PodShape:
    """What a pod asks for, as fragmentation sees it. ``label`` orders equally frequent shapes
    (the GPU models it may use, for a trace's pods)."""

    cpu_milli: int
    gpu_milli: int = 0  # per device; 0 for a CPU-only pod
    devices: int = 0
    constraints: NodeConstraints = field(default_factory=NodeConstraints)
    label: str = ""

    def rank(self) -> tuple[int, int, int, str]:
        """The FGD simulator's order among equally frequent shapes (compared descending)."""
        return (self.cpu_milli, self.gpu_milli, self.devices, self.label)


def shape_of(task: Task) -> PodShape:
    """A task's shape: a share counts as its fraction of one device, a memory request as a
    whole device (its portion depends on the node)."""
    gpu = task.pod.gpu
    cpu = round(task.request.cpu) or NONZERO_CPU
    if gpu.fraction:
        milli, devices = round(gpu.fraction * MILLI), gpu.devices
    elif gpu.memory_mib:
        milli, devices = MILLI, gpu.devices
    else:
        milli, devices = (MILLI, gpu.whole) if gpu.whole else (0, 0)
    return PodShape(cpu, milli, devices, task.pod.constraints)


@dataclass(frozen=True, slots=True)
class TypicalPods:
    """Shapes and how many pods each stands for."""

    shapes: tuple[PodShape, ...] = ()
    counts: tuple[int, ...] = ()

    @classmethod
    def of(cls, shapes: Iterable[PodShape], coverage: float = COVERAGE) -> TypicalPods:
        """The most frequent shapes, one at a time, until they cover ``coverage`` of them;
        equal counts in the simulator's order (larger CPU, then milli, count, label)."""
        return cls.ranked(Counter(shapes), coverage)

    @classmethod
    def ranked(cls, counter: Counter[PodShape], coverage: float = COVERAGE) -> TypicalPods:
        """:meth:`of`, from shapes already counted."""
        ranked = sorted(counter.items(), key=lambda item: (item[1], item[0].rank()), reverse=True)
        total = sum(counter.values())
        kept: list[tuple[PodShape, int]] = []
        covered = 0
        for shape, count in ranked:
            if covered >= coverage * total:
                break
            kept.append((shape, count))
            covered += count
        return cls(tuple(s for s, _ in kept), tuple(c for _, c in kept))

    @property
    def cpu_per_gpu_milli(self) -> float:
        """CPU milli the typical GPU pods ask for per GPU milli (0 without GPU shapes)."""
        pairs = list(zip(self.shapes, self.counts, strict=True))
        gpu = sum(n * s.gpu_milli * s.devices for s, n in pairs)
        cpu = sum(n * s.cpu_milli for s, n in pairs if s.gpu_milli)
        return cpu / gpu if gpu else 0.0


class SeenPods:
    """The shapes of the last ``window`` pods the cluster has seen, counted."""

    def __init__(self, window: int) -> None:
        self.window = window
        self._recent: deque[PodShape] = deque()
        self.counter: Counter[PodShape] = Counter()

    def add(self, shape: PodShape) -> None:
        """Count a newly seen pod; the oldest drops out past the window."""
        self._recent.append(shape)
        self.counter[shape] += 1
        self.resize(self.window)

    def resize(self, window: int) -> None:
        """Keep the last ``window`` pods from now on (a larger window fills as pods come)."""
        self.window = window
        while len(self._recent) > self.window:
            old = self._recent.popleft()
            self.counter[old] -= 1
            if not self.counter[old]:
                del self.counter[old]

    def typical(self, coverage: float = COVERAGE) -> TypicalPods:
        """The typical pods among them."""
        return TypicalPods.ranked(self.counter, coverage)
