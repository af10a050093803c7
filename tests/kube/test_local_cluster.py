"""The local control plane: CRDs compatible with KAI, the guides' queues via real kubectl,
Ready fake GPU nodes, and a clean shutdown."""

from __future__ import annotations

import stat
import subprocess
import sys
import time
from pathlib import Path

from pykai.kube.api import connect
from pykai.kube.localcluster import LocalCluster, alive
from pykai.kube.nodes import create_ready_nodes, gpu_nodes
from pykai.model import builders
from pykai.model.kinds import BY_KIND
from tests.kube.conftest import ROOT, kubectl, wait_for


def test_guides_queues_with_kais_columns(local_cluster: LocalCluster) -> None:
    kubectl(local_cluster, "apply", "-f", str(ROOT / "deploy/helm/pykai/crds"))
    for _ in range(50):  # CRDs take a moment to be served
        if "queues" in kubectl(local_cluster, "api-resources", "--api-group=scheduling.run.ai"):
            break
        time.sleep(0.2)
    out = kubectl(
        local_cluster, "apply", "-f", str(ROOT / "examples/queues-department-1-team-a.yaml")
    )
    assert "queue.scheduling.run.ai/team-a" in out  # created, or unchanged if a test made it
    lines = kubectl(local_cluster, "get", "queues").splitlines()
    assert lines[0].split() == ["NAME", "PRIORITY", "PARENT", "CHILDREN", "DISPLAYNAME"]
    team = next(line.split() for line in lines if line.startswith("team-a"))
    assert team[:2] == ["team-a", "department-1"]  # CHILDREN shows [] once a controller ran


def test_fake_gpu_nodes_are_ready_and_untainted(local_cluster: LocalCluster) -> None:
    create_ready_nodes(connect(local_cluster.kubeconfig), gpu_nodes(2, 8), time.time())
    out = kubectl(
        local_cluster,
        "get",
        "nodes",
        "-o",
        "custom-columns=NAME:.metadata.name,GPU:.status.allocatable.nvidia\\.com/gpu,TAINTS:.spec.taints",
    )
    rows = [line.split() for line in out.splitlines()[1:] if line.startswith("gpu-node-")]
    assert rows == [["gpu-node-0", "8", "<none>"], ["gpu-node-1", "8", "<none>"]]
    assert "Ready" in kubectl(local_cluster, "get", "nodes")


def test_a_node_is_ready_with_its_capacity_from_its_first_revision(
    local_cluster: LocalCluster,
) -> None:
    """KWOK's node-initialize stage takes a node that is not Ready and writes its status from
    what it read, with defaults (cpu 1k, memory 1Ti) for a missing allocatable: a node that is
    Ready with its capacity from its first revision is never taken, so it keeps its capacity
    (a node created bare and patched after lost that race now and then)."""
    api = connect(local_cluster.kubeconfig)
    names = [f"small-node-{i}" for i in range(12)]
    nodes = [builders.node(name, gpus=2, cpu="4", memory="8Gi") for name in names]
    create_ready_nodes(api, nodes, time.time())
    kind = BY_KIND["Node"]
    for name in names:
        node = api.get(kind, name)
        allocatable = node["status"]["allocatable"]
        assert (allocatable["cpu"], allocatable["memory"], allocatable["nvidia.com/gpu"]) == (
            "4",
            "8Gi",
            "2",
        ), name
        ready = [c for c in node["status"]["conditions"] if c["type"] == "Ready"]
        assert [c["status"] for c in ready] == ["True"], name
        assert "phase" not in node["status"], f"{name}: KWOK's node-initialize took it"


def test_down_leaves_no_process(tmp_path) -> None:  # type: ignore[no-untyped-def]
    cluster = LocalCluster(tmp_path)
    cluster.up(controller_manager=False)
    pids = list(cluster.status()["pids"].values())  # type: ignore[union-attr]
    started = {pid: start_time(pid) for pid in pids}
    assert cluster.running()
    cluster.down()
    assert not any(alive(pid) for pid in pids)
    # reaped too, not left as zombies (a busy machine may give a pid to a new process)
    assert not any(start_time(pid) == started[pid] for pid in pids)


def start_time(pid: int) -> str | None:
    """When process ``pid`` started (field 22 of /proc/PID/stat), None if there is none."""
    try:
        stat_line = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat_line.rsplit(")", 1)[1].split()[19]


