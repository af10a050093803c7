"""Hostile objects, generated: whatever is stored, the engine and every controller go on.

Objects are stored straight into the embedded cluster's store (as another client of an API
server would store them, with no admission check) and into ``pykai run``'s object cache; the
shapes range from what a kube-apiserver stores (typed pods with any quantity, any annotation)
to anything a CRD with ``x-kubernetes-preserve-unknown-fields`` takes (any JSON in spec).

What must hold after each example (issue 10):
- no exception escapes a controller or the engine;
- no node is over-allocated by pykai: a node pykai bound a pod to holds no more whole GPUs,
  shared devices, cpu or memory than it has (pods counted as the engine must count them:
  whatever they hold, readable or not);
- a valid pod still binds (on a node the hostile objects cannot reach);
- a round's time stays bounded (a generous limit: a hang or an explosion, not speed).
"""

from __future__ import annotations

import copy
import math
import time
from typing import Any

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from pykai.embedded.cluster import EmbeddedCluster
from pykai.kube.api import ApiError, KubeApi
from pykai.kube.binding import RESERVATION_NAMESPACE
from pykai.kube.informer import Change
from pykai.kube.runner import KubeRunner
from pykai.kube.watched import NEEDS
from pykai.model import constants as c
from pykai.model.builders import node, pod, podgroup, queue
from pykai.model.kinds import BY_KIND, KindSpec
from pykai.model.meta import Obj
from pykai.model.names import MAX_NAME
from pykai.model.pod import read_pod
from pykai.model.quantity import saturated_amount
from tests.inline import InlineExecutor

CLEAN_TAINT = {"key": "clean", "value": "only", "effect": "NoSchedule"}
ROUND_LIMIT = 60.0  # seconds: far above any real round; only a hang or an explosion fails it

scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=12)
)
json_values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=8,
)
quantities = st.one_of(
    st.sampled_from(
        ["1", "0", "2", "8", "500m", "1Gi", "1e400", "1E3", "-1", "1.5", "abc", "", ".5", "1Ei"]
    ),
    st.sampled_from(
        ["9" * 40, "1e-400", "0.000000001", "7Ti", "+3", "1e18", "9223372036854775807"]
    ),
    st.integers(min_value=-3, max_value=2**66),
    st.floats(allow_nan=True, allow_infinity=True),
)
names = st.sampled_from(["a", "b", "c", "d", "x" * 240])
sharing = st.dictionaries(
    st.sampled_from(
        [
            c.GPU_FRACTION_ANNOTATION,
            c.GPU_MEMORY_ANNOTATION,
            c.GPU_FRACTION_NUM_DEVICES_ANNOTATION,
            c.POD_GROUP_ANNOTATION,
        ]
    ),
    st.sampled_from(["0.5", "1", "abc", "2", "0", "-1", "1e400", "4000", "g", "nan", "9" * 30]),
    max_size=3,
)


def maybe(strategy: st.SearchStrategy[Any], value: Any) -> st.SearchStrategy[Any]:
    """Usually ``value``-shaped from ``strategy``; sometimes any JSON at all."""
    return st.one_of(strategy, strategy, strategy, json_values) if value is None else strategy


@st.composite
def hostile_pods(draw: st.DrawFn) -> Obj:
    name = draw(names) + "-pod"
    resources = draw(
        st.dictionaries(
            st.sampled_from(["requests", "limits"]),
            st.dictionaries(
                st.sampled_from(["cpu", "memory", c.GPU_RESOURCE, "example.com/foo"]), quantities
            ),
        )
    )
    obj = pod(
        name,
        node_name=draw(st.sampled_from(["", "", "n1", "n2", "missing"])),
        scheduler=draw(st.sampled_from([c.SCHEDULER_NAME, c.SCHEDULER_NAME, "default-scheduler"])),
        annotations=draw(sharing),
        labels=draw(st.dictionaries(st.sampled_from([c.GPU_GROUP_LABEL, c.QUEUE_LABEL]), names)),
        phase=draw(st.sampled_from(["", "Running", "Pending", "Succeeded", "Unknown"])),
    )
    obj["spec"]["containers"][0]["resources"] = resources
    obj["spec"]["priorityClassName"] = draw(st.sampled_from(["", "train", "missing", "inference"]))
    if draw(st.booleans()):  # a field of the wrong shape, as only a CRD-less store keeps it
        field = draw(st.sampled_from(["containers", "nodeSelector", "affinity", "tolerations"]))
        obj["spec"][field] = draw(json_values)
    return obj


