"""Leader election on a real Lease: one holder at a time, takeover after expiry, renewals from
a thread of their own (a cycle longer than the lease keeps it), a leader that cannot renew
stops acting before the lease expires, and two real replicas failing over."""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from pykai.engine.decisions import Bind, CycleResult
from pykai.engine.scheduler import Scheduler
from pykai.engine.state import ClusterState
from pykai.kube.api import KubeApi, connect
from pykai.kube.leader import LeaderElector, NotLeading
from pykai.kube.localcluster import LocalCluster
from pykai.kube.nodes import create_ready_nodes
from pykai.kube.runner import KubeRunner
from pykai.model import builders
from pykai.model.kinds import BY_KIND
from pykai.model.meta import format_time, parse_time
from tests.kube.conftest import pykai_cli, start_pykai, wait_for

SHORT = {"duration": 3.0, "renew_deadline": 2.0, "retry_period": 0.5}  # seconds


def test_one_leader_then_failover_after_expiry(local_cluster: LocalCluster) -> None:
    api = connect(local_cluster.kubeconfig)
    now = time.time()
    a = LeaderElector(api, "replica-a", name="test-lease", duration=10, renew_deadline=7)
    b = LeaderElector(api, "replica-b", name="test-lease", duration=10, renew_deadline=7)
    assert a.step(now) and not b.step(now + 1)
    assert a.step(now + 5) and not b.step(now + 6)  # a renews; b still waits
    # a stops renewing (killed): after the lease duration b takes over, and a does not get it back
    assert b.step(now + 16)
    assert not a.step(now + 17)
    lease = api.get(BY_KIND["Lease"], "test-lease", "default")
    assert lease is not None and lease["spec"]["holderIdentity"] == "replica-b"
    assert lease["spec"]["leaseTransitions"] == 1


def test_two_replicas_fail_over_in_seconds(local_cluster: LocalCluster, tmp_path: Path) -> None:
    """Two `pykai run --leader-elect` replicas: the leader binds; killed with SIGKILL, the
    other takes the lease within its duration (3 s here) and binds the next pod."""
    api = connect(local_cluster.kubeconfig)
    node = builders.node("leader-node", gpus=2, labels={"pool": "leader"})
    create_ready_nodes(connect(local_cluster.kubeconfig), [node], 0.0)
    api.create(BY_KIND["Queue"], builders.queue("leader-q"))

    def lease_holder() -> str:
        lease = api.get(BY_KIND["Lease"], "failover", "default") or {}
        return str((lease.get("spec") or {}).get("holderIdentity", ""))

    def pod_bound(name: str) -> bool:
        pod = builders.pod(name, gpus=1, labels={"kai.scheduler/queue": "leader-q"})
        pod["spec"]["nodeSelector"] = {"pool": "leader"}
        if api.get(BY_KIND["Pod"], name, "default") is None:
            api.create(BY_KIND["Pod"], pod)
        return wait_for(
            lambda: bool((api.get(BY_KIND["Pod"], name, "default") or {})["spec"].get("nodeName")),
            timeout=20,
        )

    flags = (
        "--leader-elect",
        "--lease-name=failover",
        "--lease-duration=3",
        "--renew-deadline=2",
        "--retry-period=0.5",
    )
    replicas = {
        name: start_pykai(local_cluster, *flags, f"--identity={name}") for name in ("a", "b")
    }
    try:
        assert wait_for(lease_holder)
        assert pod_bound("before-failover")
        leader = lease_holder()
        replicas[leader].send_signal(signal.SIGKILL)
        replicas[leader].wait(timeout=10)
        killed_at = time.monotonic()
        assert pod_bound("after-failover")
        assert time.monotonic() - killed_at < 15
        assert lease_holder() == ({"a", "b"} - {leader}).pop()
    finally:
        for process in replicas.values():
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
                assert process.wait(timeout=30) == 0


def test_a_leader_stops_before_its_lease_expires(local_cluster: LocalCluster) -> None:
    """Not renewed for the renew deadline, the leader no longer leads, while the lease still
    keeps every other replica out (it expires only after its duration)."""
    api = connect(local_cluster.kubeconfig)
    now = time.time()
    a = LeaderElector(api, "replica-a", name="deadline-lease", **SHORT)
    b = LeaderElector(api, "replica-b", name="deadline-lease", **SHORT)
    assert a.step(now)
    assert a.leading(now + 1.9) and not a.leading(now + 2.0)  # a's renewals stopped at `now`
    assert not b.step(now + 2.5)  # a has stopped acting; b must still wait
    assert b.step(now + 3.5)


