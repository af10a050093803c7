"""Static packing of a GPU trace, the FGD paper's protocol (benchmarks.md §A.1), driven through
pykai's scheduler: this module is a driver, not a scheduler.

Pods are sorted by name, shuffled with the seed, and inflated by sampling with replacement until
the requested GPU would exceed ``tune`` × the cluster's GPUs. They are then submitted in arrival
order to an in-memory embedded cluster (engine, controllers, stand-ins, virtual clock) whose
placement policy is the one measured; a pod that does not fit fails for good. Equal scores go
to the first node of a seeded random order fixed for the run, as in the simulator
(:func:`tie_ranks`). Per arrival the arrived and allocated GPU milli and the cluster's
fragmentation are recorded; the curves average them per integer arrival percentage 0..130.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass

import numpy as np

from pykai.embedded.cluster import EmbeddedCluster
from pykai.engine.fragmentation import FragIndex
from pykai.engine.policies import shape_from
from pykai.engine.settings import SchedulerConfig, TypicalShape
from pykai.engine.typical import NONZERO_CPU, PodShape, TypicalPods
from pykai.model.errors import InvalidRequest
from pykai.sim.objects import node_object, pod_object
from pykai.sim.openb import MILLI, TraceNode, TracePod

MAX_ARRIVAL = 130
POLICIES = ("random", "dotprod", "clustering", "packing", "bestfit", "fgd", "pykai")
BATCH = 128  # pods created before the cluster settles (about 1.5 % of the openb cluster's GPUs)
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


def typical_shapes(pods: list[TracePod]) -> list[TypicalShape]:
    """The trace's typical pods (FGD's: the most frequent shapes covering 95 % of the pods,
    CPU-only ones included), as placement configuration."""
    shapes = [
        PodShape(p.cpu_milli or NONZERO_CPU, p.gpu_milli, p.num_gpu, label="|".join(p.gpu_spec))
        for p in pods
    ]
    typical = TypicalPods.of(shapes)
    return [
        TypicalShape(
            cpu_milli=s.cpu_milli,
            gpu_milli=s.gpu_milli,
            gpus=s.devices,
            gpu_models=s.label.split("|") if s.label else [],
            count=n,
        )
        for s, n in zip(typical.shapes, typical.counts, strict=True)
    ]


def replay_cluster(policy: str, shapes: list[TypicalShape]) -> EmbeddedCluster:
    """An in-memory cluster whose scheduler only allocates (the paper has no preemption),
    with ``policy`` and the trace's typical pods, and neither status writers nor Scheduled
    events (nothing reads them)."""
    placement = {"gpu": policy, "typicalPods": {"shapes": [s.model_dump() for s in shapes]}}
    config = SchedulerConfig.model_validate(
        {"actions": ["allocate"], "placementStrategy": placement}
    )
    return EmbeddedCluster.open(None, config=config, statuses=False, scheduled_events=False)


def replay(
    nodes: list[TraceNode],
    pods: list[TracePod],
    policy: str,
    seed: int,
    tune: float = 1.3,
    max_pods: int | None = None,
    batch: int = BATCH,
) -> Run:
    """Replay one seed of ``pods`` on ``nodes`` through the scheduler with one placement policy.

    Nodes are named ``NNNN-name`` in the seeded order of :func:`tie_ranks`, so that the
    scheduler's tie-break (the smallest name) is the simulator's. Pods arrive ``batch`` at a
    time (each batch is created, then the cluster settles: pod-grouper, scheduler, binder,
    kubelet); the scheduler takes them in arrival order (creation, then UID) and a pod that
    does not fit never fits later (nodes only fill), so allocation per arrival is the same as
    one pod at a time; such a pod is deleted once its batch settled (it fails for good, as in
    the simulator, and the scheduler does not try it again every cycle). Fragmentation is
    measured once per batch."""
    if policy not in POLICIES:
        raise InvalidRequest(f"unknown policy {policy!r}; known: {', '.join(POLICIES)}")
    started = time.perf_counter()
    ranks = tie_ranks(nodes, seed)
    shapes = typical_shapes(pods)
    measure = TypicalPods(tuple(shape_from(s) for s in shapes), tuple(s.count for s in shapes))
    cluster = replay_cluster(policy, shapes)
    with cluster.batch():
        for node in nodes:
            cluster.create(node_object(node, f"{ranks[node.name]:04d}-{node.name}"))
    total = MILLI * sum(n.gpus for n in nodes)
    buckets = _Buckets()
    arrived = used = failed = 0
    order = arrivals(pods, seed, tune, total)[:max_pods]
    for first in range(0, len(order), batch):
        chunk = order[first : first + batch]
        with cluster.batch():
            uids = [
                cluster.create(pod_object(pod, f"p{first + i:05d}"))["metadata"]["uid"]
                for i, pod in enumerate(chunk)
            ]
        cluster.settle()
        state = cluster.state
        frag = FragIndex.of(state.nodes, measure).total_milli() / total * 100
        unplaced = []
        for pod, uid in zip(chunk, uids, strict=True):
            arrived += pod.gpu_request_milli
            if state.tasks[uid].node:
                used += pod.gpu_request_milli
            else:
                unplaced.append(state.tasks[uid].name)
            buckets.add(arrived / total * 100, used / total * 100, frag)
        failed += len(unplaced)
        with cluster.batch():
            for name in unplaced:
                cluster.remove("Pod", name, "default")
    cluster.close()
    unallocated, fragmentation = buckets.curves()
    return Run(seed, unallocated, fragmentation, time.perf_counter() - started, failed)


def median(curves: list[Curve]) -> Curve:
    """Per arrival percentage, the median over curves (None where none has a value)."""
    out: Curve = []
    for k in range(MAX_ARRIVAL + 1):
        values = [v for c in curves if (v := c[k]) is not None]
        out.append(round(float(np.median(values)), 3) if values else None)
    return out