@st.composite
def hostile_podgroups(draw: st.DrawFn) -> Obj:
    obj = podgroup(draw(names), queue=draw(st.sampled_from(["team", "missing", "loop-a", ""])))
    for field in ("minMember", "priorityClassName", "subGroups", "preemptibility", "queue"):
        if draw(st.integers(0, 4)) == 0:
            obj["spec"][field] = draw(json_values)
    return obj


@st.composite
def hostile_queues(draw: st.DrawFn) -> Obj:
    name = draw(st.sampled_from(["loop-a", "loop-b", "odd", "team"]))
    obj = queue(name, parent=draw(st.sampled_from(["", "loop-a", "loop-b", "gone"])))
    for resource in ("cpu", "gpu", "memory"):
        for field in ("quota", "limit", "overQuotaWeight"):
            if draw(st.integers(0, 3)) == 0:
                obj["spec"]["resources"][resource][field] = draw(scalars)
    if draw(st.integers(0, 5)) == 0:
        obj["spec"] = draw(json_values)
    return obj


@st.composite
def hostile_nodes(draw: st.DrawFn) -> Obj:
    obj = node(draw(st.sampled_from(["n1", "n2", "n4"])))
    allocatable = obj["status"]["allocatable"]
    for resource in ("cpu", "memory", c.GPU_RESOURCE, "pods"):
        if draw(st.integers(0, 2)) == 0:
            allocatable[resource] = draw(quantities)
    if draw(st.integers(0, 4)) == 0:
        obj["metadata"]["labels"][c.GPU_MEMORY_NODE_LABEL] = draw(st.text(max_size=8))
    if draw(st.integers(0, 4)) == 0:
        obj["spec"]["taints"] = draw(json_values)
    return obj


@st.composite
def hostile_workloads(draw: st.DrawFn) -> Obj:
    template = {
        "metadata": {"labels": {"app": "w", c.QUEUE_LABEL: "team"}},
        "spec": {"schedulerName": c.SCHEDULER_NAME, "containers": [{"name": "c"}]},
    }
    count = st.one_of(st.integers(min_value=-2, max_value=4), st.sampled_from(["3", "x"]), scalars)
    kind = draw(st.sampled_from(["Deployment", "ReplicaSet", "Job", "RayCluster"]))
    meta = {"name": draw(names) + "-w", "namespace": "default", "labels": {c.QUEUE_LABEL: "team"}}
    if kind == "RayCluster":
        spec: Obj = {
            "headGroupSpec": {"template": template},
            "workerGroupSpecs": [
                {
                    "groupName": "w",
                    "replicas": draw(count),
                    "minReplicas": draw(count),
                    "numOfHosts": draw(count),
                    "template": draw(maybe(st.just(template), None)),
                }
            ],
        }
        api = "ray.io/v1"
    else:
        field = {"Job": "parallelism"}.get(kind, "replicas")
        spec = {
            field: draw(count),
            "selector": {"matchLabels": {"app": "w"}},
            "template": draw(maybe(st.just(template), None)),
        }
        api = "batch/v1" if kind == "Job" else "apps/v1"
    return {"apiVersion": api, "kind": kind, "metadata": meta, "spec": spec}


@st.composite
def hostile_misc(draw: st.DrawFn) -> Obj:
    if draw(st.booleans()):
        return {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": draw(st.sampled_from(["train", "odd-class"]))},
            "value": draw(scalars),
        }
    return {  # only placement may change (a valid shard could switch allocate off)
        "apiVersion": "kai.scheduler/v1",
        "kind": "SchedulingShard",
        "metadata": {"name": "default"},
        "spec": {"placementStrategy": draw(json_values)},
    }


