"""Faults on a real control plane: pykai killed with SIGKILL in the middle of binding and
started again, the apiserver restarted under it, and a bind that keeps failing (KAI #2074).
What must hold: no pod bound twice, no gang half-bound once pykai settles, no GPU
over-allocated (whole devices and shared GPU groups), and other jobs are not starved."""

from __future__ import annotations

import signal
import time
from collections import Counter, defaultdict
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import yaml

from pykai.kube.api import KubeApi, connect
from pykai.kube.binding import RESERVATION_NAMESPACE
from pykai.kube.localcluster import LocalCluster
from pykai.kube.nodes import create_ready_nodes, gpu_nodes
from pykai.model import builders
from pykai.model.kinds import BY_KIND
from pykai.model.meta import Obj
from tests.kube.conftest import (
    account_kubeconfig,
    allowed,
    fresh_cluster,
    kubectl,
    pykai_running,
    start_pykai,
    wait_for,
)

NODES, GPUS = 6, 4


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    with fresh_cluster(tmp_path_factory.mktemp("faults")) as local:
        create_ready_nodes(
            connect(local.kubeconfig),
            gpu_nodes(NODES, GPUS),
            time.time(),
        )
        yield local


def create_all(api: KubeApi, objects: list[Obj]) -> None:
    """Create objects with parallel writes (PodGroups first)."""
    for obj in objects:
        if obj["kind"] != "Pod":
            api.create(BY_KIND[obj["kind"]], obj)
    with ThreadPoolExecutor(16) as pool:
        list(
            pool.map(
                lambda o: api.create(BY_KIND["Pod"], o), [o for o in objects if o["kind"] == "Pod"]
            )
        )


def live_pods(api: KubeApi, namespace: str = "") -> list[Obj]:
    pods, _ = api.list(BY_KIND["Pod"])
    return [
        p
        for p in pods
        if p["metadata"]["namespace"] != RESERVATION_NAMESPACE
        and (not namespace or p["metadata"]["namespace"] == namespace)
    ]


def assert_no_overallocation(api: KubeApi) -> None:
    """Per node: whole GPUs + shared devices ≤ its GPUs; per shared group: portions ≤ 1."""
    whole: Counter[str] = Counter()
    groups: dict[str, set[str]] = defaultdict(set)
    portions: Counter[str] = Counter()
    for pod in live_pods(api):
        node = pod["spec"].get("nodeName")
        if not node:
            continue
        labels = pod["metadata"].get("labels") or {}
        fraction = (pod["metadata"].get("annotations") or {}).get("gpu-fraction")
        if fraction:
            group = labels["runai-gpu-group"]
            groups[node].add(group)
            portions[group] += float(fraction)
        else:
            limits = pod["spec"]["containers"][0].get("resources", {}).get("limits", {})
            whole[node] += int(limits.get("nvidia.com/gpu", 0))
    for node in {*whole, *groups}:
        assert whole[node] + len(groups[node]) <= GPUS, (node, whole[node], groups[node])
    assert all(total <= 1.0 + 1e-9 for total in portions.values()), portions


def gangs_bound(api: KubeApi, namespace: str = "default") -> dict[str, int]:
    """PodGroup -> pods bound (gang members carry the PodGroup annotation)."""
    counts: Counter[str] = Counter()
    for pod in live_pods(api, namespace):
        group = (pod["metadata"].get("annotations") or {}).get("pod-group-name")
        if group:
            counts[group] += bool(pod["spec"].get("nodeName"))
    return dict(counts)


