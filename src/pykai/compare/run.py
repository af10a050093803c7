"""One scenario, or a batch of them, under one side ("kai": the real KAI's five components;
"pykai": ``pykai run``) on a LocalCluster of the side's own, on KAI's CRDs.

Contract of ``Side(side, directory)`` (a context manager; ``close`` on exit) and its
``run(plan)``: the first plan starts the cluster; each later one reuses it, emptied first
(``reset.reset``: the scheduler stopped, every pod, BindRequest, PodGroup, Queue, Node and
Event deleted and their absence checked within ``reset_deadline`` seconds; anything left makes
the plan's row failed, naming it, and the next plan starts on a fresh cluster). Then it
creates each ``apply`` step's objects (``create``: nodes and queues first, then the PodGroups
and pods within one second of the apiserver's clock, so that equal ages are equal on both
sides; with ``Plan.ages`` ``file-order`` each PodGroup with its pods in a second of its own,
in file order, checked on the record: a PodGroup not younger than the one before it fails the
side; a terminating pod is created, then deleted, held by its finalizer; on KAI's side then
what KAI's binder wrote for the pods the step binds already: the reservation pods of their
shared GPUs and their ``received-resource-type``, ``reservations``), runs the plan's
steps in order (``delete``: the targets, at once; ``advance``: a real wait), each
``apply`` and ``delete`` with the scheduler stopped and started again after it (KAI:
kai-scheduler alone, the other components kept, also from one plan to the next; pykai: a new
``pykai run``; a scheduler that saw half of a step would decide on half of it, at a point
that differs between runs, and a scheduler started afresh carries no cache from the last
plan), waits after each step until it settled, records it (``record.StepRecord``), and stops
the scheduler. Settled: nothing the scheduler writes (``observe``'s digest) changed for
``quiet`` seconds (KAI: ``KAI_QUIET``, three of its 1 s cycles: v0.12.0 counts no cycles in
its metrics) and, for pykai, while it also ran ``SETTLE_CYCLES`` cycles
(``pykai_cycles_total`` on its metrics port; ``PYKAI_QUIET`` the floor). KAI's stack is
started again, on a fresh cluster, when a plan asks for another placement or other flags.

It never raises for the side's own failure: a scheduler that does not start, exits or never
settles (``deadline`` seconds per step), or a cluster that does not empty, gives a ``Record``
with ``failure`` and the tail of its log. The cluster is then torn down, unless every process
of it but the scheduler still runs after a failure other than the reset's (the next plan's
reset checks it empty); a fresh cluster starts in a folder of its own under ``directory``
(``cluster-1``, ``cluster-2``…). ``close`` stops every process the side started. A plan's
record does not depend on the plans run before it on the same ``Side``.

With ``Plan.recreate`` (``recreate_evicted``) the harness plays the pods' controller on the
side (``controller.PodController``): while a step runs and settles, every controlled pod of
the applied manifests that is gone, but for the scenario's own deletes, is created again,
Pending, at the first read of the cluster that misses it; a step with a recreation in its
last read has not settled; ``StepRecord.recreated`` counts them.

``run_side(plan, side, directory)`` is one plan on a ``Side`` of its own: every process it
started is stopped before it returns. ``binaries`` replaces the directory of peer binaries
(tests point it at fakes)."""

from __future__ import annotations

import itertools
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import cast

import httpx
import yaml
from prometheus_client.parser import text_string_to_metric_families

from pykai.compare.controller import PodController
from pykai.compare.expressible import FILE_ORDER, Plan
from pykai.compare.observe import Observation, age_key, observe
from pykai.compare.record import (
    Eviction,
    Record,
    StepRecord,
    node_class,
    pod_classes,
    pod_key,
)
from pykai.compare.reset import reset
from pykai.compare.scenario import Step
from pykai.kube import peer_kai
from pykai.kube.api import KubeApi, connect
from pykai.kube.localcluster import LocalCluster, alive, free_port, kai_crds
from pykai.kube.nodes import create_ready_nodes
from pykai.kube.reservations import RECEIVED_TYPE, received_types, reservation_pods
from pykai.model.errors import PykaiError
from pykai.model.kinds import BY_KIND, CLUSTER_SCOPED
from pykai.model.meta import Obj
from pykai.model.queue import default_queues