hostile_objects = st.lists(
    st.one_of(
        hostile_pods(),
        hostile_podgroups(),
        hostile_queues(),
        hostile_nodes(),
        hostile_workloads(),
        hostile_misc(),
    ),
    min_size=1,
    max_size=8,
)


def clean_cluster() -> EmbeddedCluster:
    """Two GPU nodes the hostile objects reach, and n3, which only the probe tolerates."""
    cluster = EmbeddedCluster.open(None)
    cluster.apply(
        [node("n1"), node("n2"), node("n3", labels={"pool": "clean"}, taints=[CLEAN_TAINT])]
    )
    cluster.apply([queue("team"), queue("probe-queue")])
    return cluster


def probe() -> list[Obj]:
    """A valid one-GPU job that only n3 takes, and 17 one-GPU fillers for n1 and n2: if what
    hostile pods hold there were not counted, fillers would over-allocate those nodes."""
    probe_pod = pod("probe", group="probe", gpus=1)
    probe_pod["spec"]["nodeSelector"] = {"pool": "clean"}
    probe_pod["spec"]["tolerations"] = [{"key": "clean", "operator": "Exists"}]
    fillers = [
        obj
        for i in range(17)
        for obj in (
            podgroup(f"filler-{i}", queue="probe-queue"),
            pod(f"filler-{i}", group=f"filler-{i}", gpus=1, cpu="100m", memory="64Mi"),
        )
    ]
    return [podgroup("probe", queue="probe-queue", priority_class="inference"), probe_pod, *fillers]


def store(cluster: EmbeddedCluster, obj: Obj) -> None:
    """Create or replace ``obj`` without any check, as another client of the store."""
    meta = obj["metadata"]
    if cluster.get(obj["kind"], meta["name"], meta.get("namespace", "")) is None:
        cluster.create(obj)
    else:
        cluster.update(obj)


def held(pod_obj: Obj) -> tuple[float, float, float, tuple[str, ...]]:
    """(cpu millis, memory bytes, whole GPUs, shared GPU groups) a stored pod holds, read
    directly: what is unreadable counts as nothing, amounts past int64 as int64."""
    view, _ = read_pod(pod_obj)
    labels = pod_obj["metadata"].get("labels") or {}
    groups = tuple(v for k, v in labels.items() if k.startswith(c.GPU_GROUP_LABEL))
    return view.requests.cpu, view.requests.memory, view.requests.gpu, groups


def over_allocated(cluster: EmbeddedCluster, prebound: set[str]) -> list[str]:
    """Nodes pykai bound a pod to that hold more than they have."""
    return over_allocated_on(cluster.list("Node"), cluster.list("Pod"), prebound)


