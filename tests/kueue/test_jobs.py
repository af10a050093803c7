"""Jobs become Workloads as Kueue's jobframework makes them (kubernetes-sigs/kueue
pkg/controller/jobframework, pkg/controller/jobs/{job,raycluster,rayjob}), on the embedded
cluster with the KubeRay emulator: names, PodSets (the RayJob's submitter PodSet since Kueue
v0.10), priority from the WorkloadPriorityClass (a missing class: no Workload, a Warning), the
job held suspended until its Workload is admitted, and KubeRay's suspend state machine. Kueue's
scheduler is not part of this test: the admission is written on the Workload as Kueue's
scheduler writes it."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from pykai.embedded.cluster import EmbeddedCluster
from pykai.model.kueue.jobs import (
    Priority,
    new_workload,
    pod_sets,
    restored,
    started,
    workload_name,
)
from pykai.model.meta import Obj, merge_diff, merge_patch
from tests.cli.conftest import EXAMPLES

SETUP = EXAMPLES / "kueue/ray-priority/kueue-resources.yaml"
PYTORCH = EXAMPLES / "kueue/kuberay-samples/ray-job.pytorch-distributed-training.yaml"
TOY = EXAMPLES / "kueue/kuberay-samples/ray-job.kueue-toy-sample.yaml"
# A suspended RayJob's status has none of its run's (as the real operator clears them:
# tests/data/kuberay/kuberay-samples.ray-job.kueue-toy-sample.yaml)
RUN_FIELDS = ("rayClusterName", "jobId", "dashboardURL", "jobStatus")


def _load(path: Path) -> list[Obj]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


def _rayjob(name: str, priority_class: str = "dev-priority", sample: Path = PYTORCH) -> Obj:
    """The guide's edit of a KubeRay sample: a name and the two Kueue labels."""
    job = copy.deepcopy(_load(sample)[-1])
    labels = {"kueue.x-k8s.io/queue-name": "user-queue"}
    if priority_class:
        labels["kueue.x-k8s.io/priority-class"] = priority_class
    job["metadata"] = {"name": name, "namespace": "default", "labels": labels}
    return job


@pytest.fixture
def cluster() -> Iterator[EmbeddedCluster]:
    cluster = EmbeddedCluster.open(None)
    cluster.apply(_load(SETUP))
    yield cluster
    cluster.close()


def _reasons(cluster: EmbeddedCluster, name: str) -> list[tuple[str, str, str]]:
    return [
        (e["type"], e["reason"], e["message"])
        for e in cluster.list("Event", "default")
        if e["involvedObject"]["name"] == name
    ]


def _admit(cluster: EmbeddedCluster, workload: Obj, admitted: bool = True) -> None:
    """What Kueue's scheduler writes on admission (or on losing it)."""
    stored = cluster.get("Workload", workload["metadata"]["name"], "default")
    assert stored is not None
    status = "True" if admitted else "False"
    stored["status"] = {
        "conditions": [
            {"type": "QuotaReserved", "status": status, "reason": "QuotaReserved"},
            {"type": "Admitted", "status": status, "reason": "Admitted"},
        ],
        **({"admission": {"clusterQueue": "cluster-queue"}} if admitted else {}),
    }
    cluster.update(stored)
    cluster.settle()


def test_workload_name_as_kueue_makes_it() -> None:
    # Kueue's workload_names_test.go, case "short name, no extra (ShortWorkloadNames=false)"
    job = {"kind": "Job", "metadata": {"name": "name", "uid": "uid"}}
    assert workload_name(job) == "job-name-ef3a1"
    long_job = {"kind": "Job", "metadata": {"name": "x" * 253, "uid": "uid"}}
    assert len(workload_name(long_job)) == 253


def test_pod_sets_of_a_rayjob_a_raycluster_and_a_job() -> None:
    pytorch = pod_sets(_rayjob("p"))
    assert [(p["name"], p["count"]) for p in pytorch] == [("head", 1), ("submitter", 1)]
    submitter = pytorch[1]["template"]["spec"]["containers"][0]["resources"]["requests"]
    assert submitter == {"cpu": "500m", "memory": "200Mi"}
    toy = _rayjob("t", sample=TOY)
    toy["spec"]["rayClusterSpec"]["workerGroupSpecs"][0].update(
        groupName="Small-Group", replicas=3, numOfHosts=2, minReplicas=1
    )
    assert [(p["name"], p["count"]) for p in pod_sets(toy)] == [
        ("head", 1),
        ("small-group", 6),  # replicas × numOfHosts, never minReplicas
        ("submitter", 1),
    ]
    toy["spec"]["submissionMode"] = "HTTPMode"
    assert [p["name"] for p in pod_sets(toy)] == ["head", "small-group"]
    job = {"kind": "Job", "spec": {"parallelism": 4, "completions": 3, "template": {}}}
    assert [(p["name"], p["count"]) for p in pod_sets(job)] == [("main", 3)]