def test_renew_deadline_must_be_shorter_than_the_lease(local_cluster: LocalCluster) -> None:
    result = pykai_cli(
        "run",
        f"--kubeconfig={local_cluster.kubeconfig}",
        "--leader-elect",
        "--lease-duration=10",
        "--renew-deadline=10",
    )
    assert result.returncode == 1
    assert "must be positive and shorter than the lease duration" in result.stderr


class BlockingScheduler(Scheduler):
    """The engine, with a first cycle that blocks until ``release`` is set."""

    def __init__(self) -> None:
        super().__init__()
        self.entered, self.release = threading.Event(), threading.Event()

    def run_cycle(
        self, state: ClusterState, now: float, on_bind: Callable[[Bind], None] | None = None
    ) -> CycleResult:
        self.entered.set()
        self.release.wait(300)
        return super().run_cycle(state, now, on_bind)


@contextmanager
def leader_running(api: KubeApi, elector: LeaderElector, runner: KubeRunner) -> Iterator[None]:
    """``runner`` (scheduler only, 0.1 s period) with ``elector`` in a thread."""
    stop = threading.Event()
    thread = threading.Thread(target=runner.run, args=(stop, 0.1, elector), daemon=True)
    thread.start()
    try:
        yield
    finally:
        if isinstance(runner.scheduler, BlockingScheduler):
            runner.scheduler.release.set()
        stop.set()
        thread.join(60)
        assert not thread.is_alive()


def lease_spec(api: KubeApi, name: str) -> dict[str, object]:
    lease = api.get(BY_KIND["Lease"], name, "default") or {}
    return dict(lease.get("spec") or {})


def test_a_cycle_longer_than_the_lease_keeps_it(local_cluster: LocalCluster) -> None:
    """The first cycle blocks for over twice the lease duration: the lease is renewed all
    along (its renewTime advances), so a rival never takes it over."""
    api, observer = connect(local_cluster.kubeconfig), connect(local_cluster.kubeconfig)
    elector = LeaderElector(api, "long-cycle", name="long-cycle-lease", **SHORT)
    runner = KubeRunner(api, components=frozenset({"scheduler"}))
    runner.scheduler = blocking = BlockingScheduler()
    rival = LeaderElector(observer, "rival", name="long-cycle-lease", **SHORT)
    with leader_running(api, elector, runner):
        assert blocking.entered.wait(120)
        blocked_at = time.time()

        def renewed_long_after_the_cycle_began() -> bool:
            renew = str(lease_spec(observer, "long-cycle-lease").get("renewTime") or "")
            return bool(renew) and parse_time(renew) > blocked_at + 2 * SHORT["duration"]

        assert wait_for(renewed_long_after_the_cycle_began, timeout=60)
        assert not blocking.release.is_set()  # still in the same cycle
        assert lease_spec(observer, "long-cycle-lease")["holderIdentity"] == "long-cycle"
        assert elector.leading() and not rival.step()
        blocking.release.set()
        assert wait_for(lambda: runner.cycles >= 2, timeout=60)


def test_a_leader_that_cannot_renew_stops_acting(
    local_cluster: LocalCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another replica takes the lease over (the leader's next renewal finds it held): the
    leader stops deciding (its loop turns without cycles) and its writes are refused."""
    api, other = connect(local_cluster.kubeconfig), connect(local_cluster.kubeconfig)
    elector = LeaderElector(api, "deposed", name="deposed-lease", **SHORT)
    runner = KubeRunner(api, components=frozenset({"scheduler"}))
    turns: list[bool] = []
    loop = runner.metrics.loop

    def counted(ready: bool, leading: bool) -> None:
        turns.append(leading)
        loop(ready, leading)

    monkeypatch.setattr(runner.metrics, "loop", counted)
    with leader_running(api, elector, runner):
        assert wait_for(lambda: runner.cycles >= 1, timeout=120)
        lease = other.get(BY_KIND["Lease"], "deposed-lease", "default")
        assert lease is not None
        taken = {"holderIdentity": "usurper", "renewTime": format_time(time.time())}
        other.patch(
            BY_KIND["Lease"],
            "deposed-lease",
            {"spec": {**taken, "leaseDurationSeconds": 600}},
            "default",
        )
        assert wait_for(lambda: not elector.leading(), timeout=30)
        assert wait_for(lambda: turns and not turns[-1], timeout=30)
        cycles, seen = runner.cycles, len(turns)
        assert wait_for(lambda: len(turns) >= seen + 10, timeout=60)
        assert runner.cycles == cycles and not any(turns[seen:])
        with pytest.raises(NotLeading):
            api.create(BY_KIND["Queue"], builders.queue("written-by-the-deposed"))
        assert other.get(BY_KIND["Queue"], "written-by-the-deposed") is None
        assert lease_spec(other, "deposed-lease")["holderIdentity"] == "usurper"
