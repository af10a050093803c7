"""The engine benchmark (benchmarks.md §B): pods bound per second and cycle latency, in process.

Measurements on synthetic clusters fed straight into a ClusterState (no store, no API):
- single-pod jobs: ``pods`` pending one-GPU jobs on ``nodes`` nodes of 8 GPUs;
- gangs: ``pods / 8`` gangs of 8 one-GPU pods on the same cluster;
- a large cycle: 4,000 nodes holding 140,000 pods (KAI issue #315's size), most of them running,
  with 1,000 pending jobs; one full cycle split into session open (the snapshot) and actions;
- contended cycles (``contended.py``): the first full cycle on a cluster where every queue
  wants more than it gets, at 1,000 nodes and at 4,000 nodes / 140,000 running / 20,000
  pending, and a reclaim-heavy cycle at 400 nodes. Each is the median of ``repeat`` runs,
  each on a freshly built state (building is not timed). The reclaim-heavy cycle also runs once
  with the exhaustive search, whose decisions must be the same.

Every timed cycle starts where a backend's would: the loaded state settled by the process's
garbage-collection policy (``engine.memory.settle``).
"""

from __future__ import annotations

import gc
import math
import resource
import statistics
import time
from collections.abc import Callable
from typing import Any

from pykai.bench.contended import Workload, build, contended, reclaim_heavy
from pykai.engine.decisions import CycleResult
from pykai.engine.memory import settle
from pykai.engine.scheduler import Scheduler
from pykai.engine.settings import SchedulerConfig
from pykai.engine.state import ClusterState
from pykai.model.builders import node, pod, podgroup, queue
from pykai.model.meta import Obj
from pykai.model.priorityclass import builtin_priority_classes

QUEUES = 10
GPUS_PER_NODE = 8


def _base(nodes: int, gpu_nodes: int | None = None) -> ClusterState:
    """A state with ``nodes`` nodes (the first ``gpu_nodes`` with 8 GPUs) and 10 queues."""
    state = ClusterState()
    objects: list[Obj] = [*builtin_priority_classes(), queue("bench")]
    objects += [queue(f"team-{q}", parent="bench", gpu=(0, -1, 1)) for q in range(QUEUES)]
    gpu_nodes = nodes if gpu_nodes is None else gpu_nodes
    objects += [
        node(f"node-{i:05d}", gpus=GPUS_PER_NODE if i < gpu_nodes else 0) for i in range(nodes)
    ]
    for obj in objects:
        state.upsert(obj)
    state.ensure_current()
    return state


def _jobs(
    state: ClusterState, count: int, size: int, *, gpus: int = 1, prefix: str = "job"
) -> None:
    """Add ``count`` pending jobs of ``size`` pods each, spread over the queues."""
    for j in range(count):
        name = f"{prefix}-{j:06d}"
        stamp = f"2025-01-01T00:{(j // 60) % 60:02d}:{j % 60:02d}Z"
        state.upsert(
            podgroup(
                name, queue=f"team-{j % QUEUES}", min_member=size, uid=f"pg-{name}", creation=stamp
            )
        )
        for i in range(size):
            state.upsert(
                pod(f"{name}-{i}", group=name, gpus=gpus, uid=f"{name}-{i}", creation=stamp)
            )


def _bind_rate(state: ClusterState, expected: int) -> dict[str, float]:
    """Run cycles until ``expected`` pods are bound (or nothing more binds)."""
    scheduler = Scheduler()
    bound = 0
    cycles = 0
    started = time.perf_counter()
    while bound < expected:
        result = scheduler.run_cycle(state, 1.0e9 + cycles)
        cycles += 1
        if not result.binds:
            break
        bound += len(result.binds)
    elapsed = time.perf_counter() - started
    return {
        "bound": bound,
        "cycles": cycles,
        "seconds": elapsed,
        "pods_per_second": bound / elapsed,
    }


