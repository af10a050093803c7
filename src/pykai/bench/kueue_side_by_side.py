"""``pykai bench kube --shape kueue``: the real Kueue v0.17.0 (its manager, pykai.kube.peer_kueue,
with kube-scheduler v1.34 placing the admitted pods) and ``pykai run`` (its Kueue front door,
its scheduler binding the pods) side by side on Kueue's scheduler performance baseline, scaled
(bench/kueue_shape.py); each run on a fresh control plane of its own (etcd + kube-apiserver
v1.34 on Kueue's own CRDs, kube-controller-manager's Job controller, KWOK as the nodes'
kubelet), the rows in alternating order (bench/figures.py).

Protocol of one run: the nodes, the ResourceFlavor, the WorkloadPriorityClasses, the namespaces,
ClusterQueues and LocalQueues are created; the row's scheduler is started and has settled once
every ClusterQueue is ``Active``. The clock starts as the first Job is created; the Jobs are
created at the baseline's pace (each at its ``Arrival.at_s``, from 32 client threads) and the
clock stops when a Workload watch has seen the last of their Workloads ``Admitted``. Admissions
per second are the Jobs over that time; a Job's time to admission runs from its create to its
Workload's first ``Admitted`` (a Workload preempted and admitted again counts its first);
``preempted`` counts the Workloads seen ``Evicted`` by preemption. Jobs finish as their pods
complete (KWOK, after the class's running time), which frees quota for the Jobs waiting. CPU
seconds are read from /proc over the measured window (``cpu_s``) and over the run
(``cpu_run_s``) for every process of the row (the Kueue manager and kube-scheduler; pykai's
one), and for the apiserver and kube-controller-manager, which both rows share.

Contract: a run whose scheduler fails to start, exits, or does not admit every Job within
``timeout`` seconds of a step is a failed row (``ok`` false, ``error``, the tail of its logs,
and ``admitted``: how many Jobs it had admitted, as every run has it),
never a hang; whatever ends a run (a failure, Ctrl-C, SIGTERM), its processes are stopped and
its directory removed."""

from __future__ import annotations

import statistics
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import cast

from pykai.bench.cpu import cpu_seconds
from pykai.bench.figures import alternate, order, percentile, summarize
from pykai.bench.kube import launch, pykai_command
from pykai.bench.kueue_ceiling import hold_for, simulate
from pykai.bench.kueue_shape import Arrival, KueueShape, measured, nodes, setup
from pykai.bench.side_by_side import RowFailed, Scheduler, tail
from pykai.bench.termination import terminated_as_exit
from pykai.kube import peer_kueue
from pykai.kube.api import KubeApi, connect
from pykai.kube.localcluster import LocalCluster
from pykai.kube.nodes import create_ready_nodes
from pykai.model.conditions import is_true
from pykai.model.kinds import BY_KIND
from pykai.model.meta import Obj

THREADS = 32
SHARED = ("kube-apiserver", "kube-controller-manager")  # both rows' control plane
# figure -> True if more is better; the per-class ones are added by ``figures``
RATE, TOTAL = "admissions_per_s", "all_admitted_s"


class WorkloadWatch(threading.Thread):
    """Watches Workloads: when each Job's Workload (by its owner, ``namespace/job``) was first
    seen Admitted, and which were seen Evicted by preemption. A watch that ends in an error
    (Kueue's conversion webhook being set on its CRDs reinitializes their storage) lists the
    Workloads again and watches on from the list."""

    def __init__(self, api: KubeApi) -> None:
        super().__init__(daemon=True)
        self.api = api
        self.admitted: dict[str, float] = {}
        self.preempted: set[str] = set()
        self.changed = threading.Condition()
        self.stopped = threading.Event()
        _, self.version = api.list(BY_KIND["Workload"])

    def run(self) -> None:
        while not self.stopped.is_set():
            try:
                for event, workload in self.api.watch(BY_KIND["Workload"], self.version, 10):
                    if self.stopped.is_set():
                        return
                    if event == "ERROR":  # e.g. the CRD's storage reinitialized: list again
                        self._relist()
                        break
                    self.version = workload["metadata"].get("resourceVersion", self.version)
                    if event in ("ADDED", "MODIFIED"):
                        self._seen(workload)
            except Exception:
                time.sleep(0.2)
                self._relist()

    def _relist(self) -> None:
        """Take the Workloads as listed and watch on from there (nothing is missed)."""
        try:
            listed, self.version = self.api.list(BY_KIND["Workload"])
        except Exception:
            return
        for workload in listed:
            self._seen(workload)

    def _seen(self, workload: Obj) -> None:
        meta = workload["metadata"]
        owners = [o for o in meta.get("ownerReferences", []) if o.get("kind") == "Job"]
        if not owners:
            return
        key = f"{meta.get('namespace', '')}/{owners[0]['name']}"
        with self.changed:
            if is_true(workload, "Admitted") and key not in self.admitted:
                self.admitted[key] = time.monotonic()
                self.changed.notify_all()
            for found in workload.get("status", {}).get("conditions", []):
                evicted = found.get("type") == "Evicted" and found.get("status") == "True"
                if evicted and "Preempt" in str(found.get("reason", "")):
                    self.preempted.add(key)

    def wait(self, keys: list[str], timeout: float, alive: Callable[[], bool]) -> None:
        """Until every Job of ``keys`` has been admitted; else ``RowFailed``."""
        deadline = time.monotonic() + timeout
        with self.changed:
            while True:
                missing = sum(1 for key in keys if key not in self.admitted)
                if not missing:
                    return
                if not alive():
                    raise RowFailed(f"the scheduler exited with {missing} Jobs not admitted")
                if time.monotonic() > deadline:
                    raise RowFailed(
                        f"{len(keys) - missing} of {len(keys)} Jobs admitted in {timeout:g}s"
                    )
                self.changed.wait(0.5)

    def stop(self) -> None:
        self.stopped.set()


