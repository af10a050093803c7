"""``pykai run``: pykai's components against a real API server, on the same engine and the same
controllers as the embedded cluster (round/steps.py), with kube/host.py as their Host.
One process runs any subset of the components (all five by default):

- ``podgrouper``: a PodGroup for every kai-scheduler pod without one (by its top owner);
- ``scheduler``: the cycle, its binds (kube/binder.py) and evictions, the PodGroup's scheduling
  conditions and its last-start / stale-since annotations, why pods wait; and, where Kueue's
  CRDs are installed, Kueue's controllers (docs/kueue.md): jobs become Workloads, admission,
  suspension, Workload / ClusterQueue / LocalQueue status;
- ``binder``: carries out BindRequests (shared-GPU pods) and frees unused GPU reservations;
- ``queuecontroller`` / ``podgroupcontroller``: queue status and PodGroup status;
- ``provisioning``: the stand-in for a cluster autoscaler's answer to Kueue's
  ProvisioningRequests (check-capacity), where no autoscaler runs.

The embedded cluster's other stand-ins (a kubelet, the KubeRay emulator) are refused here: on a
real cluster the kubelets (KWOK on a local one) and the KubeRay operator do their work.

Nothing is decided before every kind the decisions read has been listed, so a restarted process
never acts on a half-filled cache; the kinds only Kueue's pass reads are listed next, and that
pass waits for them (kube/watched.py). If the apiserver refuses those first lists (or the
first lease request) with 401/403, ``run`` raises RefusedAtStart: the credentials or their
RBAC are wrong, and retrying would only hide it.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Executor, ThreadPoolExecutor

from pykai.controllers.host import Host
from pykai.controllers.kueue.admission import run_kueue
from pykai.controllers.kueue.jobs import KUEUE_JOBS
from pykai.round.steps import COMPONENTS, Round

__all__ = ["DEFAULT_COMPONENTS", "KubeRunner"]
from pykai.controllers.validation import StoredCheck
from pykai.engine.decisions import CycleResult
from pykai.engine.memory import settle
from pykai.engine.scheduler import Scheduler
from pykai.engine.settings import SchedulerConfig
from pykai.engine.state import ClusterState
from pykai.kube.api import API_ERRORS, KubeApi, RefusedAtStart
from pykai.kube.binding import RESERVATION_NAMESPACE, groups_in_use
from pykai.kube.host import BIND_THREADS, KubeHost
from pykai.kube.leader import LeaderElector
from pykai.kube.metrics import RunMetrics
from pykai.kube.visibility import Visibility
from pykai.kube.watched import KUEUE_READS, OPTIONAL, Watch
from pykai.model import constants as c
from pykai.model.errors import AlreadyExists
from pykai.model.meta import Obj
from pykai.model.partition import Partition
from pykai.standins.provisioning import answer_provisioning_requests
from pykai.standins.workloads import Controller

log = logging.getLogger("pykai.run")

DEFAULT_COMPONENTS = frozenset(COMPONENTS[:5])
BIND_BURST_SECONDS = 2.0  # the longest a cycle waits for a burst of binds to go out
STATUS_RESYNC_SECONDS = 60.0  # every object's status is checked this often (else: what changed)


class KubeRunner:
    """Keeps the host's cache in step with the apiserver and runs the chosen components."""

    def __init__(
        self,
        api: KubeApi,
        config: SchedulerConfig | None = None,
        components: frozenset[str] = DEFAULT_COMPONENTS,
        pool: Executor | None = None,
        *,
        scheduled_events: bool = True,
        metrics: RunMetrics | None = None,
        observers: Sequence[Callable[[ClusterState, CycleResult, float], None]] = (),
        visibility: Visibility | None = None,
        bind_pool: Executor | None = None,
        watch: Watch | None = None,
        partition: Partition | None = None,
    ) -> None:
        """``pool`` carries out the writes (default: 32 threads), ``bind_pool`` the binds
        started while a cycle decides (default: the host's ``BIND_THREADS``); ``watch``: the
        informers, maybe already listing (``pykai run`` starts them before it imports the
        engine; default: started by ``run``);
        ``scheduled_events`` off leaves a bind one write (for benchmarks); each observer is
        handed the state, the result and the time after every cycle, in the loop's thread (the
        dashboard, the pending-positions board); ``visibility`` is told the pending Workloads'
        positions after each Kueue pass; ``partition``: the scheduling shard this scheduler
        serves (its informers see only that partition's nodes, queues, PodGroups and
        BindRequests; the other components serve every partition, so a partitioned process
        runs the scheduler alone: ``pykai run`` refuses the rest)."""
        self.api = api
        self.metrics = metrics or RunMetrics(components)
        self.visibility = visibility
        self.components = components
        config = config or SchedulerConfig()
        if "scheduler" not in components:  # status only: fair share without actions
            config = config.model_copy(update={"actions": []})
        self.scheduler = Scheduler(config)
        self.watch = watch or Watch(api, components, partition)
        self.pool = pool or ThreadPoolExecutor(max_workers=32, thread_name_prefix="pykai-write")
        # status patches and events: their backlog after a big cycle never delays the next
        self.background = (
            ThreadPoolExecutor(max_workers=8, thread_name_prefix="pykai-status")
            if pool is None
            else pool
        )
        # events: a backlog of them never delays a status patch (kube/host.py)
        self.events = (
            ThreadPoolExecutor(max_workers=4, thread_name_prefix="pykai-events")
            if pool is None
            else pool
        )
        self.host = KubeHost(
            api,
            self.pool,
            report_binds="scheduler" in components,
            bound=self.metrics.bound,
            bind_pool=bind_pool,
            changes=self.watch.changes,
            background=self.background,
            events=self.events,
        )
        # Kueue's admission is cluster-wide: the default shard's scheduler runs it, no other
        kueue = "scheduler" in components and (partition is None or not partition.value)
        self.round = Round(
            components,
            workloads=(
                *(((kind, self._kueue_only(job)) for kind, job in KUEUE_JOBS) if kueue else ()),
            ),
            check=StoredCheck(),  # the jobs Kueue's reconciler reads: apply's rules
            scheduled_events=scheduled_events,
            after_binds=(self._run_binder,) if "binder" in components else (),
            admission=(
                *((self._run_kueue,) if kueue else ()),
                *((answer_provisioning_requests,) if "provisioning" in components else ()),
            ),
        )
        self.kinds = self.watch.kinds
        self.observers = tuple(observers)
        self.cycles = 0  # cycles run by this process
        self._next_full_status = 0.0  # when status is next checked for every object

    def run(
        self, stop: threading.Event, period: float = 1.0, elector: LeaderElector | None = None
    ) -> None:
        """Run cycles every ``period`` seconds until ``stop`` is set; with an elector, only
        while this replica holds the lease (the caches stay warm for a fast failover): it
        competes for the lease once every informer has listed, and renews it from its own
        thread, so a cycle may take longer than the lease. Raises RefusedAtStart (and sets
        ``stop``) if the apiserver refuses the credentials at start."""
        electing = ready = settled = False
        try:
            while not stop.is_set():
                self.watch.start()  # once (unless pykai run started it already)
                self.host.drain()
                try:
                    ready = self.ready()
                    if ready and not settled:  # the initial load is in (engine/memory.py)
                        settle(self.host.state)
                        settled = True
                        self.watch.start_later()
                    if ready and elector is not None and not electing:
                        elector.start(stop)
                        electing = True
                    leading = ready and (elector is None or elector.leading())
                    self.metrics.loop(ready, leading)
                    if leading:
                        self.cycle()
                        self._cycled()
                except API_ERRORS as exc:  # the apiserver may be restarting
                    log.warning("cycle failed: %s", exc)
                    self.metrics.cycle_failed("api")
                except RefusedAtStart:
                    raise
                except Exception:  # a bug: objects cannot make a cycle fail; go on with the next
                    log.exception("cycle failed; the state is rebuilt from the cache")
                    self.metrics.cycle_failed("bug")
                    self.host.rebuild_state()
                if ready:
                    stop.wait(period)
                    # a burst of binds (more than the bind threads) first, at most 2 s
                    self.host.wait_for_binds(BIND_THREADS, BIND_BURST_SECONDS)
                else:  # the first cycle starts as soon as the last first list is in
                    self.host.wait_for_change(period)
        except RefusedAtStart:
            stop.set()  # the other first lists end too, so their log lines come before ours
            self.watch.stop.set()
            self.watch.join(5.0)
            raise
        finally:
            stop.set()
            self.watch.stop.set()
            # writes under way finish; queued ones (thousands of status patches after a big
            # cycle, each waiting out a timeout if the apiserver is gone) are dropped: the
            # next process derives them again
            self.pool.shutdown(wait=True, cancel_futures=True)
            self.background.shutdown(wait=True, cancel_futures=True)
            self.events.shutdown(wait=True, cancel_futures=True)
            self.host.bind_pool.shutdown(wait=True, cancel_futures=True)

    def _cycled(self) -> None:
        """Count a finished cycle: the first says the process is ready; each is logged at
        debug level (tests wait for cycles, not for time)."""
        self.cycles += 1
        if self.cycles == 1:
            log.info("ready: every informer has listed its kind; first cycle done")
        log.debug("cycle %d done", self.cycles)

    def ready(self) -> bool:
        """True once every required kind has been listed."""
        return all(kind in self.host.synced for kind in self.kinds if kind not in OPTIONAL)

    def cycle(self) -> CycleResult:
        """One round of this process's components; the phases of a round that decided
        something are logged."""
        started = time.perf_counter()
        self.host.release_expired_holds()
        marks: list[tuple[str, float]] = []

        early = self.host.bind_early if "scheduler" in self.components else None

        def decide() -> CycleResult:
            marks.append(("before", time.perf_counter()))
            result = self.scheduler.run_cycle(self.host.state, time.time(), early)
            marks.append(("schedule", time.perf_counter()))
            return result

        full = time.monotonic() >= self._next_full_status
        if full:  # a resync: what a lost background write left behind is repaired
            self._next_full_status = time.monotonic() + STATUS_RESYNC_SECONDS
        try:
            result = self.round.run(self.host, decide, full_status=full)
        finally:
            self.host.end_cycle()
        marks.append(("after", time.perf_counter()))
        (_, before), (_, decided), (_, done) = marks
        phases = {"group": before - started, "schedule": decided - before, "write": done - decided}
        self.metrics.cycle(result, phases, self.host.state)
        for observe in self.observers:
            observe(self.host.state, result, time.time())
        if result.binds or result.evictions:
            log.info(
                "cycle: %d binds, %d evictions (group %.3fs, schedule %.3fs, write %.3fs)",
                len(result.binds),
                len(result.evictions),
                before - started,
                decided - before,
                done - decided,
            )
        return result

    def kueue_ready(self) -> bool:
        """True once every kind Kueue's controllers read has been listed, and batch Jobs
        (never where Kueue's CRDs are not installed): before that, a job's Workload, or a
        Workload's job, may exist unseen. RayJobs and RayClusters are not waited for: their
        CRDs may be missing."""
        return all(kind in self.host.synced for kind in (*KUEUE_READS, "Job"))

    def _run_kueue(self, host: Host) -> None:
        """Kueue's scheduler and status writers (controllers/kueue/admission.py); an API
        error ends the pass, not the round (KAI's scheduling goes on)."""
        if self.kueue_ready():
            served = "ProvisioningRequest" in self.host.synced  # else no autoscaler answers
            try:
                run_kueue(host, self.scheduler.config, provisioning=served)
            except (*API_ERRORS, AlreadyExists) as exc:  # never stops the cycle of everyone else
                log.warning("Kueue's pass stopped early, tried again next cycle: %s", exc)
                self.metrics.cycle_failed("kueue")
            if self.visibility is not None:
                self.visibility.update(
                    host.list("Workload"), host.list("LocalQueue"), host.list("ClusterQueue")
                )

    def _kueue_only(self, reconcile: Controller) -> Controller:
        """Kueue's job reconciler, run once Kueue's kinds are listed."""

        def run(host: Host, job: Obj) -> None:
            if self.kueue_ready():
                reconcile(host, job)

        return run

    def _run_binder(self) -> None:
        """The binder component: BindRequests carried out, unused GPU reservations freed."""
        host = self.host
        requests = host.list("BindRequest")
        pods = {(k[0], k[1]): o for k, o in host.objects.get("Pod", {}).items()}
        reservation_pods = [p for (ns, _), p in pods.items() if ns == RESERVATION_NAMESPACE]
        reserved = {
            (p["metadata"].get("labels") or {}).get(c.GPU_GROUP_LABEL, "")
            for p in reservation_pods
            if not p["metadata"].get("deletionTimestamp")
        }
        host.binder.reconcile(requests, pods, reserved, host.isolation("the binder"))
        host.binder.release(reservation_pods, groups_in_use(pods, requests))