def test_a_child_whose_threads_still_exit_is_alive_until_reaped() -> None:
    """A process whose main thread ended (a zombie in /proc) while another thread still runs
    cannot be reaped yet: ``down`` must wait for it, not count it gone (it did, under load)."""
    program = (  # the main thread exits; the other one reads stdin until it is closed
        "import ctypes, sys, threading; threading.Thread(target=sys.stdin.read).start(); "
        "ctypes.CDLL(None).pthread_exit(None)"
    )
    child = subprocess.Popen([sys.executable, "-c", program], stdin=subprocess.PIPE)
    stat_file = Path(f"/proc/{child.pid}/stat")
    assert wait_for(lambda: stat_file.read_text().split(")")[-1].split()[0] == "Z", timeout=60)
    assert alive(child.pid)
    assert child.stdin is not None
    child.stdin.close()
    assert wait_for(lambda: not alive(child.pid), timeout=60)
    assert not Path(f"/proc/{child.pid}").exists()  # reaped


def test_up_with_the_webhook_then_down(tmp_path: Path) -> None:
    cluster = LocalCluster(tmp_path)
    kubeconfig = cluster.up(controller_manager=False, stand_ins=False, webhook=True)
    try:
        bad = tmp_path / "bad.yaml"
        bad.write_text(
            "apiVersion: scheduling.run.ai/v2\nkind: Queue\nmetadata: {name: bad}\n"
            "spec: {resources: {gpu: {quota: -3, limit: -1, overQuotaWeight: 1}}}\n"
        )
        out = kubectl(cluster, "apply", "-f", str(bad), check=False)
        assert "denied the request" in out and "spec.resources.gpu.quota" in out
    finally:
        pids = list(cluster.status()["pids"].values())  # type: ignore[union-attr]
        cluster.down()
    assert kubeconfig.exists() and not any(alive(pid) for pid in pids)


def test_keys_tokens_and_kubeconfig_are_private(tmp_path: Path) -> None:
    """Files 0600 in a 0700 folder, also where an earlier run left them readable."""
    directory = tmp_path / "cluster"
    directory.mkdir(mode=0o755)
    directory.chmod(0o755)
    (directory / "kubeconfig").write_text("left by an earlier run")
    (directory / "kubeconfig").chmod(0o644)
    cluster = LocalCluster(directory)
    cluster.up(controller_manager=False, stand_ins=False)
    try:
        assert stat.S_IMODE(directory.stat().st_mode) == 0o700
        written = ["sa.key", "sa.pub", "tokens.csv", "kubeconfig"]
        certificates = ["ca.crt", "ca.key", "apiserver.crt", "apiserver.key"]
        for name in [*written, *certificates]:
            assert stat.S_IMODE((directory / name).stat().st_mode) == 0o600, name
        assert "token" in cluster.kubeconfig.read_text()
    finally:
        cluster.down()


def test_the_command_runs_kubernetes_1_34_with_kwok_and_leaves_nothing(tmp_path: Path) -> None:
    """``pykai local-cluster up`` as a user runs it: it says the server's version (v1.34), the
    kubeconfig last; KWOK keeps its nodes Ready and runs what is bound; ``down`` stops every
    process it started, KWOK and the KubeRay operator included."""
    directory = tmp_path / "cluster"
    pykai = [sys.executable, "-m", "pykai", "local-cluster"]
    up = subprocess.run(
        [*pykai, "up", f"--dir={directory}", "--gpu-nodes=1", "--gpus-per-node=2"],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    cluster = LocalCluster(directory)
    try:
        assert up.returncode == 0, up.stderr
        lines = up.stdout.splitlines()
        assert lines[0].startswith("Kubernetes v1.34.")
        assert lines[-1] == str(directory / "kubeconfig")
        pids = dict(cluster.status()["pids"])  # type: ignore[call-overload]
        started = {"etcd", "kube-apiserver", "kube-controller-manager", "kwok", "kuberay-operator"}
        assert started <= set(pids)
        server = kubectl(cluster, "version", "-o", "json")
        assert '"gitVersion": "v1.34.' in server
        # bound by hand to a node no scheduler picked: KWOK, the kubelet, runs it
        pod = builders.pod("sleeper", gpus=1, node_name="gpu-node-0", scheduler="nobody")
        connect(cluster.kubeconfig).create(BY_KIND["Pod"], pod)

        def phase() -> str:
            found = connect(cluster.kubeconfig).get(BY_KIND["Pod"], "sleeper", "default") or {}
            return str((found.get("status") or {}).get("phase"))

        assert wait_for(lambda: phase() == "Running", 60), phase()
        nodes = kubectl(cluster, "get", "nodes", "--no-headers")
        assert nodes.split()[:2] == ["gpu-node-0", "Ready"]
    finally:
        down = subprocess.run(
            [*pykai, "down", f"--dir={directory}"], capture_output=True, text=True, check=False
        )
    assert down.returncode == 0, down.stderr
    assert not any(alive(pid) for pid in pids.values())