def log_paths(row: str, cluster: LocalCluster) -> list[Path]:
    """Where ``row``'s scheduler logs."""
    if row == "kueue":
        return [cluster.directory / "kueue.log", cluster.directory / "kube-scheduler.log"]
    return [cluster.directory / f"{row}.log"]


def _pids(cluster: LocalCluster) -> dict[str, int]:
    return cast(dict[str, int], cluster.status().get("pids", {}))


def start_scheduler(row: str, cluster: LocalCluster) -> Scheduler:
    """Start ``row``'s scheduler on ``cluster`` (the Kueue manager with batch/job only, as
    the baseline's jobs are; kube-scheduler is already running; or ``pykai run``)."""
    if row == "kueue":
        scheduler = Scheduler({"kube-scheduler": _pids(cluster)["kube-scheduler"]})
        scheduler.alive = cluster.running
        try:
            peer_kueue.start(cluster, frameworks=("batch/job",))
        finally:  # also after a failed start
            if "kueue" in _pids(cluster):
                scheduler.pids["kueue"] = _pids(cluster)["kueue"]
        return scheduler
    [path] = log_paths(row, cluster)
    process, stop = launch(pykai_command(cluster), path)
    return Scheduler({row: process.pid}, stop, lambda: process.poll() is None)


@contextmanager
def _control_plane(shape: KueueShape, row: str) -> Iterator[tuple[LocalCluster, KubeApi]]:
    with tempfile.TemporaryDirectory(prefix="pykai-bench-") as directory:
        peer = row == "kueue"
        cluster = LocalCluster(
            Path(directory), kueue_crds=True, kuberay_scheduler="" if peer else "kai-scheduler"
        )
        try:
            cluster.up(default_scheduler=peer)
            api = connect(cluster.kubeconfig)
            now = time.time()
            with ThreadPoolExecutor(8) as pool:
                list(pool.map(lambda node: create_ready_nodes(api, [node], now), nodes(shape)))
            for obj in setup(shape):
                api.create(BY_KIND[obj["kind"]], obj)
            yield cluster, api
        finally:
            cluster.down()


def _wait_active(api: KubeApi, count: int, timeout: float, alive: Callable[[], bool]) -> None:
    """Until ``count`` ClusterQueues are Active; else ``RowFailed``."""
    deadline = time.monotonic() + timeout
    while True:
        queues, _ = api.list(BY_KIND["ClusterQueue"])
        active = sum(1 for queue in queues if is_true(queue, "Active"))
        if active >= count:
            return
        if not alive():
            raise RowFailed(f"settling: the scheduler exited with {active} of {count} active")
        if time.monotonic() > deadline:
            raise RowFailed(f"settling: {active} of {count} ClusterQueues Active in {timeout:g}s")
        time.sleep(0.2)


def _create(api: KubeApi, arrivals: list[Arrival], start: float) -> dict[str, float]:
    """Create each Job at ``start`` + its arrival time from ``THREADS`` threads; when each
    create was sent."""
    sent: dict[str, float] = {}

    def one(arrival: Arrival) -> None:
        delay = start + arrival.at_s - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        sent[arrival.key] = time.monotonic()
        api.create(BY_KIND["Job"], arrival.job)

    with ThreadPoolExecutor(THREADS) as pool:
        list(pool.map(one, arrivals))
    return sent


