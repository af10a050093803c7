"""The Ray + Kueue guides, and Kueue's quick start, replayed step by step with kubectl v1.34
against a real kube-apiserver v1.34 running ``pykai run`` and ``pykai webhook`` (Kueue's kinds as
pykai's chart ships them, KWOK's nodes, the real KubeRay operator and Job controller): the
manifests unchanged (examples/kueue/), expected outcomes from the guides and Kueue's code
(docs/kueue.md says where they differ)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
import yaml

from pykai.kube.api import connect
from pykai.kube.localcluster import LocalCluster, free_port
from pykai.kube.nodes import create_ready_nodes
from pykai.model import builders
from pykai.model.meta import Obj
from tests.kube.conftest import (
    ROOT,
    fresh_cluster,
    get_json,
    kubectl,
    pykai_cli,
    pykai_running,
    wait_for,
    webhook_running,
)

KUEUE = ROOT / "examples/kueue"
PYTORCH = KUEUE / "kuberay-samples/ray-job.pytorch-distributed-training.yaml"
VISIBILITY = "/apis/visibility.kueue.x-k8s.io/v1beta1"


@contextmanager
def guide_cluster(directory: Path, nodes: list[Obj]) -> Iterator[tuple[LocalCluster, str]]:
    """A guide's cluster as the Kueue guides set one up: ``nodes``; the KubeRay operator as
    its chart installs it, with no batch scheduler (so Ray pods are the default scheduler's);
    kube-scheduler, the default scheduler; Kueue (pykai run and its webhook); the stand-in
    answer to ProvisioningRequests (the cluster autoscaler's part). With the base URL of pykai
    run's metrics and visibility server."""
    with fresh_cluster(
        directory, default_scheduler=True, provisioning=True, kuberay_scheduler=""
    ) as local:
        create_ready_nodes(connect(local.kubeconfig), nodes, time.time())
        address = f"127.0.0.1:{free_port()}"
        with webhook_running(local), pykai_running(local, f"--metrics-address={address}"):
            yield local, f"http://{address}"


@pytest.fixture(scope="module")
def priority_cluster(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[LocalCluster, str]]:
    """The priority guide's cluster: one GPU node."""
    gpu_node = builders.node("gpu-node-1", gpus=1, cpu="16", memory="64Gi")
    with guide_cluster(tmp_path_factory.mktemp("kueue-priority"), [gpu_node]) as found:
        yield found


def rayjob_manifest(tmp_path: Path, metadata: Path) -> Path:
    """The pytorch RayJob with the guide's metadata (generateName and labels) in its place."""
    job = yaml.safe_load(PYTORCH.read_text())
    job["metadata"] = yaml.safe_load(metadata.read_text())["metadata"]
    path = tmp_path / f"{metadata.stem}.yaml"
    path.write_text(yaml.safe_dump(job))
    return path


def create(cluster: LocalCluster, manifest: Path) -> str:
    """``kubectl create -f`` (the RayJob has a generateName); the name it got."""
    out = kubectl(cluster, "create", "-f", str(manifest), "-o", "name")
    return out.strip().split("/")[-1]


def rayjob(cluster: LocalCluster, name: str) -> Obj:
    return get_json(cluster, "rayjob", name)


def workload_of(cluster: LocalCluster, job: str) -> Obj | None:
    items: list[Obj] = get_json(cluster, "workloads")["items"]
    for found in items:
        if any(ref["name"] == job for ref in found["metadata"].get("ownerReferences") or []):
            return found
    return None


def condition(obj: Obj | None, kind: str) -> Obj:
    for found in ((obj or {}).get("status") or {}).get("conditions") or []:
        if found["type"] == kind:
            return dict(found)
    return {}


def heads(cluster: LocalCluster, job: str) -> list[Obj]:
    """The Ray head pods of the RayJob's cluster (named ``<job>-<suffix>``)."""
    found: list[Obj] = get_json(cluster, "pods", "-l", "ray.io/node-type=head")["items"]
    return [p for p in found if p["metadata"]["labels"]["ray.io/cluster"].startswith(f"{job}-")]


def running(cluster: LocalCluster, job: str) -> bool:
    """The RayJob is unsuspended and its head pod is bound."""
    found = heads(cluster, job)
    unsuspended = rayjob(cluster, job)["spec"].get("suspend") is False
    return unsuspended and bool(found) and all(p["spec"].get("nodeName") for p in found)


def explained(cluster: LocalCluster, kind: str, name: str) -> Obj:
    """``pykai explain KIND NAME --kubeconfig ... -o json``: its Kueue part."""
    done = pykai_cli("explain", kind, name, f"--kubeconfig={cluster.kubeconfig}", "-o", "json")
    assert done.returncode == 0, done.stderr
    found: Obj = json.loads(done.stdout)["kueue"]
    return found


def test_priority_guide(priority_cluster: tuple[LocalCluster, str], tmp_path: Path) -> None:
    cluster, server = priority_cluster
    # Step 3: the guide's Kueue resources
    out = kubectl(cluster, "apply", "-f", str(KUEUE / "ray-priority/kueue-resources.yaml"))
    assert "clusterqueue.kueue.x-k8s.io/cluster-queue created" in out
    dev = rayjob_manifest(tmp_path, KUEUE / "ray-priority/rayjob-metadata-dev.fragment.yaml")
    prod = rayjob_manifest(tmp_path, KUEUE / "ray-priority/rayjob-metadata-prod.fragment.yaml")

    # Step 4: one dev RayJob. Created suspended by the webhook; with the guide's quota (cpu 2,
    # memory 8G) Kueue's submitter PodSet (500m, 200Mi) makes it too big: never admitted
    first = create(cluster, dev)
    assert rayjob(cluster, first)["spec"]["suspend"] is True
    assert wait_for(lambda: condition(workload_of(cluster, first), "QuotaReserved"), 60)
    reserved = condition(workload_of(cluster, first), "QuotaReserved")
    assert (reserved["status"], reserved["reason"]) == ("False", "ExceedsMaxQuota")
    assert "pod set submitter" in reserved["message"]
    assert rayjob(cluster, first)["spec"]["suspend"] is True and not heads(cluster, first)
    never = explained(cluster, "rayjob", first)
    assert (never["state"], never["rule"], never["reason"]) == (
        "pending",
        "ClusterQueue quota",
        "ExceedsMaxQuota",
    )
    assert str(never["verdict"]).startswith("it can never be admitted as asked")

    # room for the submitter (docs/kueue.md): the RayJob is admitted, unsuspended, and runs
    quota = "/spec/resourceGroups/0/flavors/0/resources/{}/nominalQuota"
    raised = [
        {"op": "replace", "path": quota.format(0), "value": 3},
        {"op": "replace", "path": quota.format(1), "value": "9G"},
    ]
    kubectl(cluster, "patch", "cq", "cluster-queue", "--type=json", "-p", json.dumps(raised))
    assert wait_for(lambda: running(cluster, first), 120), rayjob(cluster, first)
    admitted = workload_of(cluster, first)
    assert condition(admitted, "Admitted")["status"] == "True"
    assert admitted is not None
    assert admitted["status"]["admission"]["clusterQueue"] == "cluster-queue"
    kubectl(cluster, "delete", "rayjob", first)

    # Step 5: three dev RayJobs: one admitted, two pending in the ClusterQueue
    devs = [create(cluster, dev) for _ in range(3)]
    assert wait_for(lambda: sum(running(cluster, name) for name in devs) == 1, 120)

    def cluster_queue() -> Obj:
        status: Obj = get_json(cluster, "clusterqueue", "cluster-queue").get("status") or {}
        return status

    assert wait_for(lambda: cluster_queue().get("pendingWorkloads") == 2, 60), cluster_queue()
    status = cluster_queue()
    assert status["admittedWorkloads"] == 1 and status["reservingWorkloads"] == 1
    lines = kubectl(cluster, "get", "clusterqueue").splitlines()
    assert lines[1].split() == ["cluster-queue", "2"]  # NAME, COHORT (none), PENDING WORKLOADS
    winner = next(name for name in devs if running(cluster, name))

    # Kueue's visibility API: the two waiting, in Kueue's order for one priority: creation
    # (to the second), then UID
    waiting = [w["metadata"] for w in get_json(cluster, "workloads")["items"]]
    waiting = [m for m in waiting if m["ownerReferences"][0]["name"] in set(devs) - {winner}]
    waiting.sort(key=lambda meta: (meta["creationTimestamp"], meta["uid"]))
    path = f"{VISIBILITY}/clusterqueues/cluster-queue/pendingworkloads"
    body = httpx.get(server + path).json()
    assert body["kind"] == "PendingWorkloadsSummary"
    assert [(i["metadata"]["name"], i["positionInClusterQueue"]) for i in body["items"]] == [
        (meta["name"], n) for n, meta in enumerate(waiting)
    ]
    path = f"{VISIBILITY}/namespaces/default/localqueues/user-queue/pendingworkloads?offset=1"
    body = httpx.get(server + path).json()
    assert [(i["localQueueName"], i["positionInLocalQueue"]) for i in body["items"]] == [
        ("user-queue", 1)
    ]
    # pykai explain --kubeconfig says the same: the Kueue rule and the positions
    admitted = explained(cluster, "rayjob", winner)
    assert (admitted["state"], admitted["clusterQueue"]) == ("admitted", "cluster-queue")
    assert admitted["flavors"]["head"]["nvidia.com/gpu"] == "default-flavor"  # type: ignore[index]
    for place, meta in enumerate(waiting):
        owner = meta["ownerReferences"][0]["name"]
        pending = explained(cluster, "rayjob", owner)
        assert (pending["rule"], pending["reason"]) == ("ClusterQueue quota", "WaitingForQuota")
        assert pending["position"] == {"inClusterQueue": place, "inLocalQueue": place}

    # Step 6: a prod RayJob preempts the running dev one (suspended, its pods deleted)
    chosen = create(cluster, prod)
    assert wait_for(lambda: running(cluster, chosen), 180), rayjob(cluster, chosen)
    assert wait_for(lambda: rayjob(cluster, winner)["spec"]["suspend"] is True, 60)
    assert wait_for(lambda: not heads(cluster, winner), 120)
    assert not any(running(cluster, name) for name in devs)
    preempted = workload_of(cluster, winner)
    assert condition(preempted, "Preempted")["reason"] == "InClusterQueue"

    def deployment() -> str:
        return str((rayjob(cluster, winner).get("status") or {}).get("jobDeploymentStatus"))

    assert wait_for(lambda: deployment() == "Suspended", 120), deployment()


def test_gang_guide_step_by_step(tmp_path: Path) -> None:
    """The gang guide on a cluster whose GPU node pool is empty, with the local control plane's
    check-capacity stand-in answering ProvisioningRequests (the autoscaler's part): the RayJob
    stays suspended, its Workload holds quota and waits for its admission check, whose request
    is not provisioned; KAI's own scheduling goes on meanwhile; a GPU node joins, the request is
    provisioned, the check turns Ready, the Workload is admitted and the RayJob runs there."""
    cpu_node = builders.node("cpu-node", gpus=0, cpu="4", memory="16Gi")
    with guide_cluster(tmp_path / "cluster", [cpu_node]) as (cluster, _):
        out = kubectl(cluster, "apply", "-f", str(KUEUE / "ray-gang/kueue-resources.yaml"))
        assert "admissioncheck.kueue.x-k8s.io/rayjob-gpu created" in out
        assert "provisioningrequestconfig.kueue.x-k8s.io/rayjob-gpu-config created" in out

        def check_active() -> Obj:
            return condition(get_json(cluster, "admissioncheck", "rayjob-gpu"), "Active")

        assert wait_for(lambda: check_active().get("status") == "True", 60), check_active()
        manifest = rayjob_manifest(tmp_path, KUEUE / "ray-gang/rayjob-metadata.fragment.yaml")
        name = create(cluster, manifest)

        # "the RayJob status is immediately suspended despite the ClusterQueue having GPU
        # quotas available"
        def deployment() -> str:
            return str((rayjob(cluster, name).get("status") or {}).get("jobDeploymentStatus"))

        assert wait_for(lambda: deployment() == "Suspended", 60), deployment()

        def admitted() -> tuple[str, str]:
            found = condition(workload_of(cluster, name), "Admitted")
            return str(found.get("status")), str(found.get("reason"))

        assert wait_for(lambda: admitted() == ("False", "UnsatisfiedAdmissionChecks"), 60)
        workload = workload_of(cluster, name)
        assert workload is not None and condition(workload, "QuotaReserved")["status"] == "True"
        request_name = f"{workload['metadata']['name']}-rayjob-gpu-1"

        def provisioned() -> str:
            found = get_json(cluster, "provisioningrequests")
            for request in found["items"]:
                if request["metadata"]["name"] == request_name:
                    return str(condition(request, "Provisioned").get("status"))
            return ""

        assert wait_for(lambda: provisioned() == "False", 60), provisioned()
        assert rayjob(cluster, name)["spec"]["suspend"] is True and not heads(cluster, name)
        kai = [
            builders.queue("kai-team"),
            builders.pod("kai-cpu", memory="1Gi", labels={"kai.scheduler/queue": "kai-team"}),
        ]
        (tmp_path / "kai.yaml").write_text(yaml.safe_dump_all(kai))
        kubectl(cluster, "create", "-f", str(tmp_path / "kai.yaml"))

        def kai_node() -> str:
            return str(get_json(cluster, "pod", "kai-cpu")["spec"].get("nodeName") or "")

        assert wait_for(lambda: kai_node() == "cpu-node", 60)  # KAI's scheduling goes on

        # a GPU node joins (the autoscaler's part in the guide): provisioned, admitted, runs there
        gpu_node = builders.node("gpu-node", gpus=1, cpu="4", memory="16Gi")
        create_ready_nodes(connect(cluster.kubeconfig), [gpu_node], time.time())
        assert wait_for(lambda: provisioned() == "True", 120), provisioned()
        assert wait_for(lambda: running(cluster, name), 120), rayjob(cluster, name)
        assert heads(cluster, name)[0]["spec"]["nodeName"] == "gpu-node"
        assert admitted() == ("True", "Admitted")


def test_quick_start_job_is_held_suspended_then_runs(tmp_path: Path) -> None:
    """Kueue's quick start unchanged: sample-job.yaml, a batch/v1 Job with no schedulerName.
    Kubernetes 1.34's Job has ``spec.suspend``: the webhook creates it suspended and the real Job
    controller makes no pod while its Workload waits (no ClusterQueue yet); once
    single-clusterqueue-setup.yaml is applied pykai admits it (3 × 1 CPU within the quota of 9),
    unsuspends it, the Job controller makes its 3 pods, and the default scheduler (kube-scheduler
    v1.34) places them on the node, where KWOK runs them."""
    node = builders.node("cpu-node", gpus=0, cpu="8", memory="32Gi")
    with guide_cluster(tmp_path / "cluster", [node]) as (cluster, _):
        job = create(cluster, KUEUE / "kueue-docs/sample-job.yaml")

        def spec() -> Obj:
            found: Obj = get_json(cluster, "job", job)["spec"]
            return found

        def pods() -> list[Obj]:
            found: list[Obj] = get_json(cluster, "pods", "-l", f"job-name={job}")["items"]
            return found

        assert spec()["suspend"] is True
        assert wait_for(lambda: workload_of(cluster, job) is not None, 60)
        workload = workload_of(cluster, job)
        assert workload is not None and condition(workload, "Admitted").get("status") != "True"
        # the real Job controller honours suspend: a pending Workload holds every pod back
        assert wait_for(
            lambda: condition(get_json(cluster, "job", job), "Suspended").get("status") == "True",
            60,
        )
        assert pods() == []

        kubectl(cluster, "apply", "-f", str(KUEUE / "kueue-docs/single-clusterqueue-setup.yaml"))
        assert wait_for(lambda: spec()["suspend"] is False, 60), spec()
        assert condition(workload_of(cluster, job), "Admitted")["status"] == "True"

        def running() -> list[Obj]:
            return [p for p in pods() if (p.get("status") or {}).get("phase") == "Running"]

        assert wait_for(lambda: len(running()) == 3, 120), pods()
        assert {p["spec"]["schedulerName"] for p in running()} == {"default-scheduler"}
        assert {p["spec"]["nodeName"] for p in running()} == {"cpu-node"}
