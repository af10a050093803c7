"""CLI latency: wall time of ``pykai`` commands as a user runs them, each in a new process.

A cluster file of ``pods`` pods is made first, straight into the store (the engine never runs):
the contended cluster of the engine benchmark (``contended.py``), scaled so that it holds
``pods`` pods, 4 in 5 of them running on nodes and the rest pending, with their PodGroups and
queues. Then each command runs ``runs`` times; the figures are the medians of its wall time
and of its CPU time (user + system, which other jobs on a busy machine disturb far less).
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
from pathlib import Path

from pykai.bench.contended import Workload, objects
from pykai.embedded.store import Store

PODS_PER_NODE = 25  # the contended cluster's 20 running and 5 pending pods a node
Progress = Callable[[str], None]


def make_cluster(path: Path, pods: int) -> str:
    """Write a cluster file of ``pods`` pods (a multiple of 25 rounded up) at ``path``;
    returns the name of one running pod, for ``describe``."""
    nodes = max(1, -(-pods // PODS_PER_NODE))
    workload = Workload(nodes=nodes, running=20 * nodes, pending=5 * nodes)
    store = Store(path)
    try:
        with store.transaction():
            for obj in objects(workload):
                store.create(obj)
        running = next(p for p in store.list("Pod") if p["spec"].get("nodeName"))
    finally:
        store.close()
    return str(running["metadata"]["name"])


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
    pods: int = 5000, runs: int = 10, progress: Progress = lambda _: None
) -> dict[str, object]:
    """Median seconds of each command, its ratio to the floor, and the load around them."""
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="pykai-bench-cli-") as directory:
        path = Path(directory) / "cluster.db"
        progress(f"writing a cluster of {pods} pods")
        pod = make_cluster(path, pods)
        pykai = pykai_command()
        cluster = ["--cluster", str(path)]
        commands = {
            "python -c pass": [sys.executable, "-c", "pass"],
            "pykai version": [*pykai, "version"],
            "pykai --help": [*pykai, "--help"],
            f"pykai get pods ({pods} pods)": [*pykai, "get", "pods", *cluster],
            "pykai describe pod": [*pykai, "describe", "pod", pod, *cluster],
        }
        seconds = {}
        for name, command in commands.items():
            progress(name)
            seconds[name] = median_seconds(command, runs)
    wall_floor, cpu_floor = seconds["python -c pass"]
    figures: dict[str, object] = {"runs": runs, "cpus": os.cpu_count()}
    for name, (wall, cpu) in seconds.items():
        figures[f"{name} s"] = round(wall, 3)
        figures[f"{name} x floor"] = round(wall / wall_floor, 1)
        figures[f"{name} cpu s"] = round(cpu, 3)
        figures[f"{name} cpu x floor"] = round(cpu / cpu_floor, 1)
    figures["load average before"] = round(load_before, 2)
    figures["load average after"] = round(os.getloadavg()[0], 2)
    return figures
