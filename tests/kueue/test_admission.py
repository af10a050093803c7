"""Kueue's admission on the embedded cluster, with batch Jobs: expected outcomes from Kueue's
rules (kubernetes-sigs/kueue ``pkg/scheduler/scheduler.go``, ``flavorassigner.go``,
``pkg/cache/scheduler/resource_node.go``, ``pkg/scheduler/preemption/``; the worked cohort
examples are from ``site/content/en/docs/concepts/cluster_queue.md``)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from pykai.embedded.cluster import EmbeddedCluster
from pykai.model.kueue.api import ADMITTED_QUEUE
from pykai.model.meta import Obj

API = "kueue.x-k8s.io/v1beta2"


def _node(name: str, cpu: str) -> Obj:
    allocatable = {"cpu": cpu, "memory": "64Gi", "pods": "110"}
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name},
            "status": {"allocatable": allocatable, "capacity": allocatable}}  # fmt: skip


def _cq(name: str, cpu: str, cohort: str = "", **spec: Any) -> Obj:
    resource: Obj = {"name": "cpu", "nominalQuota": cpu}
    for limit in ("borrowingLimit", "lendingLimit"):
        if limit in spec:
            resource[limit] = spec.pop(limit)
    body: Obj = {
        "namespaceSelector": {},  # every namespace (null, Kueue's default, selects none)
        "resourceGroups": [
            {"coveredResources": ["cpu"], "flavors": [{"name": "default", "resources": [resource]}]}
        ],
        **spec,
    }
    if cohort:
        body["cohortName"] = cohort
    return {"apiVersion": API, "kind": "ClusterQueue", "metadata": {"name": name}, "spec": body}


def _lq(name: str, cq: str) -> Obj:
    meta = {"name": name, "namespace": "default"}
    return {"apiVersion": API, "kind": "LocalQueue", "metadata": meta, "spec": {"clusterQueue": cq}}


def _job(name: str, queue: str, pods: int = 1, cpu: str = "1", priority: str = "") -> Obj:
    labels = {"kueue.x-k8s.io/queue-name": queue}
    if priority:
        labels["kueue.x-k8s.io/priority-class"] = priority
    container = {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": cpu}}}
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": "default", "labels": labels},
        "spec": {
            "parallelism": pods,
            "completions": pods,
            "template": {
                "spec": {
                    "schedulerName": "kai-scheduler",
                    "restartPolicy": "Never",
                    "containers": [container],
                }
            },
        },
    }


def _wpc(name: str, value: int) -> Obj:
    return {"apiVersion": API, "kind": "WorkloadPriorityClass", "metadata": {"name": name},
            "value": value}  # fmt: skip


@pytest.fixture
def cluster() -> Iterator[EmbeddedCluster]:
    cluster = EmbeddedCluster.open(None)
    flavor = {"apiVersion": API, "kind": "ResourceFlavor", "metadata": {"name": "default"}}
    cluster.apply([_node("n1", "16"), flavor, _wpc("low", 100), _wpc("high", 1000)])
    yield cluster
    cluster.close()


def _workload(cluster: EmbeddedCluster, job: str) -> Obj:
    (found,) = [
        w
        for w in cluster.list("Workload", "default")
        if w["metadata"]["ownerReferences"][0]["name"] == job
    ]
    return found


def _condition(cluster: EmbeddedCluster, job: str, kind: str) -> tuple[str, str, str]:
    for found in _workload(cluster, job).get("status", {}).get("conditions", []):
        if found["type"] == kind:
            return found["status"], found["reason"], found["message"]
    return ("", "", "")


def _running(cluster: EmbeddedCluster, job: str) -> int:
    return sum(
        1
        for p in cluster.list("Pod", "default")
        if p["metadata"]["ownerReferences"][0]["name"] == job
        and p["spec"].get("nodeName")
        and not p["metadata"].get("deletionTimestamp")
    )


def _admitted(cluster: EmbeddedCluster, job: str) -> bool:
    return _condition(cluster, job, "Admitted")[0] == "True"


def test_quota_is_reserved_for_whole_workloads_and_the_rest_waits(
    cluster: EmbeddedCluster,
) -> None:
    cluster.apply([_cq("cq", "3"), _lq("lq", "cq")])
    cluster.apply([_job("a", "lq", pods=2)])
    cluster.advance(1)
    cluster.apply([_job("b", "lq", pods=2)])
    assert _admitted(cluster, "a") and _running(cluster, "a") == 2
    assert _condition(cluster, "a", "QuotaReserved") == (
        "True", "QuotaReserved", "Quota reserved in ClusterQueue cq"
    )  # fmt: skip
    admission = _workload(cluster, "a")["status"]["admission"]
    assert admission["podSetAssignments"] == [
        {"name": "main", "flavors": {"cpu": "default"}, "resourceUsage": {"cpu": "2"}, "count": 2}
    ]
    # b needs 2 of the 1 left: it waits whole (no partial admission), its job suspended
    assert _condition(cluster, "b", "QuotaReserved") == (
        "False",
        "WaitingForQuota",
        "couldn't assign flavors to pod set main: insufficient unused quota for cpu in flavor "
        "default, 1 more needed",
    )
    assert _running(cluster, "b") == 0
    job_b = cluster.get("Job", "b", "default")
    assert job_b is not None and job_b["spec"]["suspend"] is True
    status = cluster.get("ClusterQueue", "cq")
    assert status is not None
    assert {k: status["status"][k] for k in ("pendingWorkloads", "reservingWorkloads",
                                             "admittedWorkloads")} == {
        "pendingWorkloads": 1, "reservingWorkloads": 1, "admittedWorkloads": 1}  # fmt: skip
    assert status["status"]["flavorsUsage"] == [
        {"name": "default", "resources": [{"name": "cpu", "total": "2", "borrowed": "0"}]}
    ]
    # the admitted pods are placed by the engine, outside KAI's queues
    groups = cluster.list("PodGroup", "default")
    assert groups and {g["spec"]["queue"] for g in groups} == {ADMITTED_QUEUE}


def test_no_preemption_with_the_default_policy(cluster: EmbeddedCluster) -> None:
    cluster.apply([_cq("cq", "2"), _lq("lq", "cq")])
    cluster.apply([_job("dev", "lq", pods=2, priority="low")])
    cluster.apply([_job("prod", "lq", pods=2, priority="high")])
    assert _admitted(cluster, "dev") and not _admitted(cluster, "prod")
    assert _condition(cluster, "prod", "QuotaReserved")[1] == "WaitingForQuota"


def test_the_gang_must_fit_on_the_nodes_before_quota_is_reserved(
    cluster: EmbeddedCluster,
) -> None:
    # beyond Kueue: quota for 20 CPUs, but the only node has 16
    cluster.apply([_cq("cq", "20"), _lq("lq", "cq"), _job("wide", "lq", pods=4, cpu="5")])
    status, reason, message = _condition(cluster, "wide", "QuotaReserved")
    assert (status, reason) == ("False", "WaitingForNodes")
    assert "the gang does not fit on the current nodes" in message
    assert _running(cluster, "wide") == 0
    cluster.apply([_node("n2", "16")])
    assert _admitted(cluster, "wide") and _running(cluster, "wide") == 4


def test_a_local_queue_before_its_cluster_queue_is_inactive_until_it_exists(
    cluster: EmbeddedCluster,
) -> None:
    # Kueue stores a LocalQueue whatever its ClusterQueue (v0.17 has no LocalQueue webhook); its
    # LocalQueue controller reports it inactive, reason ClusterQueueDoesNotExist
    # (pkg/controller/core/localqueue_controller.go), and Ready once the ClusterQueue exists.
    cluster.apply([_lq("early", "later")])

    def active() -> tuple[str, str]:
        local_queue = cluster.get("LocalQueue", "early", "default")
        assert local_queue is not None
        (found,) = [c for c in local_queue["status"]["conditions"] if c["type"] == "Active"]
        return found["status"], found["reason"]

    assert active() == ("False", "ClusterQueueDoesNotExist")
    cluster.apply([_cq("later", "2")])
    assert active() == ("True", "Ready")