def measure(shape: KueueShape, row: str, timeout: float = 600.0) -> dict[str, object]:
    """One run of ``row`` on ``shape`` (see the module's protocol and contract)."""
    result: dict[str, object] = {"row": row, "ok": False, "workloads": shape.workloads}
    try:
        with _control_plane(shape, row) as (cluster, api):
            try:
                _run(shape, row, timeout, cluster, api, result)
            except Exception as exc:  # read the logs before the run's directory goes
                result |= {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
                result["log_tail"] = tail(log_paths(row, cluster))
    except Exception as exc:
        result |= {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
    return result


def _cpu(pids: dict[str, int]) -> dict[str, float]:
    return {name: s for name, pid in pids.items() if (s := cpu_seconds(pid)) is not None}


def _run(
    shape: KueueShape,
    row: str,
    timeout: float,
    cluster: LocalCluster,
    api: KubeApi,
    result: dict[str, object],
) -> None:
    """``measure``'s work on a running control plane: its figures into ``result``."""
    scheduler: Scheduler | None = None
    shared = {name: pid for name, pid in _pids(cluster).items() if name in SHARED}
    arrivals = measured(shape, row)
    watch = WorkloadWatch(api)
    watch.start()
    try:
        scheduler = start_scheduler(row, cluster)
        _wait_active(api, shape.cluster_queues, timeout, scheduler.alive)
        cpu_before, shared_before = scheduler.cpu(), _cpu(shared)
        start = time.monotonic()
        sent = _create(api, arrivals, start)
        keys = [arrival.key for arrival in arrivals]
        watch.wait(keys, timeout, scheduler.alive)
        cpu_after, shared_after = scheduler.cpu(), _cpu(shared)
        first = min(sent.values())
        last = max(watch.admitted[key] for key in keys) - first
        result |= {
            "ok": True,
            "create_s": round(max(sent.values()) - first, 3),
            RATE: round(len(keys) / last, 2),
            TOTAL: round(last, 3),
            "preempted": len(watch.preempted & set(keys)),
            "cpu_s": {n: round(s - cpu_before.get(n, 0.0), 2) for n, s in cpu_after.items()},
            "cpu_run_s": {n: round(s, 2) for n, s in cpu_after.items()},
            "shared_cpu_s": {
                n: round(s - shared_before.get(n, 0.0), 2) for n, s in shared_after.items()
            },
        }
        for cls in shape.classes:
            waits = [
                max(0.0, watch.admitted[a.key] - sent[a.key]) for a in arrivals if a.cls == cls.name
            ]
            result[f"admission_{cls.name}_median_s"] = round(statistics.median(waits), 3)
            result[f"admission_{cls.name}_p99_s"] = round(percentile(waits, 99), 3)
        result["cpu_total_s"] = round(sum(cast(dict[str, float], result["cpu_s"]).values()), 2)
    finally:
        watch.stop()
        result["admitted"] = len(set(watch.admitted) & {a.key for a in arrivals})
        if scheduler is not None:
            scheduler.stop()


def figures(shape: KueueShape) -> dict[str, bool]:
    """The figures summarized per row, True where more is better."""
    made = {RATE: True, TOTAL: False, "cpu_total_s": False}
    for cls in shape.classes:
        made[f"admission_{cls.name}_median_s"] = False
        made[f"admission_{cls.name}_p99_s"] = False
    return made


def run_kueue_bench(
    shape: KueueShape,
    rows: tuple[str, ...],
    repeat: int = 3,
    timeout: float = 600.0,
    progress: Callable[[str], None] = lambda _: None,
) -> dict[str, object]:
    """Every row ``repeat`` times, in alternating order; the runs and each row's summary (with
    ``vs_kueue``: how many times the real Kueue's figure each row's is, from the medians);
    ``ceiling``: the shape's ceiling (bench/kueue_ceiling.py), and per row ``of_ceiling``
    (its median admissions per second as a fraction of the ceiling's; None where the ceiling
    admits everything at once) and ``hold_s`` (the per-Job hold at which the simulation takes
    the row's median time: what that time would mean if only quota held it up)."""
    shape.check()
    with terminated_as_exit():
        runs = alternate(
            shape.name, rows, shape.rows, repeat, lambda row: measure(shape, row, timeout), progress
        )
    summary = summarize(runs, rows, figures(shape), ("kueue",))
    ceiling = simulate(shape)
    for entry in summary.values():
        assert isinstance(entry, dict)
        rate, total = entry.get(RATE), entry.get(TOTAL)
        if isinstance(rate, dict) and isinstance(total, dict):
            best = ceiling.admissions_per_s
            entry["of_ceiling"] = None if best is None else round(rate["median"] / best, 4)
            entry["hold_s"] = hold_for(shape, total["median"])
    return {
        "shape": shape.name,
        "nodes": shape.nodes,
        "cluster_queues": shape.cluster_queues,
        "cohorts": shape.cohorts,
        "scale": shape.scale,
        "nominal_cpu": shape.nominal_cpu,
        "at_once": shape.at_once,
        "workloads": shape.workloads,
        "per_queue": {cls.name: shape.per_queue(cls) for cls in shape.classes},
        "order": [row for _, row in order(rows, repeat)],
        "runs": runs,
        "rows": summary,
        "ceiling": ceiling.figures(),
    }
