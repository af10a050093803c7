"""`pykai run --dashboard-address` against a real kube-apiserver, seen in headless Chromium:
the same pages as `pykai dashboard`, fed by the run loop's cycles. Two nodes of 4 GPUs;
queues dash-a and dash-b (quota 4 GPUs each); an inference job of dash-a preempts dash-a's
training gang (KAI's preempt: same queue, lower priority); half a GPU each for dash-a and
dash-b share a device; a 16-GPU job of dash-b can never fit."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from pykai.kube.api import connect
from pykai.kube.localcluster import LocalCluster, free_port
from pykai.kube.nodes import create_ready_nodes, gpu_nodes
from pykai.model.builders import pod, podgroup, queue
from pykai.model.meta import Obj
from tests.dashboard.browser import load
from tests.kube.conftest import apply, fresh_cluster, get_json, pykai_running, wait_for


def job(
    name: str, queue_name: str, pods: int = 1, priority: str = "train", **fields: object
) -> list[Obj]:
    return [
        podgroup(name, queue=queue_name, min_member=pods, priority_class=priority),
        *(pod(f"{name}-{i}", group=name, **fields) for i in range(pods)),  # type: ignore[arg-type]
    ]


def placed(cluster: LocalCluster, name: str) -> bool:
    found = [p for p in get_json(cluster, "pods")["items"] if p["metadata"]["name"] == name]
    return bool(found and found[0]["spec"].get("nodeName"))


@pytest.fixture(scope="module")
def dashboard(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, LocalCluster]]:
    directory = tmp_path_factory.mktemp("dashboard-run")
    with fresh_cluster(directory) as cluster:
        create_ready_nodes(connect(cluster.kubeconfig), gpu_nodes(2, 4), time.time())
        apply(
            cluster,
            [queue("dash-a", gpu=(4, -1, 1)), queue("dash-b", gpu=(4, -1, 1))],
            directory / "queues.yaml",
        )
        port = free_port()
        with pykai_running(cluster, f"--dashboard-address=127.0.0.1:{port}"):
            url = f"http://127.0.0.1:{port}/"
            apply(cluster, job("train", "dash-a", pods=2, gpus=4), directory / "train.yaml")
            assert wait_for(lambda: placed(cluster, "train-0") and placed(cluster, "train-1"), 120)
            apply(
                cluster,
                job("serve", "dash-a", gpus=4, priority="inference"),
                directory / "serve.yaml",
            )
            assert wait_for(lambda: placed(cluster, "serve-0"), 120)
            halves = [
                *job("half-a", "dash-a", annotations={"gpu-fraction": "0.5"}),
                *job("half-b", "dash-b", annotations={"gpu-fraction": "0.5"}),
            ]
            apply(cluster, halves, directory / "halves.yaml")
            assert wait_for(
                lambda: placed(cluster, "half-a-0") and placed(cluster, "half-b-0"), 120
            )
            apply(cluster, job("huge", "dash-b", gpus=16), directory / "huge.yaml")

            def judged() -> bool:
                page = httpx.get(url + "api/dashboard", timeout=30).json()
                return any(
                    j["job"] == "default/huge" and "needs 16" in j["reason"]
                    for j in page.get("pending", {}).get("jobs", [])
                )

            assert wait_for(judged, 120)
            yield url, cluster


def test_the_pages_of_pykai_run(dashboard: tuple[str, LocalCluster], tmp_path: Path) -> None:
    url, _ = dashboard
    queues = load(url + "#queues", tmp_path / "queues.png").rows["queue-rows"]
    dash_a = next(r for r in queues if r[0] == "dash-a")
    assert "allocated 4.5 · requested 4.5" in dash_a[2] and "quota 4" in dash_a[2]

    gpus = load(url + "#gpus", tmp_path / "gpus.png")
    [(node, device, held)] = gpus.rows["shared-rows"]
    assert node.startswith("gpu-node-") and device == "GPU 0"
    assert held == "dash-a 0.5, dash-b 0.5"

    pending = load(url + "#pending", tmp_path / "pending.png").rows["pending-rows"]
    huge = next(r for r in pending if r[2] == "default/huge")
    assert huge[3] == "dash-b" and "needs 16 on one node" in huge[6]

    evictions = load(url + "#evictions", tmp_path / "evictions.png").rows["eviction-rows"]
    train = {r[1]: r for r in evictions}
    assert set(train) == {"default/train-0", "default/train-1"}
    assert train["default/train-0"][2:4] == ["preempt", "default/serve"]
