"""Leader election on a real Lease: one holder at a time, takeover after expiry, renewals."""

from __future__ import annotations

import time

from pykai.kube.api import KINDS, KubeApi
from pykai.kube.leader import LeaderElector
from pykai.kube.localcluster import LocalCluster


def test_one_leader_then_failover_after_expiry(local_cluster: LocalCluster) -> None:
    api = KubeApi.from_kubeconfig(local_cluster.kubeconfig)
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
