"""End-to-end throughput on a real kube-apiserver, side by side (benchmarks.md §B): the same
fake GPU nodes and pending pods, bound by pykai and by the real kube-scheduler v1.34 (built by
scripts/peers from the same Go module as the apiserver), and the apiserver's own ceiling
(binding POSTs from a parallel client, no scheduler). Each run gets a fresh control plane; pods
exist before the scheduler starts, so their creation is not measured; a watch counts binds
(polling would load the apiserver).

Rows: ``ceiling``; ``cold-ceiling`` (the same binds from a fresh process that must first
start and list the nodes and pods: bench/cold_binder.py); ``kube-scheduler`` (client QPS/burst
raised to match pykai's 32 writes in flight); ``pykai`` with pods already grouped (a PodGroup
each, as KAI's pod-grouper leaves them: the scheduler's own throughput); ``pykai+grouper`` with
bare pods (two more writes per pod: the PodGroup and the pod's annotation). kube-scheduler does
no gang or queue work.

A run never leaves its control plane behind: whatever ends it (an exception, Ctrl-C, SIGTERM,
turned into SystemExit while the bench runs), the processes it started are stopped.
"""

from __future__ import annotations

import itertools
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path

from pykai.bench import KUBE_ROWS
from pykai.bench.termination import terminated_as_exit
from pykai.kube.api import KubeApi, connect
from pykai.kube.localcluster import LocalCluster
from pykai.kube.nodes import create_ready_nodes, gpu_nodes
from pykai.model import builders
from pykai.model import constants as c
from pykai.model.errors import InvalidRequest
from pykai.model.kinds import BY_KIND
from pykai.model.meta import Obj

CEILINGS = ("ceiling", "cold-ceiling")  # no scheduler: their pods name one that does not run
QUEUE = "default-queue"
NOBODY = "nobody"


@dataclass(frozen=True)
class Run:
    """One measured run: seconds from the scheduler's start to the first and the last bind."""

    row: str
    pods: int
    first_bind_s: float
    all_bound_s: float

    @property
    def pods_per_s(self) -> float:
        """Pods bound per second, start to last bind."""
        return self.pods / self.all_bound_s


def workload(row: str, pods: int, gang: int) -> list[Obj]:
    """Pending pods of 1 GPU each (and their PodGroups where the row wants them)."""
    objects: list[Obj] = []
    for index in range(pods):
        group = f"job-{index // gang}"
        if row == "pykai" and index % gang == 0:
            objects.append(builders.podgroup(group, queue=QUEUE, min_member=gang))
        pod = builders.pod(
            f"pod-{index}",
            gpus=1,
            group=group if row == "pykai" else "",
            labels={c.QUEUE_LABEL: QUEUE},
        )
        if row == "kube-scheduler":
            pod["spec"]["schedulerName"] = "default-scheduler"
        elif row in CEILINGS:
            pod["spec"]["schedulerName"] = NOBODY
        objects.append(pod)
    return objects


class BindCounter(threading.Thread):
    """Watches pods and records when each one is first seen bound."""

    def __init__(self, api: KubeApi, expected: int) -> None:
        super().__init__(daemon=True)
        self.api, self.expected = api, expected
        self.bound: dict[str, float] = {}
        self.done = threading.Event()
        _, self.version = api.list(BY_KIND["Pod"])

    def run(self) -> None:
        while not self.done.is_set():
            for event, pod in self.api.watch(BY_KIND["Pod"], self.version, timeout=30):
                self.version = pod["metadata"].get("resourceVersion", self.version)
                if event not in ("ADDED", "MODIFIED"):
                    continue
                name = pod["metadata"]["name"]
                if pod.get("spec", {}).get("nodeName") and name not in self.bound:
                    self.bound[name] = time.monotonic()
                    if len(self.bound) >= self.expected:
                        self.done.set()
                        return


@contextmanager
def _cluster(nodes: int) -> Iterator[tuple[LocalCluster, KubeApi]]:
    with tempfile.TemporaryDirectory(prefix="pykai-bench-") as directory:
        cluster = LocalCluster(Path(directory))
        cluster.up(controller_manager=False, stand_ins=False)
        try:
            api = connect(cluster.kubeconfig)
            with ThreadPoolExecutor(16) as pool:
                list(
                    pool.map(
                        lambda node: create_ready_nodes(api, [node], time.time()),
                        gpu_nodes(nodes, 8),
                    )
                )
            yield cluster, api
        finally:
            cluster.down()


def _create(api: KubeApi, objects: list[Obj]) -> None:
    """PodGroups first, then pods, with parallel writes."""
    with ThreadPoolExecutor(32) as pool:
        for kind in ("PodGroup", "Pod"):
            batch = [o for o in objects if o["kind"] == kind]
            list(pool.map(lambda o, kind=kind: api.create(BY_KIND[kind], o), batch))


