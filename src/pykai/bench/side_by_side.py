"""``pykai bench kube --shape``: the real KAI v0.12.0 (pykai.kube.peer_kai), ``pykai run`` and
kube-scheduler v1.34 side by side on KAI's scale-test shapes (bench/shapes.py), and the warm
no-decision binder (``warm-ceiling``: bench/warm_binder.py) for ``warm``; each run on a
fresh control plane of its own (etcd + kube-apiserver v1.34 on KAI's CRDs, fake Ready nodes, no
KWOK: nothing but the scheduler writes), the rows in alternating order (bench/figures.py).

Protocol of one run: the nodes and queues are created; the row's scheduler is started and has
settled once a probe job (one small CPU pod) is bound; ``reclaim``'s queue A then fills the
cluster (not timed). The clock starts as the measured jobs are created all at once (32 client
threads, each job its PodGroup then its pods) and stops when a pod watch has seen the last of
their pods bound. Each pod's latency runs from its job's creation to its bind. Evictions are
queue A's pods deleted. CPU seconds are read from /proc for every process of the scheduler
(KAI's five components, listed and summed; pykai's or kube-scheduler's one) and for the
apiserver: over the measured window (``cpu_s``) and over the run (``cpu_run_s``). The
apiserver's own counters give the writes it served in the measured window, per measured pod
(``writes_per_pod``, bench/writes.py; the measured jobs' creates included), and once they stop
growing after it (``writes_per_pod_settled``: what a scheduler writes in the background after
its last bind, at most a minute later).

Contract: a run whose scheduler fails to start, exits, or does not bind everything within
``timeout`` seconds of a step is a failed row (``ok`` false, ``error``, the tail of the
scheduler's log), never a hang; whatever ends a run (a failure, Ctrl-C, SIGTERM), its
processes are stopped and its directory removed."""

from __future__ import annotations

import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import cast

from pykai.bench.cpu import cpu_seconds
from pykai.bench.figures import alternate, order, percentile, summarize
from pykai.bench.kube import kube_scheduler_command, launch, pykai_command
from pykai.bench.shapes import SCHEDULERS, Shape, background, measured, probe, queues
from pykai.bench.termination import terminated_as_exit
from pykai.bench.writes import served, settled
from pykai.kube import peer_kai
from pykai.kube.api import KubeApi, connect
from pykai.kube.localcluster import LocalCluster, kai_crds
from pykai.kube.nodes import create_ready_nodes, gpu_nodes
from pykai.model.errors import PykaiError
from pykai.model.kinds import BY_KIND
from pykai.model.meta import Obj

NAMESPACE = "default"
THREADS = 32
LOG_TAIL = 3000  # characters of a failed row's log


class RowFailed(PykaiError):
    """The row's scheduler did not do its part (the message says what)."""


class PodWatch(threading.Thread):
    """Watches the pods of ``NAMESPACE``: when each was first seen bound, and which were
    deleted."""

    def __init__(self, api: KubeApi) -> None:
        super().__init__(daemon=True)
        self.api = api
        self.bound: dict[str, float] = {}
        self.deleted: set[str] = set()
        self.changed = threading.Condition()
        self.stopped = threading.Event()
        _, self.version = api.list(BY_KIND["Pod"])

    def run(self) -> None:
        while not self.stopped.is_set():
            try:
                events = list(self._events())
            except Exception:
                time.sleep(0.2)
                continue
            del events

    def _events(self) -> Iterator[None]:
        for event, pod in self.api.watch(BY_KIND["Pod"], self.version, timeout=10):
            if self.stopped.is_set():
                return
            meta = pod.get("metadata", {})
            self.version = meta.get("resourceVersion", self.version)
            if meta.get("namespace") != NAMESPACE:
                continue
            name = meta["name"]
            with self.changed:
                if event == "DELETED":
                    self.deleted.add(name)
                elif pod.get("spec", {}).get("nodeName") and name not in self.bound:
                    self.bound[name] = time.monotonic()
                else:
                    continue
                self.changed.notify_all()
            yield

    def wait(self, names: list[str], timeout: float, alive: Callable[[], bool], what: str) -> None:
        """Until every pod of ``names`` is bound; else ``RowFailed``."""
        deadline = time.monotonic() + timeout
        with self.changed:
            while True:
                missing = sum(1 for name in names if name not in self.bound)
                if not missing:
                    return
                if not alive():
                    raise RowFailed(f"{what}: the scheduler exited with {missing} pods unbound")
                if time.monotonic() > deadline:
                    raise RowFailed(
                        f"{what}: {len(names) - missing} of {len(names)} pods bound in {timeout:g}s"
                    )
                self.changed.wait(0.5)

    def stop(self) -> None:
        self.stopped.set()