SIDES = ("kai", "pykai")
KAI_QUIET = 3.0  # seconds without a change: three of KAI's 1 s cycles
PYKAI_QUIET = 1.0  # the floor under pykai's cycles (0.3 s each)
SETTLE_CYCLES = 3  # pykai's cycles without a change: two whole ones after it was seen
POLL = 0.25  # seconds between two reads of the cluster while it settles
DEADLINE = 180.0  # seconds a step may take to settle
RESET_DEADLINE = 60.0  # seconds a used cluster may take to empty
LOG_TAIL = 3000  # characters of a failed side's log


class SideFailed(PykaiError, RuntimeError):
    """The side stopped, did not start, did not settle or did not empty (the message says
    which)."""


class NotEmpty(SideFailed):
    """A used cluster kept objects of an earlier plan after the reset (the message names
    them)."""


def run_side(
    plan: Plan,
    side: str,
    directory: Path,
    *,
    binaries: Path | None = None,
    quiet: float | None = None,
    deadline: float = DEADLINE,
    start_timeout: float = 60.0,
) -> Record:
    """The plan under ``side`` on a cluster of its own (see the module's contract)."""
    with Side(
        side,
        directory,
        binaries=binaries,
        quiet=quiet,
        deadline=deadline,
        start_timeout=start_timeout,
    ) as one:
        return one.run(plan)


