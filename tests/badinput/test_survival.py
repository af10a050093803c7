"""The catalogue against `pykai run` on a real kube-apiserver: whatever the apiserver stores,
pykai goes on (issue 10).

With the webhook down, every case the apiserver stores gets in; with `pykai webhook`
registered, the cases it lets through do. After each, `pykai run` must still be alive and a
valid pod must bind within 5 s. The probe pod has a node and a queue of its own (a tainted node
it alone tolerates), so a bad object can only keep it pending by stopping pykai, never by
legitimately taking its room. The control plane runs without the controller-manager and the
KubeRay operator (a stored ten-million-replica Deployment or RayCluster would otherwise make pods
for minutes) and without KWOK (only binds are checked); `pykai run` runs every component a real
cluster takes.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from pykai.kube.api import KubeApi, connect
from pykai.kube.localcluster import LocalCluster
from pykai.kube.nodes import create_ready_nodes
from pykai.kube.watched import NEEDS
from pykai.model import builders
from pykai.model import constants as c
from pykai.model.kinds import BY_KIND
from tests.kube.conftest import PykaiProcess, kubectl, pykai_running, wait_for, webhook_running

from .catalogue import BASELINE, CASES, VALID_POD, BadInput

BIND_WITHIN = 5.0  # seconds, as the issue asks
APPLIED = re.compile(r"^(\S+) (created|configured)$", re.MULTILINE)
PROBE_SETUP = """\
apiVersion: v1
kind: Node
metadata:
  name: probe-node
  labels: {nvidia.com/gpu.memory: "81920", kubernetes.io/hostname: probe-node, pool: probe}
spec:
  taints: [{key: probe, value: only, effect: NoSchedule}]
status:
  allocatable: {cpu: "8", memory: 64Gi, nvidia.com/gpu: "1", pods: "110"}
  capacity: {cpu: "8", memory: 64Gi, nvidia.com/gpu: "1", pods: "110"}
---
apiVersion: scheduling.run.ai/v2
kind: Queue
metadata: {name: probe}
spec:
  resources:
    cpu: {quota: -1, limit: -1, overQuotaWeight: 1}
    gpu: {quota: -1, limit: -1, overQuotaWeight: 1}
    memory: {quota: -1, limit: -1, overQuotaWeight: 1}
"""


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    """A control plane of its own with BASELINE and the probe's node and queue."""
    local = LocalCluster(tmp_path_factory.mktemp("survival"))
    local.up(controller_manager=False, stand_ins=False)
    try:
        objects = [o for text in (BASELINE, PROBE_SETUP) for o in yaml.safe_load_all(text)]
        (local.directory / "baseline.yaml").write_text(yaml.safe_dump_all(objects))
        restore(local, [])
        yield local
    finally:
        local.down()


def probe_pod(number: int) -> str:
    """VALID_POD, named for one case, in the probe's queue and on the probe's node."""
    text = VALID_POD.replace("name: still-schedules", f"name: probe-{number}")
    text = text.replace("kai.scheduler/queue: team", "kai.scheduler/queue: probe")
    return text + (
        "  nodeSelector: {pool: probe}\n  tolerations: [{key: probe, operator: Exists}]\n"
    )


def apply_case(cluster: LocalCluster, case: BadInput, directory: Path) -> list[tuple[str, str]]:
    """kubectl apply the case as written (no client-side check); (object, created or
    configured) for what got in."""
    bad = directory / f"{case.id}.yaml"
    bad.write_text(case.manifest)
    out = kubectl(cluster, "apply", "--validate=false", "-f", str(bad), check=False)
    return APPLIED.findall(out)


def restore(cluster: LocalCluster, changed: list[tuple[str, str]]) -> None:
    """Delete what a case created and put the baseline back (a case may have changed it):
    nodes Ready as a kubelet keeps them, the rest as applied."""
    for name, action in changed:
        if action == "created":
            kubectl(cluster, "delete", name, "--wait=false", "--grace-period=0", "--force")
    objects = list(yaml.safe_load_all((cluster.directory / "baseline.yaml").read_text()))
    api = connect(cluster.kubeconfig)
    create_ready_nodes(api, [o for o in objects if o["kind"] == "Node"], time.time())
    rest = cluster.directory / "baseline-rest.yaml"
    rest.write_text(yaml.safe_dump_all([o for o in objects if o["kind"] != "Node"]))
    kubectl(cluster, "apply", "-f", str(rest))


def probe_binds(cluster: LocalCluster, api: KubeApi, number: int, process: PykaiProcess) -> str:
    """Create a probe pod; "" if it bound within BIND_WITHIN seconds, else what went wrong."""
    path = cluster.directory / f"probe-{number}.yaml"
    path.write_text(probe_pod(number))
    kubectl(cluster, "apply", "-f", str(path))
    deadline = time.monotonic() + BIND_WITHIN
    try:
        while time.monotonic() < deadline:
            found = api.get(BY_KIND["Pod"], f"probe-{number}", "default") or {}
            if (found.get("spec") or {}).get("nodeName") == "probe-node":
                return ""
            if process.poll() is not None:
                return f"pykai run exited {process.returncode}"
            time.sleep(0.1)
        return f"probe-{number} not bound within {BIND_WITHIN}s"
    finally:
        api.delete(BY_KIND["Pod"], f"probe-{number}", "default", 0)