def _large_cycle(nodes: int, pods: int, pending_jobs: int) -> dict[str, float]:
    """One full cycle on a big, mostly running cluster."""
    gpu_nodes = max(100, nodes // 40)
    load_started = time.perf_counter()
    state = _base(nodes, gpu_nodes)
    running = pods - pending_jobs
    cpu_nodes = nodes - gpu_nodes
    for i in range(running):
        group = f"run-{i:06d}"
        target = gpu_nodes + i % cpu_nodes if cpu_nodes else i % nodes
        state.upsert(podgroup(group, queue=f"team-{i % QUEUES}", uid=f"pg-{group}"))
        state.upsert(
            pod(
                group,
                group=group,
                cpu="100m",
                memory="256Mi",
                uid=group,
                node_name=f"node-{target:05d}",
                phase="Running",
            )
        )
    _jobs(state, pending_jobs, 1, gpus=1, prefix="pending")
    state.ensure_current()
    load = time.perf_counter() - load_started
    _settle(state)
    result = Scheduler().run_cycle(state, 2.0e9)
    timings = result.timings
    return {
        "load_seconds": load,
        "cycle_seconds": sum(timings.values()),
        "snapshot_seconds": timings["session_open"],
        "actions_seconds": timings["actions"] + timings["close"],
        "bound": len(result.binds),
    }


def _settle(state: ClusterState) -> None:
    """The backends' garbage-collection policy once a state is loaded (``memory.settle``);
    a state too small for it is only collected, so that no earlier garbage is timed."""
    if not settle(state):
        gc.collect()


def _first_cycle(
    workload: Workload, repeat: int, config: SchedulerConfig | None = None
) -> tuple[float, CycleResult]:
    """The median time of the first full cycle on ``repeat`` fresh states, and one result."""
    times: list[float] = []
    result = CycleResult()
    for _ in range(repeat):
        state = build(workload)
        _settle(state)
        started = time.perf_counter()
        result = Scheduler(config).run_cycle(state, 2.0e9)
        times.append(time.perf_counter() - started)
        del state
    return statistics.median(times), result


def _next_cycle(workload: Workload, repeat: int) -> float:
    """The median time of the second cycle, once the first one's evicted pods are gone (its
    binds stay assumed): the steady state of a contended cluster."""
    times: list[float] = []
    for _ in range(repeat):
        state = build(workload)
        scheduler = Scheduler()
        first = scheduler.run_cycle(state, 2.0e9)
        for eviction in first.evictions:
            state.remove("Pod", eviction.namespace, eviction.name)
        _settle(state)
        started = time.perf_counter()
        scheduler.run_cycle(state, 2.0e9 + 1)
        times.append(time.perf_counter() - started)
        del state
    return statistics.median(times)


def _decided(result: CycleResult) -> tuple[list[tuple[str, str]], list[str], list[str]]:
    """What a cycle decided, comparable between runs."""
    return (
        sorted((e.name, e.reason) for e in result.evictions),
        sorted(f"{b.name}@{b.node}" for b in result.binds),
        sorted(result.pipelined),
    )


def growth(sizes: tuple[int, ...], repeat: int) -> dict[str, Any]:
    """The contended first cycle at several sizes, and the exponent of its growth in N (the
    least-squares slope of log time on log N)."""
    seconds = {n: _first_cycle(contended(n), repeat)[0] for n in sizes}
    xs = [math.log(n) for n in sizes]
    ys = [math.log(max(t, 1e-9)) for t in seconds.values()]
    mean_x, mean_y = statistics.fmean(xs), statistics.fmean(ys)
    slope = sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys, strict=True)) / sum(
        (x - mean_x) ** 2 for x in xs
    )
    return {
        "contended_growth_seconds": {str(n): round(t, 4) for n, t in seconds.items()},
        "contended_growth_exponent": round(slope, 2),
    }


def run_engine_bench(
    nodes: int = 5000,
    pods: int = 10_000,
    *,
    large_nodes: int = 4000,
    large_pods: int = 140_000,
    contended_nodes: int = 1000,
    contended_large_nodes: int = 4000,
    reclaim_nodes: int = 400,
    repeat: int = 3,
    growth_nodes: tuple[int, ...] = (),
    progress: Callable[[str], None] = lambda _: None,
) -> dict[str, Any]:
    """Run every measurement and return one flat record of figures (with the contended
    cycle's growth in N when ``growth_nodes`` gives two sizes or more); ``progress`` is told
    each measurement as it starts."""
    gc.collect()
    progress(f"single-pod jobs on {nodes} nodes")
    state = _base(nodes)
    _jobs(state, pods, 1)
    single = _bind_rate(state, pods)
    del state
    progress(f"gangs of 8 on {nodes} nodes")
    state = _base(nodes)
    _jobs(state, pods // 8, 8, prefix="gang")
    gangs = _bind_rate(state, pods // 8 * 8)
    del state
    gc.collect()
    progress(f"a cycle on {large_nodes} nodes and {large_pods} pods")
    large = _large_cycle(large_nodes, large_pods, max(1, large_pods // 140))
    gc.collect()
    progress(f"contended cycles on {contended_nodes} and {contended_large_nodes} nodes")
    cycle, first = _first_cycle(contended(contended_nodes), repeat)
    large_contended = contended(
        contended_large_nodes, running=35 * contended_large_nodes, pending=5 * contended_large_nodes
    )
    cycle_large, _ = _first_cycle(large_contended, repeat)
    next_large = _next_cycle(large_contended, repeat)
    progress(f"reclaim-heavy cycles on {reclaim_nodes} nodes")
    reclaim, reclaimed = _first_cycle(reclaim_heavy(reclaim_nodes), repeat)
    exhaustive_seconds, exhaustive = _first_cycle(
        reclaim_heavy(reclaim_nodes), 1, SchedulerConfig(exhaustive_search=True)
    )
    grown = {}
    if len(growth_nodes) > 1:
        progress(f"growth in N: {', '.join(map(str, growth_nodes))} nodes")
        grown = growth(growth_nodes, repeat)
    peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {
        "nodes": nodes,
        "pods": pods,
        "pods_per_second": round(single["pods_per_second"], 1),
        "single_pod_cycles": single["cycles"],
        "gang_pods_per_second": round(gangs["pods_per_second"], 1),
        "gang_cycles": gangs["cycles"],
        "cycle_seconds_4000_nodes_140k_pods": round(large["cycle_seconds"], 4),
        "snapshot_seconds": round(large["snapshot_seconds"], 4),
        "actions_seconds": round(large["actions_seconds"], 4),
        "large_cluster_load_seconds": round(large["load_seconds"], 2),
        "large_cycle_bound": large["bound"],
        "contended_nodes": contended_nodes,
        "contended_cycle_seconds": round(cycle, 4),
        "contended_cycle_binds": len(first.binds),
        "contended_cycle_evictions": len(first.evictions),
        "contended_cycle_seconds_4000_nodes": round(cycle_large, 4),
        "contended_next_cycle_seconds_4000_nodes": round(next_large, 4),
        "reclaim_nodes": reclaim_nodes,
        "reclaim_cycle_seconds": round(reclaim, 4),
        "reclaim_cycle_evictions": len(reclaimed.evictions),
        "reclaim_cycle_same_as_exhaustive": _decided(reclaimed) == _decided(exhaustive),
        "reclaim_cycle_exhaustive_seconds": round(exhaustive_seconds, 4),
        "repeat": repeat,
        **grown,
        "peak_rss_mb": round(peak_kb / 1024, 1),
    }