def kube_scheduler_command(cluster: LocalCluster) -> list[str]:
    """kube-scheduler v1.34 on the cluster, client QPS and burst raised (its default 50/100
    would throttle it), no listener, no leader election."""
    return [
        str(cluster.binary("kube-scheduler")),
        f"--kubeconfig={cluster.kubeconfig}",
        f"--authentication-kubeconfig={cluster.kubeconfig}",
        f"--authorization-kubeconfig={cluster.kubeconfig}",
        "--leader-elect=false",
        "--kube-api-qps=1000",
        "--kube-api-burst=1000",
        "--bind-address=127.0.0.1",
        "--secure-port=0",
    ]


def pykai_command(cluster: LocalCluster) -> list[str]:
    """``pykai run`` as the ``pykai`` rows of bench/kube.py run it."""
    return [
        sys.executable,
        "-m",
        "pykai",
        "run",
        f"--kubeconfig={cluster.kubeconfig}",
        "--period=0.2",
        "--no-scheduled-events",
    ]


def _scheduler(
    row: str, cluster: LocalCluster, api: KubeApi, nodes: int, pods: int
) -> Callable[[], object]:
    """Start what binds for ``row``; return how to stop it."""
    if row == "ceiling":
        names = [f"pod-{i}" for i in range(pods)]
        targets = list(
            zip(names, itertools.cycle(f"gpu-node-{i}" for i in range(nodes)), strict=False)
        )
        pool = ThreadPoolExecutor(32)
        pool.map(lambda target: api.bind("default", *target), targets)
        return lambda: pool.shutdown(wait=True)
    if row == "kube-scheduler":
        command = kube_scheduler_command(cluster)
    elif row == "cold-ceiling":
        command = [sys.executable, "-m", "pykai.bench.cold_binder", str(cluster.kubeconfig), NOBODY]
    else:
        command = pykai_command(cluster)
    _, stop = launch(command, cluster.directory / f"{row}.log")
    return stop


def launch(
    command: list[str], log_path: Path
) -> tuple[subprocess.Popen[bytes], Callable[[], None]]:
    """Start ``command`` with its output in ``log_path``; the process, and how to stop it
    (SIGTERM, SIGKILL after 30 s, the log closed)."""
    log = log_path.open("wb")
    process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)

    def stop() -> None:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()

    return process, stop


def measure(row: str, nodes: int, pods: int, gang: int = 1, timeout: float = 600.0) -> Run:
    """One run of ``row`` on a fresh control plane."""
    with _cluster(nodes) as (cluster, api):
        _create(api, workload(row, pods, gang))
        counter = BindCounter(api, pods)
        counter.start()
        started = time.monotonic()
        stop = _scheduler(row, cluster, api, nodes, pods)
        try:
            if not counter.done.wait(timeout):
                raise TimeoutError(
                    f"{row}: {len(counter.bound)} of {pods} pods bound in {timeout:g}s"
                )
        finally:
            stop()
        times = sorted(counter.bound.values())
        return Run(row, pods, times[0] - started, times[-1] - started)


def run_kube_bench(
    nodes: int,
    pods: int,
    gang: int = 1,
    rows: tuple[str, ...] = KUBE_ROWS,
    repeat: int = 1,
    progress: Callable[[str], None] = lambda _: None,
) -> dict[str, object]:
    """Every row ``repeat`` times; medians, and ratios to kube-scheduler and to the ceiling
    (``progress`` is told each run as it starts)."""
    if pods > nodes * 8:
        raise InvalidRequest(f"{pods} pods of 1 GPU do not fit on {nodes} nodes of 8 GPUs")
    if pods % gang:
        raise InvalidRequest(f"--pods {pods} is not a multiple of --gang {gang}")
    runs = []
    with terminated_as_exit():
        for run in range(1, repeat + 1):
            for row in rows:
                progress(f"{row}, run {run} of {repeat}")
                runs.append(measure(row, nodes, pods, gang))
    medians = {row: statistics.median(r.pods_per_s for r in runs if r.row == row) for row in rows}
    figures: dict[str, object] = {
        "nodes": nodes,
        "pods": pods,
        "gang": gang,
        "runs": [asdict(r) | {"pods_per_s": round(r.pods_per_s, 1)} for r in runs],
        "pods_per_s": {row: round(value, 1) for row, value in medians.items()},
    }
    if "kube-scheduler" in medians:
        figures["vs_kube_scheduler"] = {
            row: round(value / medians["kube-scheduler"], 2) for row, value in medians.items()
        }
    for ceiling in CEILINGS:
        if ceiling in medians:
            figures[f"vs_{ceiling.replace('-', '_')}"] = {
                row: round(value / medians[ceiling], 2) for row, value in medians.items()
            }
    return figures
