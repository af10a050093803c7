"""The embedded cluster's latency for one small change: ``pykai apply`` of one pod (with its
PodGroup) on a cluster that already runs many jobs, as a user or a trace replay does it —
validation, the write, and the rounds of every controller until the cluster settles. The
cluster is in memory (no disk), so the figure is the controllers' and the engine's work."""

from __future__ import annotations

import statistics
import time

from pykai.embedded.cluster import EmbeddedCluster
from pykai.model.builders import node, pod, podgroup, queue
from pykai.model.errors import InvalidRequest
from pykai.model.meta import Obj


def _job(name: str) -> list[Obj]:
    return [podgroup(name, queue="bench"), pod(name, group=name, gpus=1)]


def run_embedded_bench(nodes: int = 1213, jobs: int = 2000, applies: int = 30) -> dict[str, float]:
    """Median and slowest one-pod apply (milliseconds) on ``nodes`` nodes of 8 GPUs that
    already run ``jobs`` one-GPU jobs (1,213 nodes: the openb trace's cluster). Every timed pod
    must be bound by its apply (else the figure would not be a scheduling one)."""
    if jobs + applies > nodes * 8:
        raise InvalidRequest(
            f"{jobs} jobs and {applies} applies need more GPUs than {nodes} nodes have"
        )
    cluster = EmbeddedCluster.open(None)
    cluster.apply([node(f"n{i}", gpus=8) for i in range(nodes)] + [queue("bench")])
    cluster.apply([obj for i in range(jobs) for obj in _job(f"running-{i}")])
    times = []
    for i in range(applies):
        started = time.perf_counter()
        cluster.apply(_job(f"new-{i}"))
        times.append(time.perf_counter() - started)
        placed = cluster.get("Pod", f"new-{i}", "default")
        if placed is None or not placed["spec"].get("nodeName"):
            raise RuntimeError(f"pod new-{i} was not bound by its apply")
    return {
        "embedded_nodes": nodes,
        "embedded_running_jobs": jobs,
        "one_pod_apply_ms": round(statistics.median(times) * 1000, 2),
        "one_pod_apply_ms_max": round(max(times) * 1000, 2),
    }
