"""CLI latency: wall time of ``pykai`` commands as a user runs them, each in a new process.

A cluster file of ``pods`` pods is made first, straight into the store (no round runs):
the contended cluster of the engine benchmark (``contended.py``), scaled so that it holds
``pods`` pods, 4 in 5 of them running on nodes and the rest pending, with their PodGroups and
queues, and the positions of the pending jobs recorded as the last round would have. ``explain``
(a what-if that builds the engine's state) also runs on a larger cluster. Then each command
runs ``runs`` times; the figures are the medians of its wall time and of its CPU time (user +
system, which other jobs on a busy machine disturb far less).
``python -c pass`` on the same interpreter is the floor (Python's own start-up); every figure
is also given as a ratio to it. The machine's load average is recorded before and after.
"""

from __future__ import annotations

import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from pykai.bench.contended import Workload, objects
from pykai.embedded.cluster import EmbeddedCluster
from pykai.embedded.reader import ClusterReader
from pykai.embedded.sqlite import Store

PODS_PER_NODE = 25  # the contended cluster's 20 running and 5 pending pods a node
Progress = Callable[[str], None]


@dataclass(frozen=True, slots=True)
class Names:
    """Objects of a benchmark cluster the commands name."""

    running_pod: str  # for describe pod
    pending_podgroup: str  # the first the scheduler will try, for explain
    queue: str  # its queue, for describe queue and explain queue


def make_cluster(path: Path, pods: int, nodes: int | None = None) -> Names:
    """Write a cluster file of about ``pods`` pods at ``path``, 4 in 5 running, on ``nodes``
    nodes (None: 25 pods a node, ``pods`` rounded up to a multiple of 25; with fewer nodes the
    running GPU pods they hold set the least). Positions are recorded in it as the last round
    would have."""
    if nodes is None:
        nodes = max(1, -(-pods // PODS_PER_NODE))
        workload = Workload(nodes=nodes, running=20 * nodes, pending=5 * nodes)
    else:
        workload = Workload(nodes=nodes, running=pods - pods // 5, pending=pods // 5)
    store = Store(path)
    try:
        with store.transaction():
            for obj in objects(workload):
                store.create(obj)
        EmbeddedCluster(store).record_positions()
        board = ClusterReader(store).positions()
        if board is None or not board.positions:
            raise RuntimeError("the benchmark cluster has no pending job")
        first = board.positions[0]
        running_pod = next(p for p in store.list("Pod") if p["spec"].get("nodeName"))
    finally:
        store.close()
    return Names(str(running_pod["metadata"]["name"]), first.job.split("/")[1], first.queue)


def pykai_command() -> list[str]:
    """How a user starts pykai with this interpreter: its console script, else ``-m``."""
    script = shutil.which("pykai", path=str(Path(sys.executable).parent))
    return [script] if script else [sys.executable, "-m", "pykai"]


def median_seconds(command: list[str], runs: int) -> tuple[float, float]:
    """Median wall time and median CPU time (user + system) of ``runs`` runs of ``command``;
    one that fails raises RuntimeError (a command that failed fast must not pass for a fast
    one)."""
    wall, cpu = [], []
    for _ in range(runs):
        before = _children_cpu()
        start = time.perf_counter()
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        wall.append(time.perf_counter() - start)
        cpu.append(_children_cpu() - before)
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(command)} failed: {done.stderr.strip()}")
    return statistics.median(wall), statistics.median(cpu)


def _children_cpu() -> float:
    """CPU seconds used so far by the child processes this one has waited for."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_cli_bench(
    pods: int = 5000,
    runs: int = 10,
    progress: Progress = lambda _: None,
    *,
    large_nodes: int = 1000,
    large_pods: int = 10000,
    large_runs: int = 3,
) -> dict[str, object]:
    """Median seconds of each command, its ratio to the floor, and the load around them:
    every command on the cluster of ``pods`` pods, ``explain`` (which builds the engine's
    state) also on one of ``large_nodes`` nodes and ``large_pods`` pods (``large_runs`` runs;
    no large cluster when ``large_pods`` is 0)."""
    load_before = os.getloadavg()[0]
    pykai = pykai_command()
    seconds: dict[str, tuple[float, float]] = {}
    with tempfile.TemporaryDirectory(prefix="pykai-bench-cli-") as directory:
        path = Path(directory) / "cluster.db"
        progress(f"writing a cluster of {pods} pods")
        names = make_cluster(path, pods)
        cluster = ["--cluster", str(path)]
        commands = {
            "python -c pass": [sys.executable, "-c", "pass"],
            "pykai version": [*pykai, "version"],
            "pykai --help": [*pykai, "--help"],
            f"pykai get pods ({pods} pods)": [*pykai, "get", "pods", *cluster],
            "pykai describe pod": [*pykai, "describe", "pod", names.running_pod, *cluster],
            f"pykai get podgroups ({pods} pods)": [*pykai, "get", "podgroups", *cluster],
            "pykai get podgroups -o wide": [*pykai, "get", "podgroups", "-o", "wide", *cluster],
            "pykai describe queue": [*pykai, "describe", "queue", names.queue, *cluster],
            **_explains(pykai, names, cluster, f"{pods} pods"),
        }
        for name, command in commands.items():
            progress(name)
            seconds[name] = median_seconds(command, runs)
        if large_pods:
            path = Path(directory) / "large.db"
            label = f"{large_nodes} nodes, {large_pods} pods"
            progress(f"writing a cluster of {label}")
            names = make_cluster(path, large_pods, large_nodes)
            for name, command in _explains(pykai, names, ["--cluster", str(path)], label).items():
                progress(name)
                seconds[name] = median_seconds(command, large_runs)
    wall_floor, cpu_floor = seconds["python -c pass"]
    figures: dict[str, object] = {"runs": runs, "large runs": large_runs, "cpus": os.cpu_count()}
    for name, (wall, cpu) in seconds.items():
        figures[f"{name} s"] = round(wall, 3)
        figures[f"{name} x floor"] = round(wall / wall_floor, 1)
        figures[f"{name} cpu s"] = round(cpu, 3)
        figures[f"{name} cpu x floor"] = round(cpu / cpu_floor, 1)
    figures["load average before"] = round(load_before, 2)
    figures["load average after"] = round(os.getloadavg()[0], 2)
    return figures


def _explains(
    pykai: list[str], names: Names, cluster: list[str], label: str
) -> dict[str, list[str]]:
    """``explain`` of the first pending PodGroup and of its queue."""
    group = ["explain", "podgroup", names.pending_podgroup]
    return {
        f"pykai explain podgroup ({label})": [*pykai, *group, *cluster],
        f"pykai explain queue ({label})": [*pykai, "explain", "queue", names.queue, *cluster],
    }