def test_start_merges_the_flavors_into_each_pod_set_and_stop_restores_them() -> None:
    # Kueue's RunWithPodSetsInfo / RestorePodSetsInfo (pkg/podset/podset.go Merge, RestorePodSpec)
    job = _rayjob("dev-a", sample=TOY)
    job["metadata"]["uid"] = "u1"
    job["spec"]["suspend"] = True
    head = job["spec"]["rayClusterSpec"]["headGroupSpec"]["template"]["spec"]
    head["nodeSelector"] = {"zone": "a"}
    workload = new_workload(job, Priority(0), {"kind": "RayJob", "name": "dev-a", "uid": "u1"})
    toleration = {"key": "spot", "operator": "Exists", "effect": "NoSchedule"}
    infos = {
        "head": ({"instance": "spot"}, [toleration]),
        "small-group": ({"instance": "spot"}, []),
        "submitter": ({"instance": "spot"}, []),
    }
    running = started(job, infos)
    spec = running["spec"]
    assert spec["suspend"] is False
    head_spec = spec["rayClusterSpec"]["headGroupSpec"]["template"]["spec"]
    assert head_spec["nodeSelector"] == {"zone": "a", "instance": "spot"}
    assert head_spec["tolerations"] == [toleration]
    worker = spec["rayClusterSpec"]["workerGroupSpecs"][0]["template"]["spec"]
    assert worker["nodeSelector"] == {"instance": "spot"} and "tolerations" not in worker
    # the submitter gets KubeRay's default template, with its flavor's labels
    assert spec["submitterPodTemplate"]["spec"]["nodeSelector"] == {"instance": "spot"}
    # what the controller patches turns the stored job into the started one
    assert merge_patch(job, merge_diff(job, running)) == running
    stopped = restored(running, workload)
    assert stopped["spec"]["suspend"] is True
    back = stopped["spec"]["rayClusterSpec"]
    assert back["headGroupSpec"]["template"]["spec"]["nodeSelector"] == {"zone": "a"}
    assert "tolerations" not in back["headGroupSpec"]["template"]["spec"]
    assert "nodeSelector" not in back["workerGroupSpecs"][0]["template"]["spec"]
    assert "nodeSelector" not in stopped["spec"]["submitterPodTemplate"]["spec"]
    assert merge_patch(running, merge_diff(running, stopped)) == stopped


def test_a_rayjob_waits_suspended_with_its_workload(cluster: EmbeddedCluster) -> None:
    cluster.apply([_rayjob("dev-a")])
    job = cluster.get("RayJob", "dev-a", "default")
    assert job is not None and job["spec"]["suspend"] is True  # Kueue's defaulting webhook
    assert job["status"]["jobDeploymentStatus"] == "Suspended"
    assert not set(RUN_FIELDS) & set(job["status"])
    assert cluster.list("RayCluster", "default") == [] and cluster.list("Pod", "default") == []
    (workload,) = cluster.list("Workload", "default")
    assert workload["metadata"]["name"] == workload_name(job)
    assert workload["metadata"]["ownerReferences"][0]["uid"] == job["metadata"]["uid"]
    assert workload["spec"]["queueName"] == "user-queue"
    assert workload["spec"]["priority"] == 100
    assert workload["spec"]["priorityClassRef"] == {
        "group": "kueue.x-k8s.io",
        "kind": "WorkloadPriorityClass",
        "name": "dev-priority",
    }
    message = f"Created Workload: default/{workload['metadata']['name']}"
    assert ("Normal", "CreatedWorkload", message) in _reasons(cluster, "dev-a")


def test_admission_unsuspends_and_losing_it_suspends_as_kuberay_does(
    cluster: EmbeddedCluster,
) -> None:
    cluster.apply([_rayjob("dev-a")])
    (workload,) = cluster.list("Workload", "default")
    _admit(cluster, workload)
    job = cluster.get("RayJob", "dev-a", "default")
    assert job is not None and job["spec"]["suspend"] is False
    assert ("Normal", "Started", "Admitted by clusterQueue cluster-queue") in _reasons(
        cluster, "dev-a"
    )
    (raycluster,) = cluster.list("RayCluster", "default")
    assert job["status"]["rayClusterName"] == raycluster["metadata"]["name"]
    assert job["status"]["jobDeploymentStatus"] in ("Initializing", "Running")
    # the RayJob's own RayCluster is a child: no Workload of its own
    assert [w["metadata"]["name"] for w in cluster.list("Workload", "default")] == [
        workload["metadata"]["name"]
    ]
    assert cluster.list("Pod", "default")  # the emulator made the head pod
    _admit(cluster, workload, admitted=False)
    job = cluster.get("RayJob", "dev-a", "default")
    assert job is not None and job["spec"]["suspend"] is True
    assert job["status"]["jobDeploymentStatus"] == "Suspended"
    assert not set(RUN_FIELDS) & set(job["status"])  # the run's status cleared
    assert cluster.list("RayCluster", "default") == []
    assert [
        p for p in cluster.list("Pod", "default") if not p["metadata"].get("deletionTimestamp")
    ] == []
    assert ("Normal", "Stopped", "Not admitted by cluster queue") in _reasons(cluster, "dev-a")


def test_a_labelled_raycluster_has_its_own_workload_and_no_pods_while_suspended(
    cluster: EmbeddedCluster,
) -> None:
    raycluster = _load(EXAMPLES / "kueue/kueue-docs/ray-cluster-sample.yaml")[-1]
    cluster.apply([raycluster])
    name = raycluster["metadata"]["name"]
    (workload,) = cluster.list("Workload", "default")
    assert [(p["name"], p["count"]) for p in workload["spec"]["podSets"]] == [
        ("head", 1),
        ("small-group", 1),
    ]
    assert workload["spec"]["priority"] == 0 and "priorityClassRef" not in workload["spec"]
    stored = cluster.get("RayCluster", name, "default")
    assert stored is not None and stored["status"]["state"] == "suspended"
    assert cluster.list("Pod", "default") == []
    _admit(cluster, workload)
    assert len(cluster.list("Pod", "default")) == 2  # head + one worker
