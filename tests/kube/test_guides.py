"""The public guides, chapter by chapter, applied unchanged with kubectl v1.34 to a real
kube-apiserver v1.34 running ``pykai run`` (with kube-controller-manager for Deployments, KWOK as
the nodes' kubelets and the real KubeRay operator, installed as the KAI + KubeRay guide installs
it). Expected outcomes follow the guides and semantics.md,
as the embedded backend's tests/embedded/test_guides.py does."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from pykai.kube.api import connect
from pykai.kube.localcluster import LocalCluster
from pykai.kube.nodes import create_ready_nodes
from pykai.model import builders
from pykai.model.meta import Obj
from tests.kube.conftest import ROOT, fresh_cluster, get_json, kubectl, pykai_running, wait_for

EXAMPLES = ROOT / "examples"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory, crds: Path) -> Iterator[LocalCluster]:
    """Chapter 1: one node with 1 GPU and one CPU-only node, pykai running (on pykai's CRDs,
    then on KAI's)."""
    with fresh_cluster(tmp_path_factory.mktemp("guides"), crds) as local:
        create_ready_nodes(
            connect(local.kubeconfig),
            [
                builders.node("gpu-node-1", gpus=1, cpu="32", memory="128Gi"),
                builders.node("cpu-node-1", gpus=0, cpu="16", memory="64Gi"),
            ],
            time.time(),
        )
        with pykai_running(local):
            yield local


def pods(cluster: LocalCluster, *args: str) -> list[Obj]:
    items: list[Obj] = get_json(cluster, "pods", *args)["items"]
    return items


def ray_pods(cluster: LocalCluster, name: str) -> list[Obj]:
    return pods(cluster, "-l", f"ray.io/cluster={name}")


def bound(items: list[Obj]) -> bool:
    return bool(items) and all(p["spec"].get("nodeName") for p in items)


def test_1_queues_with_kais_columns(cluster: LocalCluster) -> None:
    kubectl(cluster, "apply", "-f", str(EXAMPLES / "queues-department-1-team-a.yaml"))
    lines = kubectl(cluster, "get", "queues").splitlines()
    assert lines[0].split() == ["NAME", "PRIORITY", "PARENT", "CHILDREN", "DISPLAYNAME"]

    def children() -> list[str]:
        status = get_json(cluster, "queue", "department-1").get("status") or {}
        return list(status.get("childQueues") or [])

    assert wait_for(lambda: children() == ["team-a"]), children()


def test_2_raycluster_gang_of_three_runs(cluster: LocalCluster) -> None:
    kubectl(cluster, "apply", "-f", str(EXAMPLES / "ray-cluster.kai-scheduler.yaml"))
    assert wait_for(lambda: len(ray_pods(cluster, "raycluster-sample")) == 3)
    assert wait_for(lambda: bound(ray_pods(cluster, "raycluster-sample")))
    found = ray_pods(cluster, "raycluster-sample")
    assert sorted(p["metadata"]["labels"]["ray.io/node-type"] for p in found) == [
        "head",
        "worker",
        "worker",
    ]
    groups = {p["metadata"]["annotations"]["pod-group-name"] for p in found}
    assert len(groups) == 1  # one PodGroup for head and workers
    group = get_json(cluster, "podgroup", groups.pop())
    assert group["spec"]["minMember"] == 3 and group["spec"]["queue"] == "team-a"


def test_3_inference_preempts_training(cluster: LocalCluster) -> None:
    kubectl(cluster, "delete", "raycluster", "raycluster-sample", "--wait=false")
    # garbage-collected: each running pod terminates over its grace period (30 s) first
    assert wait_for(lambda: not ray_pods(cluster, "raycluster-sample"), timeout=120)
    kubectl(cluster, "apply", "-f", str(EXAMPLES / "blog-raycluster-train.yaml"))
    assert wait_for(lambda: len(ray_pods(cluster, "raycluster-sample")) == 2)
    assert wait_for(lambda: bound(ray_pods(cluster, "raycluster-sample")))
    training = {p["metadata"]["name"] for p in ray_pods(cluster, "raycluster-sample")}

    kubectl(cluster, "apply", "-f", str(EXAMPLES / "blog-rayservice-inference.yaml"))

    def serving() -> list[Obj]:
        return [p for p in pods(cluster) if "serve-llm" in p["metadata"]["name"]]

    # the training pods terminate over their grace period (Kubernetes' default 30 s) first
    assert wait_for(lambda: len(serving()) == 2 and bound(serving()), timeout=120), serving()
    worker = next(p for p in serving() if p["metadata"]["labels"]["ray.io/node-type"] == "worker")
    assert worker["spec"]["nodeName"] == "gpu-node-1"
    now = {p["metadata"]["name"]: p for p in ray_pods(cluster, "raycluster-sample")}
    assert not training & set(now)  # the whole training gang was evicted
    assert now and not any(p["spec"].get("nodeName") for p in now.values())  # recreated, waiting
    events = kubectl(
        cluster, "get", "events", "-o", "custom-columns=R:.reason,O:.involvedObject.name"
    )
    evicted = {line.split()[1] for line in events.splitlines() if line.startswith("Evict")}
    assert training <= evicted


def test_4_fractions_share_gpu_groups(cluster: LocalCluster) -> None:
    create_ready_nodes(
        connect(cluster.kubeconfig),
        [builders.node("gpu-node-2", gpus=4, cpu="64", memory="256Gi")],
        time.time(),
    )
    kubectl(cluster, "create", "namespace", "ai-workloads")
    for name in (
        "opennebula-queues-default-test.yaml",
        "vllm-gpu-fraction-deployments.yaml",
        "ray-cluster.kai-gpu-sharing.yaml",
    ):
        kubectl(cluster, "apply", "-f", str(EXAMPLES / name))

    def vllm() -> list[Obj]:
        return pods(cluster, "-n", "ai-workloads")

    assert wait_for(lambda: len(vllm()) == 2 and bound(vllm()), timeout=45), vllm()
    found = vllm()
    assert sorted(p["metadata"]["annotations"]["gpu-fraction"] for p in found) == ["0.2", "0.7"]
    groups = {p["metadata"]["labels"]["runai-gpu-group"] for p in found}
    assert len(groups) == 1 and len({p["spec"]["nodeName"] for p in found}) == 1

    def half() -> list[Obj]:
        return ray_pods(cluster, "raycluster-half-gpu")

    assert wait_for(lambda: len(half()) == 3 and bound(half()), timeout=45), half()
    workers = [p for p in half() if p["metadata"]["labels"]["ray.io/node-type"] == "worker"]
    head = next(p for p in half() if p["metadata"]["labels"]["ray.io/node-type"] == "head")
    worker_groups = {p["metadata"]["labels"]["runai-gpu-group"] for p in workers}
    assert len(workers) == 2 and len(worker_groups) == 1
    assert "runai-gpu-group" not in head["metadata"]["labels"]
    assert workers[0]["metadata"]["annotations"]["pykai.io/gpu-portion"] == "0.50"
    # each shared device is held by one reservation pod, labelled with its group
    reserved = {
        p["metadata"]["labels"]["runai-gpu-group"]: p["spec"]["nodeName"]
        for p in pods(cluster, "-n", "pykai-resv")
    }
    assert (groups | worker_groups) <= set(reserved)
    # a BindRequest was the path for every shared pod, and it succeeded
    requests = get_json(cluster, "bindrequests", "-A")["items"]
    shared = {p["metadata"]["name"] for p in found + workers}
    done = {r["metadata"]["name"] for r in requests if r["status"]["phase"] == "Succeeded"}
    assert shared <= done


def test_5_missing_queue_is_explained(cluster: LocalCluster, tmp_path: Path) -> None:
    manifest = (EXAMPLES / "ray-cluster.kai-scheduler.yaml").read_text()
    manifest = manifest.replace("name: raycluster-sample", "name: raycluster-wrong-queue")
    manifest = manifest.replace(
        "kai.scheduler/queue: team-a", "kai.scheduler/queue: team-that-does-not-exist"
    )
    assert "team-that-does-not-exist" in manifest
    (tmp_path / "wrong.yaml").write_text(manifest)
    kubectl(cluster, "apply", "-f", str(tmp_path / "wrong.yaml"))
    assert wait_for(lambda: len(ray_pods(cluster, "raycluster-wrong-queue")) == 3)

    def reasons() -> list[Obj]:
        annotations = ray_pods(cluster, "raycluster-wrong-queue")[0]["metadata"].get("annotations")
        if "pod-group-name" not in (annotations or {}):
            return []  # not grouped yet
        group = get_json(cluster, "podgroup", annotations["pod-group-name"])
        status = group.get("status") or {}
        return [r for c in status.get("schedulingConditions") or [] for r in c["reasons"]]

    assert wait_for(lambda: bool(reasons()))
    first = reasons()[0]
    assert first["reason"] == "QueueDoesNotExist"
    assert 'queue "team-that-does-not-exist" does not exist' in first["message"]
    assert not any(p["spec"].get("nodeName") for p in ray_pods(cluster, "raycluster-wrong-queue"))