def test_sigkill_mid_bind_then_restart(cluster: LocalCluster) -> None:
    api = connect(cluster.kubeconfig)
    objects: list[Obj] = [builders.queue("faults")]
    for g in range(8):  # 8 gangs × 4 whole GPUs each = 32 GPUs wanted, 24 exist
        objects.append(builders.podgroup(f"gang-{g}", queue="faults", min_member=4))
        objects += [builders.pod(f"gang-{g}-{i}", group=f"gang-{g}", gpus=1) for i in range(4)]
    for i in range(8):  # 8 half-GPU pods: shared GPU groups through BindRequests
        objects.append(builders.podgroup(f"half-{i}", queue="faults"))
        objects.append(
            builders.pod(f"half-{i}", group=f"half-{i}", annotations={"gpu-fraction": "0.5"})
        )
    api.create(BY_KIND["Queue"], objects.pop(0))
    create_all(api, objects)

    process = start_pykai(cluster)
    bound_at_kill: dict[str, str] = {}
    deadline = time.monotonic() + 180  # a loaded machine may take long to start pykai
    while not bound_at_kill and time.monotonic() < deadline:
        bound_at_kill = {
            p["metadata"]["name"]: p["spec"]["nodeName"]
            for p in live_pods(api, "default")
            if p["spec"].get("nodeName")
        }
    process.send_signal(signal.SIGKILL)  # mid-cycle: binds are still in flight
    process.wait(timeout=10)
    assert bound_at_kill, "nothing was bound before the kill"
    assert_no_overallocation(api)

    with pykai_running(cluster):

        def settled() -> bool:
            counts = gangs_bound(api)
            gangs = [counts.get(f"gang-{g}", 0) for g in range(8)]
            halves = [counts.get(f"half-{i}", 0) for i in range(8)]
            # capacity: 24 GPUs; whole gangs take 4 each, two half pods share a device
            return sum(gangs) + sum(halves) / 2 >= 20 and all(n in (0, 4) for n in gangs)

        assert wait_for(settled, timeout=180), gangs_bound(api)
        time.sleep(1.0)  # a few more cycles: nothing may move
        counts = gangs_bound(api)
        assert all(counts.get(f"gang-{g}", 0) in (0, 4) for g in range(8)), counts
        assert_no_overallocation(api)
        final = {p["metadata"]["name"]: p["spec"].get("nodeName") for p in live_pods(api)}
        assert all(final[name] == node for name, node in bound_at_kill.items())  # never rebound


def test_apiserver_restart_is_survived(cluster: LocalCluster) -> None:
    api = connect(cluster.kubeconfig)
    with pykai_running(cluster) as process:
        cluster.restart_apiserver(pause=2.0)
        assert process.poll() is None  # still running
        api = connect(cluster.kubeconfig)
        pod = builders.pod("after-restart", labels={"kai.scheduler/queue": "faults"})
        api.create(BY_KIND["Pod"], pod)
        assert wait_for(
            lambda: bool(
                (api.get(BY_KIND["Pod"], "after-restart", "default") or {})["spec"].get("nodeName")
            ),
            timeout=60,
        )


def restricted_kubeconfig(cluster: LocalCluster, path: Path) -> Path:
    """A kubeconfig for service account ``pykai`` that may do everything pykai needs except
    binding pods in namespace ``blocked``: its binds there fail with 403, every time."""
    rbac = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "blocked"}},
        {
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": {"name": "pykai", "namespace": "default"},
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": "pykai-no-binding"},
            "rules": [
                {"apiGroups": [""], "resources": ["pods"], "verbs": ["*"]},
                *[
                    {"apiGroups": [group], "resources": ["*"], "verbs": ["*"]}
                    for group in (
                        "scheduling.run.ai",
                        "scheduling.k8s.io",
                        "coordination.k8s.io",
                        "apps",
                        "batch",
                        "ray.io",
                        "kubeflow.org",
                        "kueue.x-k8s.io",
                        "autoscaling.x-k8s.io",
                    )
                ],
                {
                    "apiGroups": [""],
                    "resources": ["nodes", "namespaces", "events", "pods/status", "podtemplates"],
                    "verbs": ["*"],
                },
            ],
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": "pykai-no-binding"},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": "pykai-no-binding",
            },
            "subjects": [{"kind": "ServiceAccount", "name": "pykai", "namespace": "default"}],
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "Role",
            "metadata": {"name": "bind", "namespace": "default"},
            "rules": [{"apiGroups": [""], "resources": ["pods/binding"], "verbs": ["create"]}],
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": {"name": "bind", "namespace": "default"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "bind"},
            "subjects": [{"kind": "ServiceAccount", "name": "pykai", "namespace": "default"}],
        },
    ]
    (path / "rbac.yaml").write_text(yaml.safe_dump_all(rbac))
    kubectl(cluster, "apply", "-f", str(path / "rbac.yaml"))
    # RBAC reaches the authorizer a moment after the apply; pykai refused at start would exit
    for can in (("list", "pods"), ("create", "pods", "--subresource=binding", "-n", "default")):
        assert wait_for(lambda can=can: allowed(cluster, "default", "pykai", *can))
    return account_kubeconfig(cluster, "default", "pykai", path / "kubeconfig")