def over_allocated_on(nodes: list[Obj], all_pods: list[Obj], prebound: set[str]) -> list[str]:
    """Of ``nodes``, those that hold more of a resource than they have where pykai bound a pod
    that asks for some of it (GPU reservation pods excluded: their device is the shared group
    already counted). A pod that asks for none of it fits whatever the node holds, as in
    kube-scheduler, so a node that hostile pods bound by hand overfill is no finding by itself."""
    problems = []
    pods = [
        p
        for p in all_pods
        if (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed")
        and p["metadata"].get("namespace") != RESERVATION_NAMESPACE
    ]
    for node_obj in nodes:
        name = node_obj["metadata"]["name"]
        mine = [p for p in pods if p["spec"].get("nodeName") == name]
        placed = [held(p) for p in mine if p["metadata"]["name"] not in prebound]
        if not placed:
            continue  # pykai put nothing here
        allocatable = node_obj["status"]["allocatable"]
        cpu = saturated_amount("cpu", allocatable.get("cpu"))
        memory = saturated_amount("memory", allocatable.get("memory"))
        gpus = saturated_amount(c.GPU_RESOURCE, allocatable.get(c.GPU_RESOURCE, 0))
        totals = [held(p) for p in mine]
        whole = sum(t[2] for t in totals if not t[3])
        shared = len({g for t in totals for g in t[3]})
        for index, resource, capacity in ((0, "cpu", cpu), (1, "memory", memory)):
            over = sum(t[index] for t in totals) > capacity + 1e-6
            if over and any(t[index] > 0 for t in placed):
                problems.append(f"{name}: {resource}")
        gpus_placed = any(t[2] > 0 or t[3] for t in placed)
        if whole + shared > gpus + 1e-6 and not math.isinf(gpus) and gpus_placed:
            problems.append(f"{name}: {whole} whole + {shared} shared GPUs > {gpus}")
    return problems


@settings(
    max_examples=120,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(hostile_objects)
@example(  # found by this test: the victim search looked up the missing queue "a" of a
    # running job, and every cycle failed, so nothing was scheduled anywhere
    [
        pod("a-pod", node_name="n1", labels={c.GPU_GROUP_LABEL: "a", c.QUEUE_LABEL: "a"}),
    ]
)
@example(  # found by this test: a pod asking for no cpu or memory fits on a node that a pod
    # bound by hand overfills (as in kube-scheduler); pykai made that node no fuller
    [
        pod("b-pod", node_name="n1", cpu="9999999999999999999999999999999999999999"),
        pod("a-pod", cpu="0", memory="0"),
    ]
)
@example(  # found by this test: an update of n1 no reader foresaw (``spec.taints: true``)
    # was skipped, so the engine kept n1's last readable version, free for new pods, while the
    # stored n1 offered one GPU: fillers over-allocated it. Such a node now takes nothing new.
    [
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": "n1", "labels": {"kubernetes.io/hostname": "n1"}},
            "spec": {"taints": True},
            "status": {"allocatable": {"cpu": "1", "memory": "1", c.GPU_RESOURCE: "1"}},
        }
    ]
)
def test_hostile_objects_never_stop_the_embedded_cluster(objects: list[Obj]) -> None:
    cluster = clean_cluster()
    prebound = {
        o["metadata"]["name"] for o in objects if o["kind"] == "Pod" and o["spec"].get("nodeName")
    }
    for obj in objects:
        store(cluster, obj)
    started = time.monotonic()
    cluster.settle(max_cycles=20)
    assert time.monotonic() - started < ROUND_LIMIT
    cluster.apply(probe(), max_cycles=20)
    found = cluster.get("Pod", "probe", "default")
    assert found is not None and found["spec"].get("nodeName") == "n3"
    assert over_allocated(cluster, prebound) == []


# ---- the same objects in pykai run's cache ------------------------------------------------------


class MemoryApi(KubeApi):
    """What ``pykai run`` asks of an apiserver, kept in memory; each write is reported back
    through the runner's change queue as a watch would report it. It stores whatever it is
    given (no admission), and refuses what a real apiserver refuses on writes pykai makes:
    names over 253 characters (422). (No HTTP client: KubeApi's own methods that would use
    one are not called by the runner's components.)"""

    def __init__(self) -> None:  # no client to make
        self.objects: dict[tuple[str, str, str], Obj] = {}
        self.runner: KubeRunner | None = None

    def _tell(self, kind: str, change: str, obj: Obj) -> None:
        assert self.runner is not None
        self.runner.host.changes.put(Change(kind, change, copy.deepcopy(obj)))

    def get(self, kind: KindSpec, name: str, namespace: str = "") -> Obj | None:
        found = self.objects.get((kind.kind, namespace, name))
        return copy.deepcopy(found) if found is not None else None

    def create(self, kind: KindSpec, obj: Obj) -> Obj:
        meta = obj["metadata"]
        if len(meta["name"]) > MAX_NAME:
            raise ApiError(422, f"metadata.name: must be no more than {MAX_NAME} characters")
        key = (kind.kind, meta.get("namespace", "") if kind.namespaced else "", meta["name"])
        if key in self.objects:
            raise ApiError(409, "already exists")
        stored = {**copy.deepcopy(obj), "kind": kind.kind}
        stored["metadata"].setdefault("uid", f"uid-{len(self.objects)}")
        self.objects[key] = stored
        self._tell(kind.kind, "ADDED", stored)
        return copy.deepcopy(stored)

    def patch(
        self, kind: KindSpec, name: str, patch: Obj, namespace: str = "", sub: str = ""
    ) -> Obj:
        key = (kind.kind, namespace if kind.namespaced else "", name)
        if key not in self.objects:
            raise ApiError(404, "not found")
        self.objects[key] = merged = _merge(self.objects[key], patch)
        self._tell(kind.kind, "MODIFIED", merged)
        return copy.deepcopy(merged)

    def delete(
        self, kind: KindSpec, name: str, namespace: str = "", grace: int | None = None
    ) -> None:
        gone = self.objects.pop((kind.kind, namespace if kind.namespaced else "", name), None)
        if gone is None:
            raise ApiError(404, "not found")
        self._tell(kind.kind, "DELETED", gone)

    def bind(self, namespace: str, name: str, node: str, uid: str = "") -> None:
        self.patch(BY_KIND["Pod"], name, {"spec": {"nodeName": node}}, namespace)


def _merge(target: Obj, patch: Obj) -> Obj:
    """A JSON merge patch (RFC 7386)."""
    result = copy.deepcopy(target)
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        elif isinstance(value, dict) and isinstance(result.get(key), dict):
            result[key] = _merge(result[key], value)
        else:
            result[key] = copy.deepcopy(value)
    return result


def kube_runner(objects: list[Obj]) -> tuple[KubeRunner, MemoryApi]:
    """A runner (every component ``pykai run`` takes, the ProvisioningRequest stand-in
    included) whose cache was listed from ``objects`` and the clean cluster."""
    api = MemoryApi()
    runner = KubeRunner(
        api, components=frozenset(NEEDS), pool=InlineExecutor(), bind_pool=InlineExecutor()
    )
    api.runner = runner
    base = clean_cluster()
    for obj in [*base.list("PriorityClass"), *base.list("Queue"), *base.list("Node"), *objects]:
        namespaced = BY_KIND[obj["kind"]].namespaced
        meta = obj["metadata"]
        api.objects[
            (obj["kind"], meta.get("namespace", "") if namespaced else "", meta["name"])
        ] = copy.deepcopy(obj)
    for listed_kind in runner.kinds:
        listed = tuple(copy.deepcopy(o) for k, o in api.objects.items() if k[0] == listed_kind)
        runner.host.apply(Change(listed_kind, "SYNC", None, listed))
    return runner, api


def run_cycles(runner: KubeRunner, count: int) -> None:
    for _ in range(count):
        runner.host.drain()
        runner.cycle()
    runner.host.drain()


@settings(
    max_examples=80,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(hostile_objects)
def test_hostile_objects_never_stop_pykai_run(objects: list[Obj]) -> None:
    distinct = {  # pykai run reads its scheduler config from a file, not a SchedulingShard
        (o["kind"], o["metadata"]["name"]): o for o in objects if o["kind"] != "SchedulingShard"
    }
    runner, api = kube_runner(list(distinct.values()))
    prebound = {
        o["metadata"]["name"]
        for o in distinct.values()
        if o["kind"] == "Pod" and o["spec"].get("nodeName")
    }
    started = time.monotonic()
    run_cycles(runner, 4)
    assert time.monotonic() - started < ROUND_LIMIT
    for obj in probe():
        api.create(BY_KIND[obj["kind"]], obj)
    run_cycles(runner, 3)
    found = api.objects[("Pod", "default", "probe")]
    assert found["spec"].get("nodeName") == "n3"
    nodes = [o for k, o in api.objects.items() if k[0] == "Node"]
    pods = [o for k, o in api.objects.items() if k[0] == "Pod"]
    assert over_allocated_on(nodes, pods, prebound) == []