def survivals(
    cluster: LocalCluster, cases: list[BadInput], directory: Path, process: PykaiProcess
) -> tuple[list[str], int]:
    """Each case stored, then a probe; the failures, and how many cases got in."""
    api = connect(cluster.kubeconfig)
    failures, stored = [], 0
    for number, case in enumerate(cases):
        changed = apply_case(cluster, case, directory)
        stored += bool(changed)
        try:
            problem = probe_binds(cluster, api, number, process)
            if problem:
                failures.append(f"{case.id}: {problem}")
        finally:
            restore(cluster, changed)
    return failures, stored


def test_pykai_run_survives_every_case_the_apiserver_stores(
    cluster: LocalCluster, tmp_path: Path
) -> None:
    cases = [case for case in CASES if case.stored_by_apiserver]
    assert len(cases) >= 40
    with pykai_running(cluster, "--components=" + ",".join(NEEDS)) as process:
        failures, stored = survivals(cluster, cases, tmp_path, process)
        assert process.poll() is None
    assert not failures, "\n".join(failures)
    assert stored == len(cases)  # the webhook was down: each one got in


def test_pykai_run_survives_what_the_webhook_lets_through(
    cluster: LocalCluster, tmp_path: Path
) -> None:
    cases = [case for case in CASES if case.stored_by_apiserver]
    with (
        webhook_running(cluster),
        pykai_running(cluster, "--components=" + ",".join(NEEDS)) as process,
    ):
        failures, stored = survivals(cluster, cases, tmp_path, process)
        assert process.poll() is None
    assert not failures, "\n".join(failures)
    refused = sum(1 for case in cases if case.webhook_refuses)
    assert stored <= len(cases) - refused  # what the webhook refuses never gets in


def test_a_held_pod_says_why_where_kubectl_users_look(
    cluster: LocalCluster, tmp_path: Path
) -> None:
    case = next(case for case in CASES if case.id == "pod-gpu-fraction-above-one")
    api = connect(cluster.kubeconfig)
    with pykai_running(cluster):
        changed = apply_case(cluster, case, tmp_path)
        try:

            def condition() -> dict[str, str] | None:
                pod = api.get(BY_KIND["Pod"], "too-much", "default") or {}
                found = [
                    c
                    for c in (pod.get("status") or {}).get("conditions") or []
                    if c.get("type") == "PodScheduled"
                ]
                return found[0] if found else None

            assert wait_for(condition, timeout=60)
            held = condition() or {}
            assert held["status"] == "False" and held["reason"] == "Unschedulable"
            assert "metadata.annotations[gpu-fraction]" in held["message"]
            events = kubectl(
                cluster, "get", "events", "--field-selector", "involvedObject.name=too-much"
            )
            assert "InvalidObject" in events
        finally:
            restore(cluster, changed)


def test_a_pod_pykai_cannot_read_still_holds_its_node(cluster: LocalCluster) -> None:
    """Another scheduler's pod with ``gpu-fraction: "abc"`` holding all 8 GPUs of a node: an
    8-GPU pod of pykai's goes to the other node, never onto the full one."""
    api = connect(cluster.kubeconfig)
    nodes = [
        builders.node(name, gpus=8, labels={"pool": "held"}) for name in ("full-node", "spare-node")
    ]
    create_ready_nodes(api, nodes, time.time())
    foreign = builders.pod(
        "foreign",
        gpus=8,
        scheduler="default-scheduler",
        node_name="full-node",
        annotations={c.GPU_FRACTION_ANNOTATION: "abc"},
    )
    whole = builders.pod("whole", gpus=8, labels={c.QUEUE_LABEL: "probe"})
    whole["spec"]["nodeSelector"] = {"pool": "held"}
    api.create(BY_KIND["Pod"], foreign)
    try:
        with pykai_running(cluster) as process:
            process.wait_cycles(2)
            api.create(BY_KIND["Pod"], whole)
            assert wait_for(
                lambda: (
                    (api.get(BY_KIND["Pod"], "whole", "default") or {})
                    .get("spec", {})
                    .get("nodeName")
                ),
                timeout=60,
            )
            bound = api.get(BY_KIND["Pod"], "whole", "default") or {}
            assert bound["spec"]["nodeName"] == "spare-node"
    finally:
        for name in ("foreign", "whole"):
            api.delete(BY_KIND["Pod"], name, "default", 0)
        for name in ("full-node", "spare-node"):
            api.delete(BY_KIND["Node"], name)


def test_a_pod_with_a_250_character_name_is_grouped_and_bound(cluster: LocalCluster) -> None:
    api = connect(cluster.kubeconfig)
    name = "long-" + "n" * 245
    pod = builders.pod(name, cpu="100m", labels={c.QUEUE_LABEL: "probe"})
    pod["spec"]["nodeSelector"] = {"pool": "probe"}
    pod["spec"]["tolerations"] = [{"key": "probe", "operator": "Exists"}]
    api.create(BY_KIND["Pod"], pod)
    try:
        with pykai_running(cluster):
            assert wait_for(
                lambda: (
                    (api.get(BY_KIND["Pod"], name, "default") or {}).get("spec", {}).get("nodeName")
                ),
                timeout=60,
            )
        annotations = (api.get(BY_KIND["Pod"], name, "default") or {})["metadata"]["annotations"]
        group = annotations[c.POD_GROUP_ANNOTATION]
        assert len(group) <= 253 and api.get(BY_KIND["PodGroup"], group, "default") is not None
    finally:
        api.delete(BY_KIND["Pod"], name, "default", 0)