@dataclass
class Scheduler:
    """A row's running scheduler: its processes by name, how to stop it, whether it runs."""

    pids: dict[str, int]
    stop: Callable[[], None] = lambda: None
    alive: Callable[[], bool] = lambda: True

    def cpu(self) -> dict[str, float]:
        return {
            name: seconds
            for name, pid in self.pids.items()
            if (seconds := cpu_seconds(pid)) is not None
        }


def log_paths(row: str, cluster: LocalCluster) -> list[Path]:
    """Where ``row``'s scheduler logs."""
    if row == "kai":
        return [cluster.directory / f"{name}.log" for name in peer_kai.COMPONENTS]
    return [cluster.directory / f"{row}.log"]


def tail(paths: list[Path]) -> str:
    """The last ``LOG_TAIL`` characters of each log that exists, each under its name."""
    parts = []
    for path in paths:
        try:
            text = path.read_text(errors="replace")
        except OSError:
            continue
        parts.append(f"== {path.name}\n{text[-LOG_TAIL:]}")
    return "\n".join(parts)


def start_scheduler(row: str, cluster: LocalCluster) -> Scheduler:
    """Start ``row``'s scheduler on ``cluster``."""
    if row == "kai":
        scheduler = Scheduler({}, alive=cluster.running)
        try:
            peer_kai.start(cluster)
        finally:  # the components started so far, also after a failed start
            pids = cast(dict[str, int], cluster.status().get("pids", {}))
            scheduler.pids = {n: pids[n] for n in peer_kai.COMPONENTS if n in pids}
        return scheduler
    if row == "kube-scheduler":
        command = kube_scheduler_command(cluster)
    elif row == "warm-ceiling":
        module = "pykai.bench.warm_binder"
        command = [sys.executable, "-m", module, str(cluster.kubeconfig), SCHEDULERS[row]]
    else:
        command = pykai_command(cluster)
    [path] = log_paths(row, cluster)
    process, stop = launch(command, path)
    return Scheduler({row: process.pid}, stop, lambda: process.poll() is None)


def _create_jobs(api: KubeApi, jobs: list[list[Obj]]) -> dict[str, float]:
    """Create the jobs at once from ``THREADS`` threads; when each pod's job began."""
    began: dict[str, float] = {}

    def one(job: list[Obj]) -> None:
        start = time.monotonic()
        for obj in job:
            api.create(BY_KIND[obj["kind"]], obj)
            if obj["kind"] == "Pod":
                began[obj["metadata"]["name"]] = start

    with ThreadPoolExecutor(THREADS) as pool:
        list(pool.map(one, jobs))
    return began


def _pod_names(jobs: list[list[Obj]]) -> list[str]:
    return [o["metadata"]["name"] for job in jobs for o in job if o["kind"] == "Pod"]


@contextmanager
def _control_plane(shape: Shape) -> Iterator[tuple[LocalCluster, KubeApi]]:
    with tempfile.TemporaryDirectory(prefix="pykai-bench-") as directory:
        cluster = LocalCluster(Path(directory), crds=kai_crds(), kuberay_scheduler="")
        try:
            cluster.up(controller_manager=False, stand_ins=False)
            api = connect(cluster.kubeconfig)
            now = time.time()
            with ThreadPoolExecutor(16) as pool:
                nodes = gpu_nodes(shape.nodes, 8)
                list(pool.map(lambda node: create_ready_nodes(api, [node], now), nodes))
            for queue in queues(shape):
                api.create(BY_KIND["Queue"], queue)
            yield cluster, api
        finally:
            cluster.down()


