"""A real Prometheus (Debian's, unpacked by scripts/prometheus) scrapes ``pykai run
--metrics-address`` on a real apiserver, and KAI's Grafana dashboard expressions give the
figures KAI would show for a known cluster: a queue with a GPU quota of 2 running pods of 1, 2
and half a GPU (3.5 allocated) and one 4-GPU pod that cannot fit."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import yaml

from pykai.kube.api import KubeApi, connect
from pykai.kube.localcluster import LocalCluster, free_port
from pykai.kube.nodes import create_ready_nodes
from pykai.model import builders
from pykai.model.kinds import BY_KIND
from tests.kube.conftest import pykai_running, wait_for
from tests.setup_scripts import installed

QUEUE = "observed"
NAMESPACE = "pykai-system"  # as a ServiceMonitor's target labels would say
TAINT = {"key": "pykai-test", "value": "observe", "effect": "NoSchedule"}
# KAI's dashboards (KAI-Scheduler docs/metrics/grafana/*.json, Apache-2.0), with Grafana's
# variables $namespace and $queue filled in
ALLOCATED_GPUS = (  # kai-queues-allocation.json, panel "Allocated GPUs"
    'max by (queue_name) (kai_queue_allocated_gpus{namespace=~"$namespace", queue_name=~"$queue"})'
)
ALLOCATION_RATIO = (  # kai-queues-allocation.json, panel "GPU Allocation vs Deserved Ratio"
    'max by (queue_name) (kai_queue_allocated_gpus{namespace=~"$namespace", '
    'queue_name=~"$queue"}) / clamp_min(max by (queue_name) (kai_queue_deserved_gpus'
    '{namespace=~"$namespace", queue_name=~"$queue"}), 1)'
)
E2E_LATENCY = (  # kai-scheduler-internals.json, panel "End-to-End Scheduling Latency"
    'max by (pod) (kai_e2e_scheduling_latency_milliseconds{namespace=~"$namespace", '
    'pod=~"$pod"}) / 1000'
)


def dashboard(expression: str) -> str:
    return (
        expression.replace("$namespace", NAMESPACE)
        .replace("$queue", QUEUE)
        .replace("$pod", "pykai-scheduler-0")
    )


class Prometheus:
    """A Prometheus server on loopback, scraping one target every second."""

    def __init__(self, directory: Path, target: str) -> None:
        binary = Path(installed("prometheus", timeout=600)) / "prometheus"
        config = {
            "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
            "scrape_configs": [
                {
                    "job_name": "pykai-scheduler",
                    "static_configs": [
                        {
                            "targets": [target],
                            "labels": {"namespace": NAMESPACE, "pod": "pykai-scheduler-0"},
                        }
                    ],
                }
            ],
        }
        (directory / "prometheus.yml").write_text(yaml.safe_dump(config))
        self.url = f"http://127.0.0.1:{free_port()}"
        self.log = open(directory / "prometheus.log", "wb")  # noqa: SIM115 - closed in stop()
        self.process = subprocess.Popen(
            [
                str(binary),
                f"--config.file={directory / 'prometheus.yml'}",
                f"--storage.tsdb.path={directory / 'data'}",
                f"--web.listen-address={self.url.removeprefix('http://')}",
                "--log.level=warn",
            ],
            stdout=self.log,
            stderr=subprocess.STDOUT,
        )

    def ready(self) -> bool:
        try:
            return httpx.get(f"{self.url}/-/ready").status_code == 200
        except httpx.HTTPError:
            return False

    def query(self, expression: str) -> dict[str, float]:
        """An instant query: each series' value by its labels (``k=v,...``)."""
        answer = httpx.get(f"{self.url}/api/v1/query", params={"query": expression}).json()
        assert answer["status"] == "success", answer
        return {
            ",".join(f"{k}={v}" for k, v in sorted(r["metric"].items())): float(r["value"][1])
            for r in answer["data"]["result"]
        }

    def label_values(self, label: str, match: str) -> list[str]:
        """Grafana's ``label_values(match, label)``, as its Prometheus data source asks it."""
        answer = httpx.get(f"{self.url}/api/v1/label/{label}/values", params={"match[]": match})
        values: list[str] = answer.json()["data"]
        return values

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=60)
        self.log.close()


