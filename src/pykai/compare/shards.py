"""KAI's scheduling shards side by side: one scenario run on a cluster split into partitions
of the node-pool label, under one scheduler per partition on each side, recorded and compared
with the harness's own pieces (``run``'s steps, ``observe``, ``record``, ``diff``).

- "kai": the real KAI's stack (``peer_kai.start``: its kai-scheduler is the default shard)
  and one more kai-scheduler per non-empty partition value (``peer_kai.start_shard``);
- "pykai": one ``pykai run`` of the components that serve every shard (binder, pod-grouper,
  queue and PodGroup controllers) and one ``pykai run --components=scheduler
  --partition-label-value=VALUE`` per partition, as docs/shards.md deploys them.

Contract of ``run_shards(plan, side, directory, partitions)`` (the partition values, ``""``
among them: the default shard, which KAI's stack always runs): as ``run.run_side`` (a fresh
cluster on KAI's CRDs; each ``apply``/``delete`` step with every shard's scheduler stopped and
started again after it, the shared components kept; settle, record; everything torn down,
always; the side's own failure is the record's ``failure``, never raised), with, per settled
step, the ``nodePool`` of each PodGroup's scheduling conditions (``ShardRun.pools``: the
shard that found it unschedulable, KAI's ``default`` for the default shard), which
``record.GroupStatus`` leaves out. ``compare_shards`` runs both sides (one after the other:
each side's cluster holds six schedulers' worth of processes) and compares them with
``diff.differences`` plus one ``podgroup KEY nodePool`` difference per PodGroup and step whose
pools differ; its ``Outcome`` is ``side_by_side``'s."""

from __future__ import annotations

import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from pykai.compare import run
from pykai.compare.diff import Difference, differences
from pykai.compare.expressible import Plan, plan
from pykai.compare.record import Record, StepRecord, node_class, pod_classes, pod_key
from pykai.compare.scenario import Scenario
from pykai.compare.side_by_side import AGREE, DIFFER, FAILED, NOT_EXPRESSIBLE, Outcome
from pykai.kube import peer_kai
from pykai.kube.api import KubeApi, connect
from pykai.kube.localcluster import LocalCluster, kai_crds
from pykai.model.kinds import BY_KIND

SHARED = "--components=binder,podgrouper,queuecontroller,podgroupcontroller"
Pools = dict[str, tuple[str, ...]]  # PodGroup key -> its scheduling conditions' nodePool values

QUIET = 6.0  # seconds without a change: several schedulers, none of whose cycles is counted


@dataclass(frozen=True)
class ShardRun:
    """One side's run: its ``record`` and, per recorded step (in order), ``pools``."""

    record: Record
    pools: tuple[Pools, ...] = ()