class Side:
    """One side's cluster, kept for a batch of plans (see the module's contract)."""

    def __init__(
        self,
        side: str,
        directory: Path,
        *,
        binaries: Path | None = None,
        quiet: float | None = None,
        deadline: float = DEADLINE,
        start_timeout: float = 60.0,
        reset_deadline: float = RESET_DEADLINE,
    ) -> None:
        self.side, self.directory, self.binaries = side, directory, binaries
        self.reset_deadline = reset_deadline
        self.quiet = quiet if quiet is not None else KAI_QUIET if side == "kai" else PYKAI_QUIET
        self.deadline, self.start_timeout = deadline, start_timeout
        self.cluster: LocalCluster | None = None
        self.clusters = 0  # started so far: each in a folder of its own (etcd keeps its data)
        self.setup: tuple[object, ...] | None = None  # the running KAI stack's placement, flags

    def __enter__(self) -> Side:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop every process the side started."""
        if self.cluster is not None:
            self.cluster.down()
        self.cluster, self.setup = None, None

    def run(self, plan: Plan) -> Record:
        """The plan's record (see the module's contract)."""
        begun = time.monotonic()
        objects = [o for _, step in plan.steps for o in step.objects]
        pods = [o for o in objects if o["kind"] == "Pod"]
        nodes = {o["metadata"]["name"]: node_class(o) for o in objects if o["kind"] == "Node"}
        classes = pod_classes(pods)
        groups = {
            pod_key(p): f"{_namespace(p)}/{p['metadata']['annotations']['pod-group-name']}"
            for p in pods
            if (p["metadata"].get("annotations") or {}).get("pod-group-name")
        }
        steps: list[StepRecord] = []
        failure, tail = "", ""
        cluster = self._cluster(plan)
        try:
            api = self._ready(cluster)
            scheduler = _Scheduler(plan, self.side, cluster, self.start_timeout, self.setup)
            tracker = _Tracker()
            controller = PodController() if plan.recreate else None
            if controller is not None:
                controller.start(connect(cluster.kubeconfig))
            try:
                for number, step in plan.steps:
                    recorded = _step(
                        api,
                        number,
                        step,
                        scheduler,
                        tracker,
                        groups,
                        self._settle,
                        controller=controller,
                        ages=plan.ages,
                    )
                    steps.append(recorded)
                    if plan.ages == FILE_ORDER:
                        check_ages(recorded, [o for _, st in plan.steps for o in st.objects])
            finally:
                scheduler.stop()
                self.setup = scheduler.setup
                if controller is not None:
                    controller.stop()
        except Exception as exc:  # any failure of the side is its row, never a crash
            failure = f"{type(exc).__name__}: {exc}"
            tail = _log_tail(cluster, self.side)
            if isinstance(exc, NotEmpty) or not _serving(cluster):
                self.close()
        return Record(
            self.side, tuple(steps), nodes, classes, failure, tail, time.monotonic() - begun
        )

    def _settle(self) -> tuple[float, int, float]:
        """Quiet seconds, cycles (pykai) and the deadline of one step."""
        return self.quiet, SETTLE_CYCLES if self.side == "pykai" else 0, self.deadline

    def _cluster(self, plan: Plan) -> LocalCluster:
        """The side's cluster; a fresh one where KAI's stack runs with another setup."""
        if self.setup is not None and self.setup != _setup(plan):
            self.close()
        if self.cluster is None:
            self.clusters += 1
            folder = self.directory / f"cluster-{self.clusters}"
            self.cluster = LocalCluster(folder, crds=kai_crds())
            if self.binaries is not None:
                self.cluster.binaries = self.binaries
        return self.cluster

    def _ready(self, cluster: LocalCluster) -> KubeApi:
        """The cluster up and as installed (a used one emptied: ``reset``, then the default
        queues made again, as the chart and ``LocalCluster.up`` make them), else
        ``SideFailed``. Without the default queues, a scenario whose bare pods go to
        ``default-queue`` found it on a fresh cluster and not on a used one."""
        if cluster.status().get("pids"):
            api = connect(cluster.kubeconfig)
            left = reset(api, self.reset_deadline)
            if left:
                shown = ", ".join(left[:10])
                raise NotEmpty(f"the cluster kept {len(left)} object(s) of a plan: {shown}")
            for queue in default_queues():
                api.create_if_absent(BY_KIND["Queue"], queue)
            return api
        cluster.up(timeout=self.start_timeout * 3)  # a loaded machine starts an apiserver slowly
        if self.side == "kai":  # its webhook mutates pods as they are created: before any is
            peer_kai.start_admission(cluster, timeout=self.start_timeout)
        return connect(cluster.kubeconfig)


def _serving(cluster: LocalCluster) -> bool:
    """Whether every process of the cluster is alive, but the scheduler (started again by the
    next plan); the reset then checks that the cluster is empty."""
    pids = cast(dict[str, int], cluster.status().get("pids") or {})
    return bool(pids) and all(alive(pid) for name, pid in pids.items() if name != "kai-scheduler")


def _setup(plan: Plan) -> tuple[object, ...]:
    """What KAI's stack is started with for a plan."""
    placement = plan.placement
    return (placement.get("gpu", "binpack"), placement.get("cpu", "binpack"), plan.kai_flags)