def test_failing_bind_backs_off_and_does_not_starve_others(
    cluster: LocalCluster, tmp_path: Path
) -> None:
    """A gang whose binds always fail is older than a small pod that fits only if the gang
    does not take the GPUs every cycle: with backoff the small pod runs."""
    api = connect(cluster.kubeconfig)
    for pod in live_pods(api):  # an empty cluster: the capacity story below is exact
        api.delete(BY_KIND["Pod"], pod["metadata"]["name"], pod["metadata"]["namespace"], 0)
    assert wait_for(lambda: not live_pods(api))
    kubeconfig = restricted_kubeconfig(cluster, tmp_path)
    stuck = [builders.podgroup("stuck", queue="faults", min_member=6, namespace="blocked")]
    stuck += [
        builders.pod(f"stuck-{i}", group="stuck", gpus=4, namespace="blocked") for i in range(6)
    ]
    create_all(api, stuck)  # the gang wants every GPU of the cluster
    time.sleep(1.1)  # creation times have whole seconds: the gang is strictly older
    later = builders.pod("later", gpus=2, labels={"kai.scheduler/queue": "faults"})
    half = [
        builders.podgroup("stuck-half", queue="faults", namespace="blocked"),
        builders.pod(
            "stuck-half",
            group="stuck-half",
            namespace="blocked",
            annotations={"gpu-fraction": "0.5"},
        ),
    ]
    create_all(api, [later, *half])
    process = start_pykai(cluster, kubeconfig=kubeconfig)
    try:
        assert wait_for(
            lambda: bool(
                (api.get(BY_KIND["Pod"], "later", "default") or {})["spec"].get("nodeName")
            ),
            timeout=40,
        ), "the failing gang starved the other pod"
        assert not any(p["spec"].get("nodeName") for p in live_pods(api, "blocked"))
        events = kubectl(cluster, "get", "events", "-n", "blocked", "-o", "yaml")
        assert "FailedBinding" in events and "retrying in" in events

        def request_status() -> Obj:
            found = api.get(BY_KIND["BindRequest"], "stuck-half", "blocked") or {}
            return dict(found.get("status") or {})

        # the shared-GPU pod goes through a BindRequest: the binder retries it with backoff
        # up to its backoffLimit (5), then gives up; the pod waits and is reported
        assert wait_for(lambda: request_status().get("phase") == "Failed", timeout=30)
        assert request_status()["failedAttempts"] == 5 and "403" in request_status()["reason"]
        assert not (api.get(BY_KIND["Pod"], "stuck-half", "blocked") or {})["spec"].get("nodeName")
        assert wait_for(
            lambda: "binder gave up" in kubectl(cluster, "get", "events", "-n", "blocked")
        )
        # each refused bind is logged as an ERROR naming the request and the identity
        log = (cluster.directory / "pykai-run.log").read_text()
        refused = [
            line
            for line in log.splitlines()
            if " ERROR pykai.api 403: create /api/v1/namespaces/blocked/pods/stuck-" in line
        ]
        assert refused and "system:serviceaccount:default:pykai" in refused[0]
    finally:
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=30) == 0