def measure(shape: Shape, row: str, timeout: float = 600.0) -> dict[str, object]:
    """One run of ``row`` on ``shape`` (see the module's protocol and contract)."""
    result: dict[str, object] = {"row": row, "ok": False, "pods": shape.pods}
    try:
        with _control_plane(shape) as (cluster, api):
            try:
                _run(shape, row, timeout, cluster, api, result)
            except Exception as exc:  # read the logs before the run's directory goes
                result |= {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
                result["log_tail"] = tail(log_paths(row, cluster))
    except Exception as exc:
        result |= {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
    return result


def _run(
    shape: Shape,
    row: str,
    timeout: float,
    cluster: LocalCluster,
    api: KubeApi,
    result: dict[str, object],
) -> None:
    """``measure``'s work on a running control plane: its figures into ``result``."""
    scheduler: Scheduler | None = None
    apiserver = cast(dict[str, int], cluster.status()["pids"])["kube-apiserver"]
    watch = PodWatch(api)
    watch.start()
    try:
        scheduler = start_scheduler(row, cluster)
        alive = scheduler.alive
        _create_jobs(api, [probe(row)])
        watch.wait(["probe-0"], timeout, alive, "probe")
        filler = background(shape, row)
        if filler:
            began = time.monotonic()
            _create_jobs(api, filler)
            watch.wait(_pod_names(filler), timeout, alive, "queue A filling")
            result["background_bound_s"] = round(time.monotonic() - began, 3)
        cpu_before = scheduler.cpu()
        api_before = cpu_seconds(apiserver) or 0.0
        writes_before = served(api)
        jobs = measured(shape, row)
        names = _pod_names(jobs)
        start = time.monotonic()
        began_at = _create_jobs(api, jobs)
        created = time.monotonic()
        watch.wait(names, timeout, alive, "measured jobs")
        cpu_after = scheduler.cpu()
        api_after = cpu_seconds(apiserver) or 0.0
        writes = served(api) - writes_before
        binds = [watch.bound[name] for name in names]
        latencies = [max(0.0, watch.bound[n] - began_at[n]) for n in names]
        last = max(binds) - start
        filler_names = set(_pod_names(filler))
        result |= {
            "ok": True,
            "create_s": round(created - start, 3),
            "first_bind_s": round(min(binds) - start, 3),
            "all_bound_s": round(last, 3),
            "pods_per_s": round(shape.pods / last, 1),
            "latency_avg_s": round(sum(latencies) / len(latencies), 3),
            "latency_p99_s": round(percentile(latencies, 99), 3),
            "evictions": len(watch.deleted & filler_names),
            "cpu_s": {
                name: round(cpu_after[name] - cpu_before.get(name, 0.0), 2) for name in cpu_after
            },
            "cpu_run_s": {name: round(seconds, 2) for name, seconds in cpu_after.items()},
            "apiserver_cpu_s": round(api_after - api_before, 2),
            "writes_per_pod": {
                key: round(count / shape.pods, 2) for key, count in sorted(writes.items())
            },
        }
        result["cpu_total_s"] = round(sum(cast(dict[str, float], result["cpu_s"]).values()), 2)
        later = settled(api) - writes_before
        result["writes_per_pod_settled"] = {
            key: round(count / shape.pods, 2) for key, count in sorted(later.items())
        }
    finally:
        watch.stop()
        if scheduler is not None:
            scheduler.stop()


def run_shape_bench(
    shape: Shape,
    rows: tuple[str, ...],
    repeat: int = 3,
    timeout: float = 600.0,
    progress: Callable[[str], None] = lambda _: None,
) -> dict[str, object]:
    """Every row ``repeat`` times, in alternating order; the runs and each row's summary."""
    shape.check()
    with terminated_as_exit():
        runs = alternate(
            shape.name, rows, shape.rows, repeat, lambda row: measure(shape, row, timeout), progress
        )
    return {
        "shape": shape.name,
        "nodes": shape.nodes,
        "pods": shape.pods,
        "jobs": shape.jobs,
        "pods_per_job": shape.pods_per_job,
        "gpus_per_pod": shape.gpus_per_pod,
        "background_pods": shape.background,
        "order": [row for _, row in order(rows, repeat)],
        "runs": runs,
        "rows": summarize(runs, rows),
    }