class _Scheduler:
    """The side's scheduler: started, stopped (between steps) and started again. ``setup``:
    what the cluster's KAI stack was started with (None: not started yet)."""

    def __init__(
        self,
        plan: Plan,
        side: str,
        cluster: LocalCluster,
        timeout: float,
        setup: tuple[object, ...] | None,
    ) -> None:
        self.plan, self.side, self.cluster, self.timeout = plan, side, cluster, timeout
        self.setup = setup
        self.process: subprocess.Popen[bytes] | None = None
        self.metrics = ""  # pykai's /metrics URL

    def start(self) -> None:
        if self.side == "kai" and self.setup is None:
            peer_kai.start(
                self.cluster,
                gpu=self.plan.placement.get("gpu", "binpack"),
                cpu=self.plan.placement.get("cpu", "binpack"),
                flags=self.plan.kai_flags,
                timeout=self.timeout,
            )
            self.setup = _setup(self.plan)
        elif self.side == "kai":
            peer_kai.restart_scheduler(self.cluster, self.timeout)
        else:
            self._start_pykai()

    def cycles(self) -> int:
        """Cycles the running ``pykai run`` finished (its ``pykai_cycles_total``); 0 for KAI,
        whose v0.12.0 counts none."""
        if self.side == "kai":
            return 0
        text = httpx.get(self.metrics, timeout=5.0).text
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                if sample.name == "pykai_cycles_total":
                    return int(sample.value)
        raise SideFailed(f"pykai run serves no pykai_cycles_total at {self.metrics}")

    def _start_pykai(self) -> None:
        args = []
        if self.plan.pykai_config:
            config = self.cluster.directory / "pykai-config.yaml"
            config.write_text(yaml.safe_dump(self.plan.pykai_config))
            args.append(f"--scheduler-config={config}")
        address = f"127.0.0.1:{free_port()}"
        self.metrics = f"http://{address}/metrics"
        log_path = self.cluster.directory / "pykai-run.log"
        with open(log_path, "ab") as log:
            begin = log.tell()
            self.process = subprocess.Popen(
                [
                    sys.executable,
                    *("-m", "pykai", "run", f"--kubeconfig={self.cluster.kubeconfig}"),
                    *("--period=0.3", "--log-level=debug", f"--metrics-address={address}"),
                    *args,
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        process = self.process

        def ready() -> bool:
            with open(log_path, "rb") as log:
                log.seek(begin)
                return b"ready:" in log.read() or process.poll() is not None

        _wait(ready, self.timeout, f"pykai run did not get ready within {self.timeout:g}s")
        if process.poll() is not None:
            raise SideFailed(f"pykai run exited {process.returncode}")

    def alive(self) -> bool:
        if self.side == "kai":
            return self.cluster.running()
        return self.process is not None and self.process.poll() is None

    def stop(self) -> None:
        if self.side == "kai":
            peer_kai.stop_scheduler(self.cluster)
            return
        process, self.process = self.process, None
        if process is not None:
            terminate(process)


def terminate(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM, then after 30 s SIGKILL; waits for the process to end."""
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=30)


class _Tracker:
    """Which pods were bound (uid and node), to tell evictions from the scenario's deletes."""

    def __init__(self) -> None:
        self.bound: dict[str, tuple[str, str]] = {}
        self.made: dict[str, str] = {}  # the class of every pod a controller made so far
        self.groups: dict[str, str] = {}  # each pod's PodGroup as its annotation named it

    def remember(self, made: dict[str, str]) -> dict[str, str]:
        """Keep the classes of the pods controllers made; all of them so far."""
        self.made.update(made)
        return dict(self.made)

    def evictions(self, seen: Observation, deleted: set[str]) -> list[tuple[str, str]]:
        """(pod, node) of each pod bound before and now gone, re-created or terminating, not
        deleted by the scenario; remembers what is bound now."""
        evicted = []
        for pod, (uid, node) in list(self.bound.items()):
            if pod in deleted:
                del self.bound[pod]
            elif seen.uids.get(pod) != uid or pod in seen.terminating:
                evicted.append((pod, node))
                del self.bound[pod]
        for pod, node in seen.placed.items():
            if node and pod not in seen.terminating and pod not in self.bound:
                self.bound[pod] = (seen.uids[pod], node)
        return evicted


def _step(
    api: KubeApi,
    number: int,
    step: Step,
    scheduler: _Scheduler,
    tracker: _Tracker,
    groups: dict[str, str],
    settle: Callable[[], tuple[float, int, float]],
    *,
    controller: PodController | None = None,
    ages: str = "",
) -> StepRecord:
    """Apply the step with the scheduler stopped (started again after it: a scheduler that
    sees half a step decides on half of it), settle (recreating evicted controlled pods with
    ``controller``), record."""
    deleted: set[str] = set()
    first = remade = controller.recreated if controller is not None else 0
    if step.action != "advance":
        scheduler.stop()
    if step.action == "apply":
        create(api, list(step.objects), ages=ages)
        if scheduler.side == "kai":  # what KAI's binder wrote for the pods bound already
            bound = [o for o in step.objects if o["kind"] == "Pod"]
            for pod in reservation_pods(bound):
                api.create_if_absent(BY_KIND["Pod"], pod)
            for key, received in received_types(bound).items():
                namespace, name = key.split("/", 1)
                patch = {"metadata": {"annotations": {RECEIVED_TYPE: received}}}
                api.patch(BY_KIND["Pod"], name, patch, namespace)
        if controller is not None:
            controller.track(step.objects)
    elif step.action == "delete":
        for target in step.targets:
            kind = target["kind"]
            namespace = "" if kind in CLUSTER_SCOPED else target.get("namespace") or "default"
            api.delete(BY_KIND[kind], target["name"], namespace, grace_seconds=0)
            if kind == "Pod":
                deleted.add(f"{namespace}/{target['name']}")
                if controller is not None:
                    controller.forget(f"{namespace}/{target['name']}")
    evictions: list[tuple[str, str]] = []
    if step.action == "advance":
        time.sleep(step.seconds)
    else:
        # what the step created bound is bound before the scheduler starts: a pod it evicts
        # before the first read below is still an eviction
        evictions += tracker.evictions(observe(api), deleted)
        scheduler.start()
    quiet, cycles, deadline = settle()
    expected = {pod_key(o) for o in step.objects if o["kind"] == "Pod"}
    made = dict(tracker.made)  # pods made by controllers, kept once gone (an eviction's class)
    seen: set[str] = set()
    last, since, counted = "", time.monotonic(), 0
    end = time.monotonic() + deadline
    while True:
        if not scheduler.alive():
            raise SideFailed(f"the scheduler stopped during step {number}")
        now = observe(api)
        done = scheduler.cycles() if cycles else 0  # read after the cluster: a lower bound
        evictions += tracker.evictions(now, deleted)
        made.update(now.made)
        tracker.groups.update(now.pod_groups)
        seen |= set(now.placed)
        restored = False  # recreated since the last read (by the watch or just now)
        if controller is not None:
            controller.restore(api, now.uids)
            restored, remade = controller.recreated != remade, controller.recreated
        if now.digest != last or restored or not expected <= seen:
            last, since, counted = now.digest, time.monotonic(), done
        elif time.monotonic() - since >= quiet and done - counted >= cycles:
            break
        if time.monotonic() > end:
            raise SideFailed(f"step {number} did not settle within {deadline:g}s")
        time.sleep(POLL)
    return StepRecord(
        number,
        dict(now.placed),
        tuple(
            Eviction(
                pod, node, now.evict_actions.get(groups.get(pod) or tracker.groups.get(pod, ""), ())
            )
            for pod, node in evictions
        ),
        now.queues,
        now.podgroups,
        tracker.remember(made),
        now.grouped,
        now.gpu_groups,
        remade - first,
        dict(now.created),
    )


def create(api: KubeApi, objects: list[Obj], *, ages: str = "") -> None:
    """Create a step's objects: namespaces and nodes (Ready), then the queues within one
    second of the apiserver's clock, then PodGroups and pods within the next (as far as each
    fits in one). Queues of one age divide a remainder by name on both sides, as in the
    scenario harness; queues straddling a second gave it to the older one on one side only
    (KAI's resource_division.go gives it to the older queue, then by name). With ``ages``
    ``file-order`` (``age_batches``) instead, from the start of each second of the apiserver's
    clock the next queue and the next PodGroup with its pods, in file order (the apiserver
    stamps ``creationTimestamp`` in whole seconds of the machine's clock, which it shares), so
    that each queue is younger than the queue before it and each PodGroup younger than the
    PodGroup before it, on both sides alike (KAI compares queues with queues and jobs with
    jobs only). A PodGroup without the ``kai.scheduler/queue`` label gets it, naming its
    ``spec.queue``, as KAI's podgrouper labels the PodGroups it makes: KAI's queuecontroller
    sums only labelled PodGroups into a queue's status (resource_updater.go). A pod with a
    ``deletionTimestamp`` (KAI's Releasing task) is created with its finalizers, bound as
    written, then deleted at once: its finalizer keeps it, terminating."""
    jobs = [o for o in objects if o["kind"] in ("PodGroup", "Pod")]
    for namespace in sorted({_namespace(o) for o in jobs}):
        api.create_if_absent(
            BY_KIND["Namespace"],
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}},
        )
    queues = [o for o in objects if o["kind"] == "Queue"]
    for obj in objects:
        if obj not in jobs and obj not in queues:
            _create(api, obj)
    batches = age_batches(jobs, queues) if ages == FILE_ORDER else [queues, jobs]
    for batch in batches:
        if not batch:
            continue
        api.list(BY_KIND["Pod"])  # the connection warm
        time.sleep(1.0 - time.time() % 1.0 + 0.01)
        for obj in batch:
            _create(api, obj)
        for obj in batch:
            meta = obj["metadata"]
            if obj["kind"] == "Pod" and meta.get("deletionTimestamp"):
                api.delete(BY_KIND["Pod"], meta["name"], _namespace(obj), grace_seconds=0)


def age_batches(jobs: list[Obj], queues: tuple[Obj, ...] | list[Obj] = ()) -> list[list[Obj]]:
    """PodGroups, pods and queues in creation batches, one a second, for ``file-order`` ages:
    batch k holds the k-th queue (in file order) and the k-th PodGroup with its pods (the
    pods no PodGroup of the list claims by ``pod-group-name`` come first, in a batch of their
    own)."""
    keys = [pod_key(o) for o in jobs if o["kind"] == "PodGroup"]
    grouped: dict[str, list[Obj]] = {key: [] for key in ["", *keys]}
    for obj in jobs:
        if obj["kind"] == "PodGroup":
            grouped[pod_key(obj)].insert(0, obj)
            continue
        name = (obj["metadata"].get("annotations") or {}).get("pod-group-name", "")
        group = f"{_namespace(obj)}/{name}"
        grouped[group if group in grouped else ""].append(obj)
    batches = [batch for batch in grouped.values() if batch]
    batches += [[] for _ in range(len(queues) - len(batches))]
    return [([queues[k]] if k < len(queues) else []) + batch for k, batch in enumerate(batches)]


def check_ages(step: StepRecord, objects: list[Obj]) -> None:
    """``SideFailed`` unless, among the queues and among the PodGroups of ``objects`` that the
    step's record holds, each was created in a later second than the one before it in file
    order."""
    for kind in ("Queue", "PodGroup"):
        order = [age_key(o) for o in objects if o["kind"] == kind]
        stamps = [(key, step.created[key]) for key in order if key in step.created]
        for (before, older), (after, younger) in itertools.pairwise(stamps):
            if not older < younger:  # RFC 3339 in UTC, whole seconds: text order is time order
                raise SideFailed(
                    f"step {step.number}: {after} was created at {younger}, not after "
                    f"{before} ({older}): the ages are not in file order"
                )


def _namespace(obj: Obj) -> str:
    return str(obj["metadata"].get("namespace") or "default")


def _create(api: KubeApi, obj: Obj) -> None:
    kind = obj["kind"]
    if kind == "Node":
        create_ready_nodes(api, [obj], time.time())
        return
    body: Obj = {k: v for k, v in obj.items() if k != "status"}
    if kind not in CLUSTER_SCOPED:
        body["metadata"] = {**obj["metadata"], "namespace": _namespace(obj)}
    if kind == "PodGroup" and (obj.get("spec") or {}).get("queue"):
        labels = {peer_kai.QUEUE_LABEL: obj["spec"]["queue"]}
        body["metadata"]["labels"] = {**labels, **(obj["metadata"].get("labels") or {})}
    api.create_if_absent(BY_KIND[kind], body)


def _wait(condition: Callable[[], bool], timeout: float, failure: str) -> None:
    end = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > end:
            raise SideFailed(failure)
        time.sleep(0.3)


def _log_tail(cluster: LocalCluster, side: str) -> str:
    """The end of the logs of the side's processes that are dead (else of its scheduler)."""
    names = ["pykai-run"] if side == "pykai" else list(peer_kai.COMPONENTS)
    logs = [cluster.directory / f"{name}.log" for name in names]
    logs = [log for log in logs if log.exists()]
    pids = cluster.status().get("pids") or {}
    dead = [
        cluster.directory / f"{name}.log"
        for name, pid in dict(pids).items()  # type: ignore[call-overload]
        if name in names and not alive(pid)
    ]
    chosen = [log for log in dead if log.exists()] or logs[-1:]
    return "\n".join(
        f"== {log.name}\n{log.read_text(errors='replace')[-LOG_TAIL:]}" for log in chosen
    )
