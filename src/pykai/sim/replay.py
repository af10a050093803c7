"""Static packing of a GPU trace, the FGD paper's protocol (benchmarks.md §A.1).

Pods are sorted by name, shuffled with the seed, and inflated by sampling with replacement until
the requested GPU would exceed ``tune`` × the cluster's GPUs. They are then placed one by one by
a policy, or fail for good. Equal scores go to the first node of a seeded random order fixed
for the run, as in the simulator (:func:`tie_ranks`). After each pod the arrived and allocated
GPU milli and the cluster's fragmentation are recorded; the curves average them per integer
arrival percentage 0..130.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass

import numpy as np

from pykai.sim.cluster import Cluster
from pykai.sim.frag import TypicalPods
from pykai.sim.openb import TraceNode, TracePod
from pykai.sim.policies import POLICIES

MAX_ARRIVAL = 130
Curve = list[float | None]


def arrivals(pods: list[TracePod], seed: int, tune: float, total_gpu_milli: int) -> list[TracePod]:
    """Sorted by name, shuffled by seed, then tuned to ``tune`` × capacity as the simulator does:
    while the trace asks for more, random pods are dropped; while it asks for less, pods are
    sampled with replacement and appended, stopping at the first whose per-GPU milli would
    cross the target."""
    rng = random.Random(seed)
    order = sorted(pods, key=lambda p: p.name)
    rng.shuffle(order)
    target = tune * total_gpu_milli
    requested = sum(p.gpu_request_milli for p in order)
    while requested > target:
        requested -= order.pop(rng.randrange(len(order))).gpu_request_milli
    sample = sorted(pods, key=lambda p: p.name)
    while sample:
        extra = sample[rng.randrange(len(sample))]
        if requested + extra.gpu_milli > target:
            break
        order.append(extra)
        requested += extra.gpu_request_milli
    return order


def tie_ranks(nodes: list[TraceNode], seed: int) -> dict[str, int]:
    """Each node's place in the order that breaks equal scores, drawn with the seed.

    The FGD simulator's scheduler gives ties to the smallest node name, but before placing any
    pod it renames every node ``f"{i:04d}-{name}"``, with ``i`` from a seeded random
    permutation (``rand.Perm`` over the nodes sorted by name, in ``syncClusterResourceList``).
    Ties therefore go to the first node of a random order that stays fixed for the whole run,
    not to the trace's first node name (which stacks CPU pods on the same few 2-GPU nodes and
    costs Packing and Clustering about 0.6-0.9 pp). Go's random sequence cannot be reproduced;
    this draws an order of the same kind from Python's ``random.Random``."""
    names = sorted(n.name for n in nodes)
    places = list(range(len(names)))
    random.Random(f"{seed}/nodes").shuffle(places)
    return dict(zip(names, places, strict=True))


@dataclass
class Run:
    """One seed's curves, indexed by arrival percentage 0..130 (None where no event)."""

    seed: int
    unallocated_gpu_pct: Curve
    fragmentation_pct: Curve
    seconds: float
    failed_pods: int


class _Buckets:
    """Per integer arrival percentage: the sum of allocation and fragmentation, and events."""

    def __init__(self) -> None:
        self.sums = np.zeros((MAX_ARRIVAL + 1, 3))

    def add(self, arrival_pct: float, allocated_pct: float, frag_pct: float) -> None:
        k = round(arrival_pct)
        if 0 <= k <= MAX_ARRIVAL:
            self.sums[k] += (allocated_pct, frag_pct, 1)

    def curves(self) -> tuple[Curve, Curve]:
        unallocated: Curve = []
        fragmentation: Curve = []
        for allocated, frag, n in self.sums.tolist():
            unallocated.append(round(100 - allocated / n, 3) if n else None)
            fragmentation.append(round(frag / n, 3) if n else None)
        return unallocated, fragmentation


def replay(
    nodes: list[TraceNode],
    pods: list[TracePod],
    policy: str,
    seed: int,
    tune: float = 1.3,
    max_pods: int | None = None,
    shuffle_ties: bool = True,
) -> Run:
    """Replay one seed of ``pods`` on ``nodes`` with one policy. Ties go to the first node of
    the seeded order of :func:`tie_ranks`, or with ``shuffle_ties=False`` to the first name."""
    if policy not in POLICIES:
        raise ValueError(f"unknown policy {policy!r}; known: {', '.join(POLICIES)}")
    started = time.perf_counter()
    ranks = tie_ranks(nodes, seed) if shuffle_ties else None
    cluster = Cluster.of(nodes, TypicalPods.of(pods), ranks)
    place = POLICIES[policy]
    rng = random.Random(f"{seed}/{policy}")
    total = cluster.total_gpu_milli
    buckets = _Buckets()
    arrived = used = failed = 0
    for pod in arrivals(pods, seed, tune, total)[:max_pods]:
        arrived += pod.gpu_request_milli
        rows = cluster.feasible(pod)
        if len(rows):
            row, gpus = place(cluster, pod, rows, rng)
            cluster.place(row, gpus, pod)
            used += pod.gpu_request_milli
        else:
            failed += 1
        buckets.add(
            arrived / total * 100, used / total * 100, cluster.fragmentation_milli() / total * 100
        )
    unallocated, fragmentation = buckets.curves()
    return Run(seed, unallocated, fragmentation, time.perf_counter() - started, failed)


def median(curves: list[Curve]) -> Curve:
    """Per arrival percentage, the median over curves (None where none has a value)."""
    out: Curve = []
    for k in range(MAX_ARRIVAL + 1):
        values = [v for c in curves if (v := c[k]) is not None]
        out.append(round(float(np.median(values)), 3) if values else None)
    return out
