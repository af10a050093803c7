"""`pykai run` against a real kube-apiserver: the guides' queues and a gang of pods applied
with Debian's kubectl are scheduled together; a gang that does not fit stays pending whole;
SIGTERM stops the process."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest
import yaml
from lightkube import Client, KubeConfig

from pykai.kube.localcluster import LocalCluster
from pykai.kube.nodes import create_ready_nodes, gpu_nodes
from pykai.model.builders import pod, podgroup
from pykai.model.priorityclass import builtin_priority_classes
from tests.kube.conftest import ROOT, kubectl


def apply(cluster: LocalCluster, objects: list[dict], tmp: str) -> None:  # type: ignore[type-arg]
    with open(tmp, "w") as handle:
        yaml.safe_dump_all(objects, handle)
    kubectl(cluster, "apply", "-f", tmp)


def pods(cluster: LocalCluster) -> dict[str, str]:
    items = json.loads(kubectl(cluster, "get", "pods", "-o", "json"))["items"]
    return {p["metadata"]["name"]: p["spec"].get("nodeName", "") for p in items}


def phase(cluster: LocalCluster, name: str) -> str:
    return str(
        json.loads(kubectl(cluster, "get", "pod", name, "-o", "json"))["status"].get("phase")
    )


def wait_for(condition, timeout: float = 30.0) -> bool:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.5)
    return False


@pytest.fixture(scope="module")
def running(
    local_cluster: LocalCluster, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LocalCluster]:
    tmp = str(tmp_path_factory.mktemp("run") / "objs.yaml")
    kubectl(local_cluster, "apply", "-f", str(ROOT / "deploy/helm/pykai/crds"))
    wait_for(
        lambda: (
            "podgroups" in kubectl(local_cluster, "api-resources", "--api-group=scheduling.run.ai")
        )
    )
    apply(local_cluster, builtin_priority_classes(), tmp)
    kubectl(local_cluster, "apply", "-f", str(ROOT / "examples/queues-department-1-team-a.yaml"))
    create_ready_nodes(
        Client(KubeConfig.from_file(str(local_cluster.kubeconfig))), gpu_nodes(2, 4), time.time()
    )
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "pykai",
            "run",
            f"--kubeconfig={local_cluster.kubeconfig}",
            "--fake-kubelet",
            "--period=0.5",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    yield local_cluster
    process.send_signal(signal.SIGTERM)
    assert process.wait(timeout=20) == 0


def test_gang_is_bound_together_and_too_big_gang_waits(running: LocalCluster, tmp_path) -> None:  # type: ignore[no-untyped-def]
    gang = [podgroup("train", queue="team-a", min_member=3)] + [
        pod(f"train-{i}", group="train", gpus=2) for i in range(3)
    ]
    apply(running, gang, str(tmp_path / "gang.yaml"))
    assert wait_for(lambda: all(pods(running).get(f"train-{i}") for i in range(3))), pods(running)
    big = [podgroup("big", queue="team-a", min_member=2)] + [
        pod(f"big-{i}", group="big", gpus=2) for i in range(2)
    ]
    apply(running, big, str(tmp_path / "big.yaml"))
    bare = [pod("solo", gpus=2, labels={"kai.scheduler/queue": "team-a"})]
    apply(running, bare, str(tmp_path / "bare.yaml"))
    assert wait_for(
        lambda: bool(pods(running).get("solo"))
    )  # the bare pod gets a PodGroup and runs
    placed = pods(running)
    assert (
        not placed["big-0"] and not placed["big-1"]
    )  # 2 free GPUs were left: not enough for the gang
    status = json.loads(kubectl(running, "get", "queue", "team-a", "-o", "json"))["status"]
    assert status["allocated"]["nvidia.com/gpu"] == "8"
    assert wait_for(lambda: phase(running, "train-0") == "Running")  # the fake kubelet


def test_missing_queue_is_explained_on_the_podgroup(running: LocalCluster, tmp_path) -> None:  # type: ignore[no-untyped-def]
    lost = [podgroup("lost", queue="no-such-queue"), pod("lost-0", group="lost", gpus=1)]
    apply(running, lost, str(tmp_path / "lost.yaml"))

    def reasons() -> list[str]:
        status = (
            json.loads(kubectl(running, "get", "podgroup", "lost", "-o", "json")).get("status")
            or {}
        )
        return [r["reason"] for c in status.get("schedulingConditions") or [] for r in c["reasons"]]

    assert wait_for(lambda: "QueueDoesNotExist" in reasons()), reasons()
    assert not pods(running)["lost-0"]