class _Shards(run._Scheduler):
    """Every shard's scheduler of one side: started, stopped (between steps) and started again;
    the components that serve every shard start with the first start and are kept."""

    def __init__(
        self, plan: Plan, side: str, cluster: LocalCluster, timeout: float, partitions: list[str]
    ) -> None:
        super().__init__(plan, side, cluster, timeout, None)
        self.started = False
        self.partitions = partitions
        self.shared: subprocess.Popen[bytes] | None = None
        self.shards: dict[str, subprocess.Popen[bytes]] = {}

    def start(self) -> None:
        if self.side == "kai":
            self._start_kai()
        else:
            if self.shared is None:
                self.shared = self._pykai("pykai-shared", SHARED)
            for value in self.partitions:
                self.shards[value] = self._pykai(
                    f"pykai-shard-{value or 'default'}",
                    "--components=scheduler",
                    f"--partition-label-value={value}",
                )
        self.started = True

    def _start_kai(self) -> None:
        placement = self.plan.placement
        gpu, cpu = placement.get("gpu", "binpack"), placement.get("cpu", "binpack")
        flags, timeout = self.plan.kai_flags, self.timeout
        others = [value for value in self.partitions if value]
        if not self.started:
            peer_kai.start(self.cluster, gpu=gpu, cpu=cpu, flags=flags, timeout=timeout)
            for value in others:
                peer_kai.start_shard(
                    self.cluster, value, gpu=gpu, cpu=cpu, flags=flags, timeout=timeout
                )
            return
        peer_kai.restart_schedulers(self.cluster, self.partitions, timeout)

    def _pykai(self, name: str, *args: str) -> subprocess.Popen[bytes]:
        """``pykai run ARGS`` as ``run`` starts it, its log ``NAME.log``; once ready."""
        log_path = self.cluster.directory / f"{name}.log"
        with open(log_path, "ab") as log:
            begin = log.tell()
            process = subprocess.Popen(
                [
                    sys.executable,
                    *("-m", "pykai", "run", f"--kubeconfig={self.cluster.kubeconfig}"),
                    *("--period=0.3", "--log-level=debug", *args),
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

        def ready() -> bool:
            with open(log_path, "rb") as log:
                log.seek(begin)
                return b"ready:" in log.read() or process.poll() is not None

        run._wait(ready, self.timeout, f"{name} did not get ready within {self.timeout:g}s")
        if process.poll() is not None:
            raise run.SideFailed(f"{name} exited {process.returncode}")
        return process

    def alive(self) -> bool:
        if self.side == "kai":
            return self.cluster.running()
        processes = [self.shared, *self.shards.values()]
        return all(p is not None and p.poll() is None for p in processes)

    def stop(self) -> None:
        if self.side == "kai":
            for value in self.partitions:
                peer_kai.stop_scheduler(self.cluster, shard=value)
            return
        for value in list(self.shards):
            run.terminate(self.shards.pop(value))

    def stop_all(self) -> None:
        """The shards' schedulers and then the shared components (KAI's: at ``down``)."""
        self.stop()
        shared, self.shared = self.shared, None
        if shared is not None:
            run.terminate(shared)


def pools(api: KubeApi) -> Pools:
    """Each PodGroup's scheduling conditions' ``nodePool`` values, sorted and unique."""
    found: Pools = {}
    for group in api.list(BY_KIND["PodGroup"])[0]:
        conditions = (group.get("status") or {}).get("schedulingConditions") or []
        found[pod_key(group)] = tuple(sorted({str(c.get("nodePool", "")) for c in conditions}))
    return found


def run_shards(
    planned: Plan,
    side: str,
    directory: Path,
    partitions: list[str],
    *,
    quiet: float = QUIET,
    deadline: float = run.DEADLINE,
    start_timeout: float = 60.0,
) -> ShardRun:
    """The plan under ``side`` with one scheduler per partition (see the module's contract)."""
    if "" not in partitions:
        raise ValueError("the partitions must hold the default shard, \"\" (KAI's stack's own)")
    begun = time.monotonic()
    objects = [o for _, step in planned.steps for o in step.objects]
    pods = [o for o in objects if o["kind"] == "Pod"]
    nodes = {o["metadata"]["name"]: node_class(o) for o in objects if o["kind"] == "Node"}
    groups = {
        pod_key(p): f"{run._namespace(p)}/{p['metadata']['annotations']['pod-group-name']}"
        for p in pods
        if (p["metadata"].get("annotations") or {}).get("pod-group-name")
    }
    cluster = LocalCluster(directory, crds=kai_crds())
    steps: list[StepRecord] = []
    seen: list[Pools] = []
    failure, tail = "", ""
    try:
        cluster.up(timeout=start_timeout * 3)
        api = connect(cluster.kubeconfig)
        schedulers = _Shards(planned, side, cluster, start_timeout, partitions)
        tracker = run._Tracker()
        try:
            for number, step in planned.steps:
                steps.append(
                    run._step(
                        api, number, step, schedulers, tracker, groups, lambda: (quiet, 0, deadline)
                    )
                )
                seen.append(pools(api))
        finally:
            schedulers.stop_all()
    except Exception as exc:  # any failure of the side is its row, never a crash
        failure = f"{type(exc).__name__}: {exc}"
        tail = _log_tail(cluster, side)
    finally:
        cluster.down()
    record = Record(
        side, tuple(steps), nodes, pod_classes(pods), failure, tail, time.monotonic() - begun
    )
    return ShardRun(record, tuple(seen))


def _log_tail(cluster: LocalCluster, side: str) -> str:
    """The end of the side's logs: the schedulers' and the shared components'."""
    prefix = "kai-" if side == "kai" else "pykai-"
    logs = sorted(cluster.directory.glob(f"{prefix}*.log"))
    return "\n".join(
        f"== {log.name}\n{log.read_text(errors='replace')[-run.LOG_TAIL :]}" for log in logs
    )


def pool_differences(peer: ShardRun, pykai: ShardRun) -> list[Difference]:
    """One difference per step and PodGroup whose conditions' pools differ."""
    found = []
    for step, mine, theirs in zip(peer.record.steps, peer.pools, pykai.pools, strict=False):
        for group in sorted(set(mine) | set(theirs)):
            left, right = mine.get(group, ()), theirs.get(group, ())
            if left != right:
                found.append(Difference(step.number, f"podgroup {group} nodePool", left, right))
    return found


def compare_shards(
    scenario: Scenario, directory: Path, partitions: list[str]
) -> tuple[Outcome, tuple[ShardRun, ShardRun]]:
    """The scenario's outcome with one scheduler per partition on each side (see the module's
    contract), and both sides' runs."""
    planned = plan(scenario)
    if planned.problems or not planned.steps:
        problems = planned.problems or ("no step to run",)
        empty = ShardRun(Record("kai", (), {}, {}))
        return Outcome(scenario.name, NOT_EXPRESSIBLE, problems, planned.skipped), (empty, empty)
    theirs = run_shards(planned, "kai", directory / "kai", partitions)
    ours = run_shards(planned, "pykai", directory / "pykai", partitions)
    records = (theirs.record, ours.record)
    found = tuple(differences(*records) + pool_differences(theirs, ours))
    failed = [f"{r.side}: {r.failure}" for r in records if r.failure]
    if failed:
        return Outcome(scenario.name, FAILED, tuple(failed), planned.skipped, found, records), (
            theirs,
            ours,
        )
    verdict = DIFFER if found else AGREE
    return Outcome(scenario.name, verdict, (), planned.skipped, found, records), (theirs, ours)
