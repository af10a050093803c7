"""pykai run's metrics on the engine alone: KAI's names, labels and units for a known cluster
(KAI's pkg/scheduler/metrics and pkg/queuecontroller/metrics), pykai's own, the snapshot a
standby drops, the health endpoints and the API request counter."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterator

import httpx
import pytest
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from pykai.cli.logs import configure_logging
from pykai.kube.localcluster import free_port
from pykai.kube.metrics import RunMetrics
from pykai.kube.metrics_server import serve_metrics
from pykai.model import constants as c
from pykai.model.builders import node, pod, podgroup, queue
from pykai.model.meta import Obj
from tests.engine.conftest import Engine

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def scrape(metrics: RunMetrics) -> Samples:
    """Every sample of the exposition, by (name, labels)."""
    text = generate_latest(metrics.registry).decode()
    return {
        (s.name, frozenset(s.labels.items())): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples[(name, frozenset(labels.items()))]


def names(samples: Samples) -> set[str]:
    return {name for name, _ in samples}


def job(name: str, *, queue_name: str, gpus: int, pods: int = 1, **extra: str) -> list[Obj]:
    """A PodGroup of ``pods`` pods of ``gpus`` GPUs; ``node_name``/``phase`` make them run."""
    group = podgroup(
        name,
        queue=queue_name,
        min_member=pods,
        priority_class=extra.pop("priority", "train"),
        uid=f"uid-{name}",
        creation="2024-01-01T00:00:00Z",
    )
    if "started" in extra:
        group["metadata"]["annotations"] = {c.LAST_START_ANNOTATION: extra.pop("started")}
    return [
        group,
        *(
            pod(
                f"{name}-{i}",
                group=name,
                gpus=gpus,
                uid=f"uid-{name}-{i}",
                creation="2024-01-01T00:00:00Z",
                **extra,
            )
            for i in range(pods)
        ),
    ]


@pytest.fixture
def cluster() -> Engine:
    """One 8-GPU node; queue "research" (display name "Research", quota 2 CPUs / 1000 MB / 3
    GPUs) and queue "prod" (unlimited cpu and memory quota, 5 GPUs)."""
    engine = Engine()
    research = queue("research", gpu=(3, -1, 1), cpu=(2000, -1, 1), memory=(1000, -1, 1))
    research["spec"]["displayName"] = "Research"
    engine.add([node("n1", gpus=8), research, queue("prod", gpu=(5, -1, 1))])
    return engine


def test_queue_controller_and_scheduler_figures_in_kai_units(cluster: Engine) -> None:
    """research runs 2 GPUs and asks for 8 more (cannot fit); prod starts a 3-GPU job."""
    cluster.add(job("running", queue_name="research", gpus=1, pods=2, node_name="n1"))
    cluster.add(job("waiting", queue_name="research", gpus=8))
    cluster.add(job("new", queue_name="prod", gpus=3))
    result = cluster.cycle()
    assert [b.name for b in result.binds] == ["new-0"]
    metrics = RunMetrics({"scheduler", "queuecontroller"})
    metrics.cycle(result, {"schedule": 0.25, "write": 0.5}, cluster.state)
    samples = scrape(metrics)

    research = {"queue_name": "research", "queue_metadata_name": "research"}
    research["queue_display_name"] = "Research"
    prod = {"queue_name": "prod", "queue_metadata_name": "prod", "queue_display_name": ""}
    assert value(samples, "kai_queue_info", **research) == 1
    assert value(samples, "kai_queue_allocated_gpus", **research) == 2
    assert value(samples, "kai_queue_allocated_gpus", **prod) == 3
    assert value(samples, "kai_queue_allocated_cpu_cores", **research) == 2  # 1 CPU per pod
    assert value(samples, "kai_queue_allocated_memory_bytes", **research) == 2 * 2**30
    assert value(samples, "kai_queue_deserved_gpus", **research) == 3  # KAI: the GPU quota
    assert value(samples, "kai_queue_quota_cpu_cores", **research) == 2  # 2000 millicores
    assert value(samples, "kai_queue_quota_memory_bytes", **research) == 1e9  # 1000 MB
    assert value(samples, "kai_queue_quota_cpu_cores", **prod) == -1  # unlimited stays -1
    # the scheduler's fair share (queue_name is the display name where there is one): each
    # queue deserves its quota up to what it asks for (research 3, prod 3 of its 5); the 2
    # GPUs left go over quota to research, the only queue asking for more
    shared = {**research, "queue_name": "Research"}
    assert value(samples, "kai_queue_fair_share_gpu", **shared) == 5
    assert value(samples, "kai_queue_fair_share_gpu", **prod) == 3
    assert value(samples, "kai_e2e_scheduling_latency_milliseconds") == 750
    actions = {a for (n, labels) in samples for k, a in labels if n.startswith("kai_action_")}
    assert actions == {"allocate", "consolidation", "reclaim", "preempt", "stalegangeviction"}
    assert value(samples, "pykai_pending_podgroups", queue="research", reason="PodSchedulingErrors")
    assert value(samples, "kai_task_scheduling_latency_milliseconds_count") == 1


def test_evictions_and_the_first_start_of_a_podgroup(cluster: Engine) -> None:
    """An inference job preempts a training job of the same queue (KAI's preempt action); a
    job that had started before (last-start annotation) is not counted as a first start."""
    cluster.add(job("train", queue_name="prod", gpus=4, pods=2, node_name="n1", phase="Running"))
    cluster.add(job("serve", queue_name="prod", gpus=4, priority="inference"))
    result = cluster.cycle()
    assert {e.name for e in result.evictions} and result.evictions[0].reason == "Preempted"
    metrics = RunMetrics({"scheduler"})
    metrics.cycle(result, {}, cluster.state)
    samples = scrape(metrics)
    evicted = {"podgroup": "train", "namespace": "default", "uid": "uid-train"}
    evicted |= {"nodepool": "default", "action": "preempt"}
    assert value(samples, "kai_pod_group_evicted_pods_total", **evicted) == len(result.evictions)
    assert "kai_queue_allocated_gpus" not in names(samples)  # not a queue controller
    assert "pykai_podgroup_wait_seconds_count" not in names(samples)  # nothing started yet

    for _ in range(3):  # the victims go; the preemptor starts
        for eviction in result.evictions:
            cluster.state.remove("Pod", eviction.namespace, eviction.name)
        result = cluster.cycle()
        metrics.cycle(result, {}, cluster.state)
    assert "default/serve" in cluster.state.jobs
    started = scrape(metrics)
    assert value(started, "pykai_podgroup_wait_seconds_count", queue="prod") == 1

    again = Engine()
    again.add([node("n1", gpus=8), queue("prod", gpu=(5, -1, 1))])
    again.add(job("back", queue_name="prod", gpus=1, started="2024-01-01T00:00:10Z"))
    restarted = RunMetrics({"scheduler"})
    result = again.cycle()
    assert "default/back" in result.started
    restarted.cycle(result, {}, again.state)
    assert "pykai_podgroup_wait_seconds_count" not in names(scrape(restarted))


def test_a_standby_drops_the_figures_of_the_cycles_it_ran(cluster: Engine) -> None:
    cluster.add(job("new", queue_name="prod", gpus=3))
    metrics = RunMetrics({"scheduler", "queuecontroller"})
    metrics.loop(ready=True, leading=True)
    metrics.cycle(cluster.cycle(), {}, cluster.state)
    assert "kai_queue_allocated_gpus" in names(scrape(metrics))
    metrics.loop(ready=True, leading=False)
    samples = scrape(metrics)
    assert "kai_queue_allocated_gpus" not in names(samples)
    assert value(samples, "pykai_leader") == 0 and value(samples, "pykai_informers_synced") == 1
    assert metrics.ready  # a standby is ready: warm caches for a failover


def test_not_alive_once_the_loop_stops_turning() -> None:
    metrics = RunMetrics({"scheduler"}, stall_after=30.0)
    metrics.loop(ready=False, leading=False)
    assert metrics.alive()
    time.sleep(0.05)
    metrics.stall_after = 0.01  # the loop has not turned for longer than this
    assert not metrics.alive()
    metrics.stall_after = 30.0
    metrics.loop(ready=False, leading=False)
    assert metrics.alive()


@pytest.fixture
def served() -> Iterator[tuple[RunMetrics, str]]:
    metrics = RunMetrics({"scheduler"}, stall_after=30.0)  # no stall on a loaded machine
    server = serve_metrics(("127.0.0.1", free_port()), metrics)
    yield metrics, f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def test_health_endpoints(served: tuple[RunMetrics, str]) -> None:
    metrics, url = served
    assert httpx.get(f"{url}/readyz").status_code == 503  # informers not listed yet
    assert httpx.get(f"{url}/healthz").status_code == 200
    metrics.loop(ready=True, leading=False)
    ready = httpx.get(f"{url}/readyz")
    assert ready.status_code == 200 and "standby" in ready.text
    metrics.loop(ready=True, leading=True)
    assert "leader" in httpx.get(f"{url}/readyz").text
    scraped = httpx.get(f"{url}/metrics")
    assert scraped.headers["content-type"].startswith("text/plain; version=0.0.4")
    assert "pykai_leader 1.0" in scraped.text
    assert httpx.get(f"{url}/nothing").status_code == 404
    metrics.stall_after = 0.0  # any time since the last turn is now a stall
    assert httpx.get(f"{url}/healthz").status_code == 503


def test_api_requests_are_counted_by_method_and_code() -> None:
    def answer(request: httpx.Request) -> httpx.Response:
        return httpx.Response(404 if request.url.path == "/missing" else 200, json={})

    metrics = RunMetrics({"scheduler"})
    client = httpx.Client(transport=httpx.MockTransport(answer), base_url="http://api")
    metrics.count_requests(client)
    for path in ("/a", "/b", "/missing"):
        client.get(path)
    client.patch("/a")
    samples = scrape(metrics)
    assert value(samples, "pykai_api_requests_total", method="GET", code="200") == 2
    assert value(samples, "pykai_api_requests_total", method="GET", code="404") == 1
    assert value(samples, "pykai_api_requests_total", method="PATCH", code="200") == 1


def test_json_log_lines(capsys: pytest.CaptureFixture[str]) -> None:
    root = logging.getLogger()
    kept = root.handlers[:], root.level
    try:
        configure_logging("info", "json")
        logging.getLogger("pykai.run").info("cycle: %d binds", 3)
        logging.getLogger("pykai.run").debug("not shown")
        try:
            raise RuntimeError("boom")
        except RuntimeError:
            logging.getLogger("pykai.api").exception("failed")
    finally:
        root.handlers[:], root.level = kept
    lines = [json.loads(line) for line in capsys.readouterr().err.splitlines()]
    assert [(x["level"], x["logger"], x["msg"]) for x in lines] == [
        ("INFO", "pykai.run", "cycle: 3 binds"),
        ("ERROR", "pykai.api", "failed"),
    ]
    assert "RuntimeError: boom" in lines[1]["exc_info"] and lines[0]["ts"].endswith("+00:00")
