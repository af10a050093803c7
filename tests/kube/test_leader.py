"""Leader election on a real Lease: one holder at a time, takeover after expiry, renewals,
and two real replicas failing over."""

from __future__ import annotations

import signal
import time
from pathlib import Path

from pykai.kube.api import KINDS, connect
from pykai.kube.leader import LeaderElector
from pykai.kube.localcluster import LocalCluster
from pykai.kube.nodes import create_ready_nodes
from pykai.model import builders
from tests.kube.conftest import start_pykai, wait_for


def test_one_leader_then_failover_after_expiry(local_cluster: LocalCluster) -> None:
    api = connect(local_cluster.kubeconfig)
    now = time.time()
    a = LeaderElector(api, "replica-a", name="test-lease", duration=10)
    b = LeaderElector(api, "replica-b", name="test-lease", duration=10)
    assert a.step(now) and not b.step(now + 1)
    assert a.step(now + 5) and not b.step(now + 6)  # a renews; b still waits
    # a stops renewing (killed): after the lease duration b takes over, and a does not get it back
    assert b.step(now + 16)
    assert not a.step(now + 17)
    lease = api.get(KINDS["Lease"], "test-lease", "default")
    assert lease is not None and lease["spec"]["holderIdentity"] == "replica-b"
    assert lease["spec"]["leaseTransitions"] == 1


def test_two_replicas_fail_over_in_seconds(local_cluster: LocalCluster, tmp_path: Path) -> None:
    """Two `pykai run --leader-elect` replicas: the leader binds; killed with SIGKILL, the
    other takes the lease within its duration (3 s here) and binds the next pod."""
    api = connect(local_cluster.kubeconfig)
    node = builders.node("leader-node", gpus=2, labels={"pool": "leader"})
    create_ready_nodes(connect(local_cluster.kubeconfig), [node], 0.0)
    api.create(KINDS["Queue"], builders.queue("leader-q"))

    def lease_holder() -> str:
        lease = api.get(KINDS["Lease"], "failover", "default") or {}
        return str((lease.get("spec") or {}).get("holderIdentity", ""))

    def pod_bound(name: str) -> bool:
        pod = builders.pod(name, gpus=1, labels={"kai.scheduler/queue": "leader-q"})
        pod["spec"]["nodeSelector"] = {"pool": "leader"}
        if api.get(KINDS["Pod"], name, "default") is None:
            api.create(KINDS["Pod"], pod)
        return wait_for(
            lambda: bool((api.get(KINDS["Pod"], name, "default") or {})["spec"].get("nodeName")),
            timeout=20,
        )

    flags = ("--leader-elect", "--lease-name=failover", "--lease-duration=3")
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
