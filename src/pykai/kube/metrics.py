"""The metrics of ``pykai run``: KAI's names, labels and units, so that KAI's Grafana dashboards
work unchanged, and pykai's own (``pykai_*``).

KAI's scheduler metrics (its pkg/scheduler/metrics, namespace ``kai``) come from processes that
run the ``scheduler`` component; its queue-controller metrics (pkg/queuecontroller/metrics)
from processes that run ``queuecontroller``. Figures of a cycle (latencies of the last cycle,
queue gauges, pending PodGroups) are a snapshot swapped whole after each cycle, so a scrape
never sees half of one, and dropped when the process stops leading (a standby would otherwise
report what it saw when it last led).

The runner feeds it through a small interface: :meth:`RunMetrics.cycle` after each cycle,
:meth:`RunMetrics.bound` per bind, :meth:`RunMetrics.loop` at each turn of its loop (informers
listed, leadership), :meth:`RunMetrics.cycle_failed`; :meth:`RunMetrics.count_requests` counts
the API client's requests by method and status code.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable, Iterator

import httpx
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, disable_created_metrics
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from pykai.engine.decisions import CycleResult
from pykai.engine.state import ClusterState
from pykai.kube.rawpost import RawPoster
from pykai.model import constants as c
from pykai.model.queue import QueueView
from pykai.model.resources import MB, Resources

disable_created_metrics()  # type: ignore[no-untyped-call]  # no *_created series, as KAI

# KAI's units (pkg/scheduler/api/resource_info: MilliCPUToCores, MemoryToGB)
MILLI_PER_CORE = 1000.0
BYTES_PER_GB = 1e9
# KAI's task latency buckets: ExponentialBuckets(5, 2, 10) milliseconds
LATENCY_BUCKETS_MS = tuple(5.0 * 2**i for i in range(10))
WAIT_BUCKETS_S = (1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600, 7200, 21600, 86400)
QUEUE_LABELS = ("queue_name", "queue_metadata_name", "queue_display_name")
DEFAULT_NODEPOOL = "default"  # KAI's name for the node pool of nodes without a pool label


class _Snapshot(Collector):
    """Gauge families replaced whole after each cycle."""

    def __init__(self) -> None:
        self.families: list[Metric] = []

    def collect(self) -> Iterable[Metric]:
        return list(self.families)


def _gauge(name: str, help_text: str, labels: Iterable[str] = ()) -> GaugeMetricFamily:
    return GaugeMetricFamily(name, help_text, labels=list(labels))


class RunMetrics:
    """The metrics registry of one ``pykai run`` process and what its health endpoints tell.
    ``stall_after``: seconds without a turn of the run loop after which it is not alive."""

    def __init__(self, components: Iterable[str], stall_after: float = 60.0) -> None:
        self.components = frozenset(components)
        self.stall_after = stall_after
        self.registry = CollectorRegistry(auto_describe=True)
        self._snapshot = _Snapshot()
        self.registry.register(self._snapshot)
        self._lock = threading.Lock()
        self.ready = False
        self.leading = False
        self._last_turn = time.monotonic()
        registry = self.registry
        self.bind_latency = Histogram(
            "kai_task_bind_latency_milliseconds",
            "Task bind latency histogram in milliseconds",
            buckets=LATENCY_BUCKETS_MS,
            registry=registry,
        )
        self.task_latency = Histogram(
            "kai_task_scheduling_latency_milliseconds",
            "Task scheduling latency in milliseconds (pod creation to bind attempt)",
            buckets=LATENCY_BUCKETS_MS,
            registry=registry,
        )
        self.evicted = Counter(
            "kai_pod_group_evicted_pods",
            "Total number of pods evicted per pod group",
            ["podgroup", "namespace", "uid", "nodepool", "action"],
            registry=registry,
        )
        self.wait = Histogram(
            "pykai_podgroup_wait_seconds",
            "Seconds from a PodGroup's creation to its first start (its first bound pods)",
            ["queue"],
            buckets=WAIT_BUCKETS_S,
            registry=registry,
        )
        self.phases = Histogram(
            "pykai_cycle_phase_seconds",
            "Duration of each phase of a cycle: group, schedule, write (decisions carried out)",
            ["phase"],
            registry=registry,
        )
        self.cycles = Counter("pykai_cycles", "Cycles run", registry=registry)
        self.failures = Counter(
            "pykai_cycle_failures",
            "Cycles that failed: cause api (the apiserver away or refusing) or bug",
            ["cause"],
            registry=registry,
        )
        self.bind_failures = Counter(
            "pykai_bind_failures",
            "Binds the apiserver refused or did not answer",
            registry=registry,
        )
        self.requests = Counter(
            "pykai_api_requests",
            "Requests to the apiserver by method and HTTP status code",
            ["method", "code"],
            registry=registry,
        )
        self.leader = Gauge(
            "pykai_leader",
            "1 while this process acts (holds its Lease, or runs without leader election)",
            registry=registry,
        )
        self.synced = Gauge(
            "pykai_informers_synced",
            "1 once every informer this process needs has listed its kind",
            registry=registry,
        )

    # ---- the runner's interface --------------------------------------------------------------

    def loop(self, ready: bool, leading: bool) -> None:
        """One turn of the run loop: informers listed or not, this process leading or not."""
        with self._lock:
            self._last_turn = time.monotonic()
            if self.leading and not leading:
                self._snapshot.families = []
            self.ready, self.leading = ready, leading
        self.synced.set(1 if ready else 0)
        self.leader.set(1 if leading else 0)

    def cycle(self, result: CycleResult, phases: dict[str, float], state: ClusterState) -> None:
        """After a cycle: what it decided (``result``), how long each of the runner's phases
        took (seconds by name: group, schedule, write; KAI's end-to-end latency is schedule +
        write), and the engine state it decided on."""
        now = time.time()
        self.cycles.inc()
        for name, seconds in phases.items():
            self.phases.labels(name).observe(seconds)
        families: list[Metric] = []
        if "scheduler" in self.components:
            families += _scheduler_families(result, phases, state)
            self._scheduler_events(result, state, now)
        if "queuecontroller" in self.components:
            families += _queue_controller_families(result, state.queues.values())
        self._snapshot.families = families

    def bound(self, seconds: float, failed: bool) -> None:
        """One bind carried out (a whole-GPU bind, or a BindRequest written) in ``seconds``."""
        self.bind_latency.observe(seconds * 1000.0)
        if failed:
            self.bind_failures.inc()

    def cycle_failed(self, cause: str) -> None:
        """A cycle that failed: ``api`` or ``bug``."""
        self.failures.labels(cause).inc()

    def count_requests(self, client: httpx.Client, poster: RawPoster | None = None) -> None:
        """Count every response ``client`` (and ``poster``) gets, by method and status code."""

        def count(response: httpx.Response) -> None:
            self.requests.labels(response.request.method, str(response.status_code)).inc()

        hooks = client.event_hooks
        client.event_hooks = {**hooks, "response": [*hooks.get("response", []), count]}
        if poster is not None:

            def counted(method: str, path: str, status: int) -> None:
                self.requests.labels(method, str(status)).inc()

            poster.answered.append(counted)

    # ---- health ------------------------------------------------------------------------------

    def alive(self) -> bool:
        """False once the run loop has not turned for ``stall_after`` seconds (it is stuck)."""
        with self._lock:
            return time.monotonic() - self._last_turn < self.stall_after

    def _scheduler_events(self, result: CycleResult, state: ClusterState, now: float) -> None:
        for bind in result.binds:
            task = state.tasks.get(bind.uid)
            if task is not None and task.pod.meta.creation:
                self.task_latency.observe(max(0.0, now - task.pod.meta.creation) * 1000.0)
        for eviction in result.evictions:
            job = state.jobs.get(eviction.job)
            namespace, _, name = eviction.job.partition("/")
            uid = job.uid if job is not None else ""
            self.evicted.labels(name, namespace, uid, DEFAULT_NODEPOOL, eviction.action).inc()
        for key, started in result.started.items():
            job = state.jobs.get(key)
            first = job is not None and c.LAST_START_ANNOTATION not in job.group.meta.annotations
            if job is not None and first and job.creation:
                self.wait.labels(job.queue).observe(max(0.0, started - job.creation))


def _scheduler_families(
    result: CycleResult, phases: dict[str, float], state: ClusterState
) -> Iterator[Metric]:
    """KAI's scheduler gauges for the last cycle, and pykai's pending PodGroups."""
    timings = result.timings
    for name, help_text, seconds in (
        (
            "kai_e2e_scheduling_latency_milliseconds",
            "E2e scheduling latency in milliseconds (scheduling algorithm + binding), as a gauge",
            phases.get("schedule", 0.0) + phases.get("write", 0.0),
        ),
        (
            "kai_open_session_latency_milliseconds",
            "Open session latency in milliseconds, as a gauge",
            timings.get("session_open", 0.0),
        ),
        (
            "kai_close_session_latency_milliseconds",
            "Close session latency in milliseconds, as a gauge",
            timings.get("close", 0.0),
        ),
    ):
        gauge = _gauge(name, help_text)
        gauge.add_metric([], seconds * 1000.0)
        yield gauge
    actions = _gauge(
        "kai_action_scheduling_latency_milliseconds",
        "Action scheduling latency in milliseconds, as a gauge",
        ["action"],
    )
    for action, seconds in result.action_timings.items():
        actions.add_metric([action], seconds * 1000.0)
    yield actions
    shares = {
        "cpu": _gauge(
            "kai_queue_fair_share_cpu_cores",
            "CPU Fair share of queue, as a gauge. Value is in Cores",
            QUEUE_LABELS,
        ),
        "memory": _gauge(
            "kai_queue_fair_share_memory_gb",
            "Memory Fair share of queue, as a gauge. Value is in GB",
            QUEUE_LABELS,
        ),
        "gpu": _gauge(
            "kai_queue_fair_share_gpu",
            "GPU Fair share of queue, as a gauge. Values in GPU devices",
            QUEUE_LABELS,
        ),
    }
    for name, figures in result.queues.items():
        queue = state.queues.get(name)
        display = queue.spec.display_name if queue is not None else ""
        labels = [display or name, name, display]  # KAI: queue_name is the display name if set
        share = figures.fair_share
        shares["cpu"].add_metric(labels, share.cpu / MILLI_PER_CORE)
        shares["memory"].add_metric(labels, share.memory / BYTES_PER_GB)
        shares["gpu"].add_metric(labels, share.gpu)
    yield from shares.values()
    pending = _gauge(
        "pykai_pending_podgroups",
        "PodGroups with pending pods after the last cycle, by queue and the first reason",
        ["queue", "reason"],
    )
    counts: dict[tuple[str, str], int] = {}
    for key, reasons in result.unschedulable.items():
        job = state.jobs.get(key)
        queue_reason = (job.queue if job is not None else "", reasons[0].reason if reasons else "")
        counts[queue_reason] = counts.get(queue_reason, 0) + 1
    for queue_reason, count in sorted(counts.items()):
        pending.add_metric(list(queue_reason), count)
    yield pending


def _queue_controller_families(
    result: CycleResult, queues: Iterable[QueueView]
) -> Iterator[Metric]:
    """KAI's queue-controller gauges: every queue's quota (spec) and allocation (status)."""
    names = {
        "info": ("kai_queue_info", "Queues info"),
        "deserved": ("kai_queue_deserved_gpus", "Queue deserved GPUs"),
        "quota_cpu": ("kai_queue_quota_cpu_cores", "Queue quota CPU"),
        "quota_memory": ("kai_queue_quota_memory_bytes", "Queue quota memory"),
        "gpus": ("kai_queue_allocated_gpus", "Queue allocated GPUs"),
        "cpus": ("kai_queue_allocated_cpu_cores", "Queue allocated CPUs"),
        "memory": ("kai_queue_allocated_memory_bytes", "Queue allocated memory"),
    }
    families = {key: _gauge(name, text, QUEUE_LABELS) for key, (name, text) in names.items()}
    for queue in queues:
        labels = [queue.name, queue.name, queue.spec.display_name]
        quota = queue.spec.resources
        figures = result.queues.get(queue.name)
        allocated = figures.allocated if figures is not None else Resources.ZERO
        values = {
            "info": 1.0,
            "deserved": quota.gpu.quota,
            "quota_cpu": _unlimited_or(quota.cpu.quota, 1.0 / MILLI_PER_CORE),
            "quota_memory": _unlimited_or(quota.memory.quota, MB),
            "gpus": round(allocated.gpu, 4),
            "cpus": round(allocated.cpu / MILLI_PER_CORE, 4),
            "memory": round(allocated.memory, 4),
        }
        for key, value in values.items():
            families[key].add_metric(labels, value)
    yield from families.values()


def _unlimited_or(quota: float, scale: float) -> float:
    """KAI's quota in its metric's unit: -1 (unlimited) stays -1."""
    return quota if quota == -1 else quota * scale