@pytest.fixture
def metrics_port() -> int:
    return free_port()


@pytest.fixture
def prometheus(tmp_path: Path, metrics_port: int) -> Iterator[Prometheus]:
    server = Prometheus(tmp_path, f"127.0.0.1:{metrics_port}")
    try:
        assert wait_for(server.ready, timeout=60), (tmp_path / "prometheus.log").read_text()
        yield server
    finally:
        server.stop()


def observed_pod(api: KubeApi, name: str, gpus: int, fraction: str = "") -> None:
    """A pod of the queue that only the observed node takes."""
    pod = builders.pod(
        f"observed-{name}",
        gpus=gpus,
        annotations={"gpu-fraction": fraction} if fraction else {},
        labels={"kai.scheduler/queue": QUEUE},
    )
    pod["spec"]["nodeSelector"] = {"pool": "observed"}
    pod["spec"]["tolerations"] = [{**TAINT, "operator": "Equal"}]
    api.create(BY_KIND["Pod"], pod)


def test_kai_dashboards_show_the_cluster(
    local_cluster: LocalCluster, prometheus: Prometheus, metrics_port: int
) -> None:
    """The queue (GPU quota 2) and a 4-GPU node only its pods tolerate; pods of 1, 2 and half a
    GPU, then (once they run: jobs created in the same second have no set order) a 4-GPU pod."""
    api = connect(local_cluster.kubeconfig)
    node = builders.node("observed-node", gpus=4, labels={"pool": "observed"}, taints=[TAINT])
    create_ready_nodes(api, [node], 0.0)
    api.create(BY_KIND["Queue"], builders.queue(QUEUE, gpu=(2, -1, 1)))
    observed_pod(api, "one", 1)
    observed_pod(api, "two", 2)
    observed_pod(api, "half", 0, "0.5")
    with pykai_running(
        local_cluster,
        f"--metrics-address=127.0.0.1:{metrics_port}",
        "--leader-elect",
        "--lease-name=pykai-observed",
        "--log-format=json",
    ) as process:

        def node_of(name: str) -> str:
            pod = api.get(BY_KIND["Pod"], f"observed-{name}", "default") or {}
            return str((pod.get("spec") or {}).get("nodeName") or "")

        assert wait_for(lambda: all(node_of(n) for n in ("one", "two", "half")), timeout=60)
        observed_pod(api, "big", 4)
        ready = httpx.get(f"http://127.0.0.1:{metrics_port}/readyz")
        assert ready.status_code == 200 and "leader" in ready.text
        assert httpx.get(f"http://127.0.0.1:{metrics_port}/healthz").status_code == 200

        allocated = dashboard(ALLOCATED_GPUS)
        assert wait_for(lambda: prometheus.query(allocated) == {f"queue_name={QUEUE}": 3.5}, 60), (
            prometheus.query(allocated)
        )
        assert prometheus.query(dashboard(ALLOCATION_RATIO)) == {f"queue_name={QUEUE}": 1.75}
        # the dashboards' variables: label_values(kai_queue_info, namespace) and queue_name
        assert prometheus.label_values("namespace", "kai_queue_info") == [NAMESPACE]
        assert QUEUE in prometheus.label_values("queue_name", "kai_queue_info")
        latency = prometheus.query(dashboard(E2E_LATENCY))
        assert list(latency) == ["pod=pykai-scheduler-0"] and latency["pod=pykai-scheduler-0"] > 0
        pending = f'sum(pykai_pending_podgroups{{queue="{QUEUE}"}})'
        assert wait_for(lambda: prometheus.query(pending) == {"": 1.0})  # one device is left
        binds = prometheus.query("sum(kai_task_bind_latency_milliseconds_count)")
        assert binds[""] >= 3
        assert prometheus.query("max(pykai_leader)") == {"": 1.0}
        logged = [line for line in process.logged().splitlines() if line.strip()]
    records = [json.loads(line) for line in logged]  # --log-format json: every line
    assert any(r["msg"].startswith("ready:") and r["logger"] == "pykai.run" for r in records)
    assert all({"ts", "level", "logger", "msg"} <= r.keys() for r in records)
