"""One scenario under one side ("kai": the real KAI's five components; "pykai": ``pykai run``)
on a fresh LocalCluster of its own, on KAI's CRDs.

Contract of ``run_side``: start the cluster, create each ``apply`` step's objects (nodes and
queues first, then the PodGroups and pods within one second of the apiserver's clock, so that
equal ages are equal on both sides), run the plan's steps in order (``delete``: the targets,
at once; ``advance``: a real wait), each ``apply`` and ``delete`` with the scheduler stopped
and started again after it (KAI: kai-scheduler alone, the other components kept; a scheduler
that saw half of a step would decide on half of it, at a point that differs between runs),
wait after each step until nothing the scheduler writes has changed for ``quiet`` seconds,
record it (``record.StepRecord``), and tear everything down, always: every process it started is
stopped before it returns. It never raises for the side's own failure: a scheduler that does
not start, exits or never settles (``deadline`` seconds per step) gives a ``Record`` with
``failure`` and the tail of its log. ``binaries`` replaces the directory of peer binaries
(tests point it at fakes)."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import yaml

from pykai.compare.expressible import Plan
from pykai.compare.observe import Observation, observe
from pykai.compare.record import (
    Eviction,
    Record,
    StepRecord,
    node_class,
    pod_classes,
    pod_key,
)
from pykai.compare.scenario import Step
from pykai.kube import peer_kai
from pykai.kube.api import KubeApi, connect
from pykai.kube.localcluster import LocalCluster, alive, kai_crds
from pykai.kube.nodes import create_ready_nodes
from pykai.model.errors import PykaiError
from pykai.model.kinds import BY_KIND, CLUSTER_SCOPED
from pykai.model.meta import Obj

SIDES = ("kai", "pykai")
QUIET = 6.0  # seconds without a change: six of KAI's 1 s cycles, twenty of pykai's 0.3 s ones
DEADLINE = 180.0  # seconds a step may take to settle
LOG_TAIL = 3000  # characters of a failed side's log


class SideFailed(PykaiError, RuntimeError):
    """The side stopped, did not start or did not settle (the message says which)."""


def run_side(
    plan: Plan,
    side: str,
    directory: Path,
    *,
    binaries: Path | None = None,
    quiet: float = QUIET,
    deadline: float = DEADLINE,
    start_timeout: float = 60.0,
) -> Record:
    """The plan under ``side`` (see the module's contract)."""
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
    cluster = LocalCluster(directory, crds=kai_crds())
    if binaries is not None:
        cluster.binaries = binaries
    steps: list[StepRecord] = []
    failure, tail = "", ""
    try:
        cluster.up(timeout=start_timeout * 3)  # a loaded machine starts an apiserver slowly
        api = connect(cluster.kubeconfig)
        scheduler = _Scheduler(plan, side, cluster, start_timeout)
        tracker = _Tracker()
        try:
            for number, step in plan.steps:
                steps.append(_step(api, number, step, scheduler, tracker, groups, quiet, deadline))
        finally:
            scheduler.stop()
    except Exception as exc:  # any failure of the side is its row, never a crash
        failure = f"{type(exc).__name__}: {exc}"
        tail = _log_tail(cluster, side)
    finally:
        cluster.down()
    return Record(side, tuple(steps), nodes, classes, failure, tail, time.monotonic() - begun)


class _Scheduler:
    """The side's scheduler: started, stopped (between steps) and started again."""

    def __init__(self, plan: Plan, side: str, cluster: LocalCluster, timeout: float) -> None:
        self.plan, self.side, self.cluster, self.timeout = plan, side, cluster, timeout
        self.process: subprocess.Popen[bytes] | None = None
        self.started = False

    def start(self) -> None:
        if self.side == "kai" and not self.started:
            peer_kai.start(
                self.cluster,
                gpu=self.plan.placement.get("gpu", "binpack"),
                cpu=self.plan.placement.get("cpu", "binpack"),
                flags=self.plan.kai_flags,
                timeout=self.timeout,
            )
        elif self.side == "kai":
            peer_kai.restart_scheduler(self.cluster, self.timeout)
        else:
            self._start_pykai()
        self.started = True

    def _start_pykai(self) -> None:
        args = []
        if self.plan.pykai_config:
            config = self.cluster.directory / "pykai-config.yaml"
            config.write_text(yaml.safe_dump(self.plan.pykai_config))
            args.append(f"--scheduler-config={config}")
        log_path = self.cluster.directory / "pykai-run.log"
        with open(log_path, "ab") as log:
            begin = log.tell()
            self.process = subprocess.Popen(
                [
                    sys.executable,
                    *("-m", "pykai", "run", f"--kubeconfig={self.cluster.kubeconfig}"),
                    *("--period=0.3", "--log-level=debug", *args),
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
        if process is None:
            return
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
    quiet: float,
    deadline: float,
) -> StepRecord:
    """Apply the step with the scheduler stopped (started again after it: a scheduler that
    sees half a step decides on half of it), settle, record."""
    deleted: set[str] = set()
    if step.action != "advance":
        scheduler.stop()
    if step.action == "apply":
        create(api, list(step.objects))
    elif step.action == "delete":
        for target in step.targets:
            kind = target["kind"]
            namespace = "" if kind in CLUSTER_SCOPED else target.get("namespace") or "default"
            api.delete(BY_KIND[kind], target["name"], namespace, grace_seconds=0)
            if kind == "Pod":
                deleted.add(f"{namespace}/{target['name']}")
    if step.action == "advance":
        time.sleep(step.seconds)
    else:
        scheduler.start()
    expected = {pod_key(o) for o in step.objects if o["kind"] == "Pod"}
    evictions: list[tuple[str, str]] = []
    seen: set[str] = set()
    last, since = "", time.monotonic()
    end = time.monotonic() + deadline
    while True:
        if not scheduler.alive():
            raise SideFailed(f"the scheduler stopped during step {number}")
        now = observe(api)
        evictions += tracker.evictions(now, deleted)
        seen |= set(now.placed)
        if now.digest != last or not expected <= seen:
            last, since = now.digest, time.monotonic()
        elif time.monotonic() - since >= quiet:
            break
        if time.monotonic() > end:
            raise SideFailed(f"step {number} did not settle within {deadline:g}s")
        time.sleep(0.5)
    return StepRecord(
        number,
        dict(now.placed),
        tuple(
            Eviction(pod, node, now.evict_actions.get(groups.get(pod, ""), ()))
            for pod, node in evictions
        ),
        now.queues,
        now.podgroups,
    )


def create(api: KubeApi, objects: list[Obj]) -> None:
    """Create a step's objects: namespaces, nodes (Ready) and queues at once, then PodGroups
    and pods within one second of the apiserver's clock (as far as they fit in one). A
    PodGroup without the ``kai.scheduler/queue`` label gets it, naming its ``spec.queue``, as
    KAI's podgrouper labels the PodGroups it makes: KAI's queuecontroller sums only labelled
    PodGroups into a queue's status (resource_updater.go)."""
    jobs = [o for o in objects if o["kind"] in ("PodGroup", "Pod")]
    for namespace in sorted({_namespace(o) for o in jobs}):
        api.create_if_absent(
            BY_KIND["Namespace"],
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}},
        )
    for obj in objects:
        if obj not in jobs:
            _create(api, obj)
    api.list(BY_KIND["Pod"])  # the connection warm
    time.sleep(1.0 - time.time() % 1.0 + 0.01)
    for obj in jobs:
        _create(api, obj)


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
