"""The two Ray + Kueue guides replayed step by step on the embedded cluster, with their manifests
(examples/kueue/, unchanged) and the KubeRay sample they ``curl``: "Priority Scheduling with
RayJob and Kueue" and "Gang Scheduling with RayJob and Kueue" (ray-project/ray
doc/source/cluster/kubernetes/examples/rayjob-kueue-{priority,gang}-scheduling.md; the steps
and expected outputs are in docs/kueue.md). Each step asserts what the guide says a user sees.

Deviations, as docs/kueue.md says: the priority guide's quota (cpu 2, memory 8G) predates the
RayJob's submitter PodSet (Kueue v0.10): with it no RayJob is ever admitted (step 3 shows it),
so the replay raises the ClusterQueue to cpu 3, memory 9G, as a user of current Kueue must.
``kubectl create`` with generateName is replayed with the names the guides print. The emulator's
RayJobs never finish, so the guides' SUCCEEDED/Complete steps are not replayed. GKE's nodes are
modelled: a CPU node (e2-standard-4) and GPU nodes (one L4, tainted nvidia.com/gpu)."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from pykai.embedded.cluster import EmbeddedCluster
from pykai.model.meta import Obj
from tests.cli.conftest import EXAMPLES

KUEUE = EXAMPLES / "kueue"
PYTORCH = KUEUE / "kuberay-samples/ray-job.pytorch-distributed-training.yaml"


def _load(path: Path) -> list[Obj]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


def _node(name: str, gpus: int = 0) -> Obj:
    """A GKE node: e2-standard-4 (4 CPUs, 16Gi), or g2-standard-4 with one L4 GPU, tainted as
    GKE taints GPU nodes."""
    allocatable = {"cpu": "4", "memory": "16Gi", "pods": "110"}
    spec: Obj = {}
    if gpus:
        allocatable["nvidia.com/gpu"] = str(gpus)
        spec["taints"] = [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "spec": spec,
        "status": {"allocatable": allocatable, "capacity": allocatable},
    }


def _rayjob(fragment: Path, suffix: str) -> Obj:
    """The guide's edit of the KubeRay sample: its metadata replaced by the fragment's, the
    generated name as the guide prints it."""
    job = copy.deepcopy(_load(PYTORCH)[-1])
    metadata = copy.deepcopy(_load(fragment)[0]["metadata"])
    metadata["name"] = metadata.pop("generateName") + suffix
    metadata["namespace"] = "default"
    job["metadata"] = metadata
    return job


def _running(cluster: EmbeddedCluster) -> list[str]:
    """Names of the pods on a node and not terminating (what ``kubectl get pods`` lists as
    Running)."""
    return sorted(
        p["metadata"]["name"]
        for p in cluster.list("Pod", "default")
        if p["spec"].get("nodeName") and not p["metadata"].get("deletionTimestamp")
    )


def _workload(cluster: EmbeddedCluster, job: str) -> Obj:
    (found,) = [
        w
        for w in cluster.list("Workload", "default")
        if w["metadata"]["ownerReferences"][0]["name"] == job
    ]
    return found


def _condition(obj: Obj, kind: str) -> tuple[str, str]:
    for found in (obj.get("status") or {}).get("conditions") or []:
        if found["type"] == kind:
            return found["status"], found["reason"]
    return ("", "")


@pytest.fixture
def cluster() -> Iterator[EmbeddedCluster]:
    cluster = EmbeddedCluster.open(None)
    yield cluster
    cluster.close()


def test_priority_scheduling_with_rayjob_and_kueue(cluster: EmbeddedCluster) -> None:
    # Step 0: a GKE cluster with GPUs (one CPU node, one GPU node); steps 1-2 install KubeRay
    # and Kueue (built into pykai).
    cluster.apply([_node("cpu-node"), _node("gpu-node", gpus=1)])
    # Step 3: kubectl apply -f kueue-resources.yaml
    cluster.apply(_load(KUEUE / "ray-priority/kueue-resources.yaml"))
    # Step 4: create the dev RayJob. With the guide's quota it is never admitted (the
    # submitter PodSet since Kueue v0.10 needs 500m more CPU): current Kueue's behaviour.
    priority = KUEUE / "ray-priority"
    first = _rayjob(priority / "rayjob-metadata-dev.fragment.yaml", "r6d4p")
    cluster.apply([first])
    workload = _workload(cluster, first["metadata"]["name"])
    assert _condition(workload, "QuotaReserved") == ("False", "ExceedsMaxQuota")
    assert "pod set submitter" in workload["status"]["conditions"][0]["message"]
    # so the replay raises the quota to what the RayJob needs now (docs/kueue.md)
    queue = next(d for d in _load(priority / "kueue-resources.yaml") if d["kind"] == "ClusterQueue")
    for resource in queue["spec"]["resourceGroups"][0]["flavors"][0]["resources"]:
        resource["nominalQuota"] = {"cpu": 3, "memory": "9G"}.get(
            resource["name"], resource["nominalQuota"]
        )
    cluster.apply([queue])
    # "kubectl get pod" shows 2 Running pods: the submitter's and the Ray head
    pods = _running(cluster)
    assert len(pods) == 2 and all(p.startswith(first["metadata"]["name"]) for p in pods), pods
    assert sum("-head-" in p for p in pods) == 1  # the head; the other, the submitter's
    rayjob = cluster.get("RayJob", first["metadata"]["name"], "default")
    assert rayjob is not None and rayjob["status"]["jobDeploymentStatus"] == "Running"
    cluster.delete("RayJob", first["metadata"]["name"], "default")
    # Step 5: three dev RayJobs; "Kueue automatically suspends new RayJob resources until GPU
    # quotas become available": one admitted, two pending
    devs = [
        _rayjob(priority / "rayjob-metadata-dev.fragment.yaml", s)
        for s in ("aaaaa", "bbbbb", "ccccc")
    ]
    for dev in devs:
        cluster.apply([dev])
        cluster.advance(1)
    status = (cluster.get("ClusterQueue", "cluster-queue") or {})["status"]
    assert (
        status["pendingWorkloads"],
        status["admittedWorkloads"],
        status["reservingWorkloads"],
    ) == (2, 1, 1)
    usage = status["flavorsUsage"][0]["resources"]
    # 8G + 200Mi, written binary as Kueue's ResourceFormatter writes memory
    assert {r["name"]: (r["total"], r["borrowed"]) for r in usage} == {
        "cpu": ("2500m", "0"),
        "memory": ("8017300Ki", "0"),
        "nvidia.com/gpu": ("1", "0"),
    }
    suspended = [
        d["metadata"]["name"]
        for d in devs
        if (cluster.get("RayJob", d["metadata"]["name"], "default") or {})["spec"]["suspend"]
    ]
    assert suspended == [d["metadata"]["name"] for d in devs[1:]]
    # Step 6: a prod RayJob; "kubectl get pods" shows only its submitter and head: the dev
    # RayJob was preempted, suspended, its pods deleted
    prod = _rayjob(priority / "rayjob-metadata-prod.fragment.yaml", "ddddd")
    cluster.apply([prod])
    cluster.advance(60)  # the preempted pods' grace period
    pods = _running(cluster)
    assert len(pods) == 2 and all(p.startswith(prod["metadata"]["name"]) for p in pods), pods
    preempted = _workload(cluster, devs[0]["metadata"]["name"])
    assert _condition(preempted, "Preempted") == ("True", "InClusterQueue")
    dev = cluster.get("RayJob", devs[0]["metadata"]["name"], "default")
    assert dev is not None and dev["spec"]["suspend"] is True
    assert dev["status"]["jobDeploymentStatus"] == "Suspended"
    # the blog: a preempted RayJob resumes when quota frees
    cluster.delete("RayJob", prod["metadata"]["name"], "default")
    cluster.advance(60)
    pods = _running(cluster)
    assert len(pods) == 2 and all(p.startswith(devs[0]["metadata"]["name"]) for p in pods), pods


def test_gang_scheduling_with_rayjob_and_kueue(cluster: EmbeddedCluster) -> None:
    # a GKE cluster of one CPU node; the GPU pool (queued provisioning) has no node yet
    cluster.apply([_node("cpu-node")])
    cluster.apply(_load(KUEUE / "ray-gang/kueue-resources.yaml"))
    job = _rayjob(KUEUE / "ray-gang/rayjob-metadata.fragment.yaml", "nv77q")
    name = job["metadata"]["name"]
    cluster.apply([job])
    # "the RayJob status is immediately suspended despite the ClusterQueue having GPU quotas"
    rayjob = cluster.get("RayJob", name, "default")
    assert rayjob is not None and rayjob["status"]["jobDeploymentStatus"] == "Suspended"
    workload = _workload(cluster, name)
    assert _condition(workload, "QuotaReserved") == ("True", "QuotaReserved")
    assert _condition(workload, "Admitted") == ("False", "UnsatisfiedAdmissionChecks")
    # kubectl get provisioningrequest: <workload>-rayjob-gpu-1, Accepted True, Provisioned False
    request_name = f"{workload['metadata']['name']}-rayjob-gpu-1"
    request = cluster.get("ProvisioningRequest", request_name, "default")
    assert request is not None
    assert _condition(request, "Accepted")[0] == "True"
    assert _condition(request, "Provisioned")[0] == "False"
    # only the PodSet using the managed resource (the head's GPU) is in the request
    assert [p["podTemplateRef"]["name"] for p in request["spec"]["podSets"]] == [
        f"ppt-{request_name}-head"
    ]
    assert _running(cluster) == []
    # the autoscaler adds a GPU node; then the submitter and head pods run
    cluster.apply([_node("gpu-node", gpus=1)])
    request = cluster.get("ProvisioningRequest", request_name, "default")
    assert request is not None and _condition(request, "Provisioned")[0] == "True"
    assert _condition(_workload(cluster, name), "Admitted") == ("True", "Admitted")
    pods = _running(cluster)
    assert len(pods) == 2 and all(p.startswith(name) for p in pods), pods
    head = cluster.get("Pod", next(p for p in pods if "-head-" in p), "default")
    assert head is not None and head["spec"]["nodeName"] == "gpu-node"
