"""Binding while deciding (kube/host.py ``bind_early``): each allocation is bound as soon as
its statement commits, never one the cycle drops (a gang that does not fit), never twice, and
a refused one is rolled back and held as a bind made after the cycle. On the real apiserver a
pod on whole GPUs costs one write. A stopping process drops its queued writes."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import cast

import httpx
import pytest

from pykai.controllers.outcome import carry_out
from pykai.engine.jobs import HOLDS_NODE, TaskStatus
from pykai.engine.scheduler import Scheduler
from pykai.kube.api import ApiError, KubeApi, connect
from pykai.kube.host import KubeHost
from pykai.kube.informer import Change
from pykai.kube.localcluster import LocalCluster
from pykai.kube.nodes import create_ready_nodes
from pykai.kube.runner import KubeRunner
from pykai.model import builders
from pykai.model.kinds import BY_KIND
from pykai.model.meta import Obj
from tests.inline import InlineExecutor
from tests.kube.conftest import wait_for

QUEUE = "early-queue"


class RecordingApi:
    """Records each bind with the pod's task status in the engine at that moment; refuses
    the pods named in ``refuse``."""

    def __init__(self, refuse: frozenset[str] = frozenset()) -> None:
        self.refuse = refuse
        self.host: KubeHost | None = None
        self.binds: list[tuple[str, str, str, TaskStatus | None]] = []

    def bind(self, namespace: str, name: str, node: str, uid: str = "") -> None:
        assert self.host is not None
        task = self.host.state.task_by_key(namespace, name)
        self.binds.append((name, node, uid, task.status if task else None))
        if name in self.refuse:
            raise ApiError(403, f"pods/binding of {name} refused")


def gang(name: str, size: int, gpus: int) -> list[Obj]:
    pods = [
        builders.pod(f"{name}-{i}", gpus=gpus, group=name, uid=f"uid-{name}-{i}")
        for i in range(size)
    ]
    return [builders.podgroup(name, queue=QUEUE, min_member=size), *pods]


def host_with(api: RecordingApi, objects: list[Obj]) -> KubeHost:
    """A host whose binds run at once, on the deciding thread (so each is seen mid-cycle)."""
    host = KubeHost(cast(KubeApi, api), InlineExecutor(), bind_pool=InlineExecutor())
    api.host = host
    for kind in ("PriorityClass", "Queue", "Node", "PodGroup", "Pod", "BindRequest"):
        listed = tuple(o for o in objects if o["kind"] == kind)
        host.apply(Change(kind, "SYNC", None, listed))
    return host


def cluster_of_eight_gpus(*workloads: list[Obj]) -> list[Obj]:
    base = [builders.queue(QUEUE), builders.node("n1", gpus=8)]
    return base + [obj for workload in workloads for obj in workload]


def test_binds_start_as_statements_commit_and_only_for_committed_allocations() -> None:
    api = RecordingApi()
    # "fits" takes 4 of the 8 GPUs; "too-big" needs 6 more and is rolled back whole
    host = host_with(api, cluster_of_eight_gpus(gang("fits", 2, 2), gang("too-big", 3, 2)))
    result = Scheduler().run_cycle(host.state, time.time(), host.bind_early)
    told = sorted((name, node, uid) for name, node, uid, _ in api.binds)
    decided = sorted((b.name, b.node, b.uid) for b in result.binds)
    assert told == decided == [("fits-0", "n1", "uid-fits-0"), ("fits-1", "n1", "uid-fits-1")]
    # each was bound while the cycle still decided (the close turns Allocated into Binding)
    assert [status for *_, status in api.binds] == [TaskStatus.ALLOCATED] * 2
    carry_out(host, result, scheduled_events=False)
    assert len(api.binds) == 2  # carried out from the early answers, not written again


def test_a_refused_early_bind_is_rolled_back_and_held() -> None:
    api = RecordingApi(refuse=frozenset({"alone-b-0"}))
    host = host_with(api, cluster_of_eight_gpus(gang("alone-a", 1, 4), gang("alone-b", 1, 4)))
    result = Scheduler().run_cycle(host.state, time.time(), host.bind_early)
    assert {b.name for b in result.binds} == {"alone-a-0", "alone-b-0"}
    carry_out(host, result, scheduled_events=False)
    refused = host.state.task_by_key("default", "alone-b-0")
    kept = host.state.task_by_key("default", "alone-a-0")
    assert refused is not None and kept is not None
    assert refused.status not in HOLDS_NODE  # its GPUs are free again
    assert kept.status in HOLDS_NODE
    assert host.backoff.held("uid-alone-b-0", time.time())
    assert len(api.binds) == 2


def test_a_cycle_that_fails_after_its_binds_started_leaves_them_in_the_cache() -> None:
    """The cycle fails before its carry-out (a bug): the state is rebuilt from the cache, in
    which the pods bound early are bound (the refused one is not), so the next cycle cannot
    place them again before their watch events come."""
    api = RecordingApi(refuse=frozenset({"alone-b-0"}))
    host = host_with(api, cluster_of_eight_gpus(gang("alone-a", 1, 4), gang("alone-b", 1, 4)))
    Scheduler().run_cycle(host.state, time.time(), host.bind_early)
    host.end_cycle()  # as the runner does when a round fails
    host.rebuild_state()
    host.drain()
    assert (host.get("Pod", "alone-a-0", "default") or {})["spec"]["nodeName"] == "n1"
    assert not (host.get("Pod", "alone-b-0", "default") or {})["spec"].get("nodeName")
    kept, refused = (host.state.task_by_key("default", f"alone-{x}-0") for x in "ab")
    assert kept is not None and kept.status in HOLDS_NODE and kept.node == "n1"
    assert refused is not None and refused.status not in HOLDS_NODE


class SlowApi(RecordingApi):
    """Answers each bind once ``release`` is set."""

    def __init__(self, refuse: frozenset[str] = frozenset()) -> None:
        super().__init__(refuse)
        self.release = threading.Event()

    def bind(self, namespace: str, name: str, node: str, uid: str = "") -> None:
        assert self.release.wait(30)
        super().bind(namespace, name, node, uid)


def test_a_round_does_not_wait_for_a_bind_under_way_and_a_later_round_takes_its_answer() -> None:
    """The carry-out leaves a bind still under way to a later round: a refused one is then
    rolled back and held, a bound one is cached as bound; meanwhile the engine assumes both."""
    api = SlowApi(refuse=frozenset({"alone-b-0"}))
    with ThreadPoolExecutor(2) as binds:
        host = KubeHost(cast(KubeApi, api), InlineExecutor(), bind_pool=binds)
        api.host = host
        objects = cluster_of_eight_gpus(gang("alone-a", 1, 4), gang("alone-b", 1, 4))
        for kind in ("PriorityClass", "Queue", "Node", "PodGroup", "Pod", "BindRequest"):
            host.apply(Change(kind, "SYNC", None, tuple(o for o in objects if o["kind"] == kind)))
        result = Scheduler().run_cycle(host.state, time.time(), host.bind_early)
        carry_out(host, result, scheduled_events=False)  # returns with both binds under way
        assert api.binds == [] and host.bind_answers() == []
        for name in ("alone-a-0", "alone-b-0"):
            task = host.state.task_by_key("default", name)
            assert task is not None and task.status in HOLDS_NODE  # assumed meanwhile
        api.release.set()
        binds.shutdown(wait=True)  # both answered
        carry_out(host, Scheduler().run_cycle(host.state, time.time(), host.bind_early))
        host.drain()
    refused = host.state.task_by_key("default", "alone-b-0")
    kept = host.state.task_by_key("default", "alone-a-0")
    assert refused is not None and refused.status not in HOLDS_NODE
    assert host.backoff.held("uid-alone-b-0", time.time())
    assert kept is not None and kept.status in HOLDS_NODE and kept.node == "n1"
    assert (host.get("Pod", "alone-a-0", "default") or {})["spec"]["nodeName"] == "n1"
    assert len(api.binds) == 2  # each bind written once


@pytest.fixture
def api(local_cluster: LocalCluster) -> Iterator[KubeApi]:
    admin = connect(local_cluster.kubeconfig)
    admin.create_if_absent(BY_KIND["Namespace"], {"metadata": {"name": "early"}})
    admin.create_if_absent(BY_KIND["Queue"], builders.queue(QUEUE))
    create_ready_nodes(admin, [builders.node("early-node", gpus=16)], time.time())
    yield admin
    for pod in admin.list(BY_KIND["Pod"])[0]:
        if pod["metadata"]["namespace"] == "early":
            admin.delete(BY_KIND["Pod"], pod["metadata"]["name"], "early", grace_seconds=0)
    admin.delete(BY_KIND["Node"], "early-node")


def in_namespace(objects: list[Obj]) -> list[Obj]:
    for obj in objects:
        obj["metadata"]["namespace"] = "early"
        obj["spec"].pop("nodeSelector", None)
    return objects


def test_a_whole_gpu_bind_is_one_write(api: KubeApi) -> None:
    """The scheduler alone, no Scheduled events: the only write to each pod is its Binding
    (the PodGroups' status goes to the podgroups resource)."""
    objects = in_namespace(gang("solo", 1, 1) + gang("pair", 2, 2))
    for obj in objects:
        api.create(BY_KIND[obj["kind"]], obj)
    pod_writes: list[tuple[str, str]] = []

    def record(request: httpx.Request) -> None:
        if request.method != "GET" and "/namespaces/early/pods" in request.url.path:
            pod_writes.append((request.method, request.url.path))

    def record_raw(method: str, path: str, status: int) -> None:
        if "/namespaces/early/pods" in path:
            pod_writes.append((method, path))

    runner = KubeRunner(api, components=frozenset({"scheduler"}), scheduled_events=False)
    api.http.event_hooks["request"].append(record)
    assert api.poster is not None  # binds go raw (kube/rawpost.py)
    api.poster.answered.append(record_raw)
    stop = threading.Event()
    thread = threading.Thread(target=runner.run, args=(stop, 0.1), daemon=True)
    thread.start()
    try:
        names = [o["metadata"]["name"] for o in objects if o["kind"] == "Pod"]

        def all_bound() -> bool:
            pods = [api.get(BY_KIND["Pod"], name, "early") or {} for name in names]
            return all((pod.get("spec") or {}).get("nodeName") for pod in pods)

        assert wait_for(all_bound, timeout=120)
        assert wait_for(lambda: runner.cycles >= 3, timeout=60)  # later cycles write nothing
    finally:
        stop.set()
        thread.join(60)
        api.http.event_hooks["request"].remove(record)
        api.poster.answered.remove(record_raw)
    assert sorted(pod_writes) == sorted(
        ("POST", f"/api/v1/namespaces/early/pods/{name}/binding") for name in names
    )


def test_stopping_drops_queued_writes_and_finishes_those_under_way() -> None:
    """SIGTERM after a big cycle: thousands of queued status writes (each waiting out a
    timeout if the apiserver is gone) must not hold the process; a write under way ends."""
    pool = ThreadPoolExecutor(1)
    started, release = threading.Event(), threading.Event()
    done: list[str] = []

    def under_way() -> None:
        started.set()
        release.wait(60)
        done.append("under way")

    pool.submit(under_way)
    queued = [pool.submit(done.append, "queued") for _ in range(100)]
    assert started.wait(60)
    runner = KubeRunner(cast(KubeApi, None), components=frozenset({"scheduler"}), pool=pool)
    stop = threading.Event()
    stop.set()
    threading.Timer(0.2, release.set).start()
    runner.run(stop)  # returns once the write under way has ended
    assert done == ["under way"]
    assert all(future.cancelled() for future in queued)
