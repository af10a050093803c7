"""A real control plane for kube tests: etcd, kube-apiserver and kube-controller-manager v1.34,
KWOK and the KubeRay operator, built by scripts/peers (pykai.kube.localcluster)."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
import yaml

from pykai.kube import peers
from pykai.kube.api import connect
from pykai.kube.localcluster import PYKAI_CRDS, LocalCluster, free_port, kai_crds
from pykai.kube.nodes import create_ready_nodes
from pykai.kube.webhook import CONFIGURATION_NAME, unregister
from pykai.model import builders
from pykai.model.kinds import BY_KIND
from pykai.model.meta import Obj

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def local_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    cluster = LocalCluster(tmp_path_factory.mktemp("kube"))
    cluster.up()
    yield cluster
    cluster.down()


@pytest.fixture(scope="module", params=["pykai-crds", "kai-crds"])
def crds(request: pytest.FixtureRequest) -> Path:
    """The CRDs of KAI's kinds a module's cluster runs on: pykai's, then KAI's own (so what
    pykai writes must pass KAI's schemas, and what it reads must survive their pruning)."""
    return PYKAI_CRDS if request.param == "pykai-crds" else kai_crds()


@contextmanager
def fresh_cluster(
    directory: Path,
    crds: Path = PYKAI_CRDS,
    *,
    default_scheduler: bool = False,
    provisioning: bool = False,
    kuberay_scheduler: str = "kai-scheduler",
) -> Iterator[LocalCluster]:
    """A control plane of its own, for tests that need an empty cluster (with kube-scheduler
    as the default scheduler if ``default_scheduler``, the ProvisioningRequest stand-in if
    ``provisioning``; KubeRay's batch scheduler as given)."""
    cluster = LocalCluster(directory, crds=crds, kuberay_scheduler=kuberay_scheduler)
    cluster.up(default_scheduler=default_scheduler, provisioning=provisioning)
    try:
        yield cluster
    finally:
        cluster.down()


class PykaiProcess(subprocess.Popen[bytes]):
    """``pykai run`` with its own part of the cluster's ``pykai-run.log``: what it logged
    since it started, so tests wait for its cycles, never for time."""

    log_path: Path
    log_start: int

    def logged(self) -> str:
        """What this process has logged so far."""
        with open(self.log_path, "rb") as log:
            log.seek(self.log_start)
            return log.read().decode(errors="replace")

    def cycles(self) -> int:
        """Cycles this process has finished."""
        return len(re.findall(r"pykai\.run cycle \d+ done", self.logged()))

    def wait_ready(self, timeout: float = 120.0) -> None:
        """Until its first cycle is done (a loaded machine may take long to start it)."""
        if not wait_for(lambda: "ready:" in self.logged() or self.poll() is not None, timeout):
            raise AssertionError(f"pykai run not ready after {timeout}s:\n{self.logged()[-3000:]}")
        if self.poll() is not None:
            raise AssertionError(f"pykai run exited {self.returncode}:\n{self.logged()[-3000:]}")

    def wait_cycles(self, count: int, timeout: float = 120.0) -> bool:
        """Until ``count`` more cycles are done; False if they are not within ``timeout``."""
        target = self.cycles() + count
        return wait_for(lambda: self.cycles() >= target or self.poll() is not None, timeout)


def start_pykai(cluster: LocalCluster, *args: str, kubeconfig: Path | None = None) -> PykaiProcess:
    """``pykai run`` against the cluster (cycle every 0.3 s, as admin unless ``kubeconfig``
    says otherwise, debug log: one line per cycle), its log beside the cluster's."""
    path = cluster.directory / "pykai-run.log"
    log = open(path, "ab")  # noqa: SIM115 - kept by the child
    start = log.tell()
    process = PykaiProcess(
        [
            sys.executable,
            "-m",
            "pykai",
            "run",
            f"--kubeconfig={kubeconfig or cluster.kubeconfig}",
            "--period=0.3",
            "--log-level=debug",
            *args,
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    process.log_path, process.log_start = path, start
    return process


@contextmanager
def pykai_running(
    cluster: LocalCluster, *args: str, kubeconfig: Path | None = None, ready: bool = True
) -> Iterator[PykaiProcess]:
    """``pykai run`` for the duration of the block (once ``ready``: its first cycle done); it
    must stop cleanly on SIGTERM."""
    process = start_pykai(cluster, *args, kubeconfig=kubeconfig)
    try:
        if ready:
            process.wait_ready()
        yield process
    finally:
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=60) == 0, process.logged()[-3000:]


@contextmanager
def webhook_running(cluster: LocalCluster, *flags: str) -> Iterator[str]:
    """`pykai webhook --register` on a free loopback port for the duration of the block (a
    generated certificate unless ``flags`` say otherwise); its address. It must stop cleanly
    on SIGTERM and remove its configurations."""
    api = connect(cluster.kubeconfig)
    address = f"127.0.0.1:{free_port()}"
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "pykai",
            "webhook",
            f"--kubeconfig={cluster.kubeconfig}",
            f"--address={address}",
            "--register",
            *flags,
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )

    def healthy() -> bool:
        try:
            return httpx.get(f"https://{address}/healthz", verify=False).status_code == 200
        except httpx.HTTPError:
            return False

    try:
        assert wait_for(healthy), "webhook did not start"
        assert wait_for(
            lambda: api.get(BY_KIND["ValidatingWebhookConfiguration"], CONFIGURATION_NAME)
        )
        yield address
    finally:
        process.send_signal(signal.SIGTERM)
        code = process.wait(timeout=20)
        gone = api.get(BY_KIND["ValidatingWebhookConfiguration"], CONFIGURATION_NAME) is None
        unregister(api)  # never leave it behind for the other tests of the session
        assert code == 0 and gone


def pykai_cli(*args: str) -> subprocess.CompletedProcess[str]:
    """``python -m pykai ARGS`` to completion (for commands expected to fail fast)."""
    return subprocess.run(
        [sys.executable, "-m", "pykai", *args],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )


def kubectl(cluster: LocalCluster, *args: str, check: bool = True) -> str:
    """kubectl v1.34 (scripts/peers) against the local cluster; fails the test on a non-zero exit
    unless ``check`` is false (then stdout and stderr are returned together)."""
    result = subprocess.run(
        [str(peers.binary("kubectl")), f"--kubeconfig={cluster.kubeconfig}", *args],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    if check:
        assert result.returncode == 0, result.stderr
        return result.stdout
    return result.stdout + result.stderr


def apply(cluster: LocalCluster, objects: list[Obj], path: Path) -> None:
    """Write ``objects`` to ``path`` and ``kubectl apply`` them."""
    path.write_text(yaml.safe_dump_all(objects))
    kubectl(cluster, "apply", "-f", str(path))


def get_json(cluster: LocalCluster, *args: str) -> Obj:
    """``kubectl get ... -o json``, parsed."""
    found: Obj = json.loads(kubectl(cluster, "get", *args, "-o", "json"))
    return found


def pinned_node(cluster: LocalCluster, node: str, queue: str) -> Callable[[Obj], Obj]:
    """A ready 2-GPU node that takes only the pods made for it (tainted, labelled
    ``pool=NODE``) and a queue, both kept if they exist: a test's pods land on a known node of
    the shared cluster. Returns what makes a pod one of those (a copy that tolerates the taint
    and selects the node)."""
    api = connect(cluster.kubeconfig)
    taint = {"key": "pykai-test", "value": node, "effect": "NoSchedule"}
    made = builders.node(node, gpus=2, labels={"pool": node}, taints=[taint])
    create_ready_nodes(api, [made], 0.0)
    api.create_if_absent(BY_KIND["Queue"], builders.queue(queue))

    def pin(pod: Obj) -> Obj:
        spec = {**pod["spec"], "nodeSelector": {"pool": node}}
        spec["tolerations"] = [{**taint, "operator": "Equal"}]
        return {**pod, "spec": spec}

    return pin


def wait_for(condition: Callable[[], object], timeout: float = 30.0) -> bool:
    """Poll ``condition`` every 0.3 s until it is truthy or ``timeout`` passes."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.3)
    return False


def account_kubeconfig(cluster: LocalCluster, namespace: str, account: str, path: Path) -> Path:
    """A kubeconfig at ``path`` for service account ``namespace/account`` (a token from the
    TokenRequest API, as ``kubectl create token`` asks for it: Kubernetes makes no token Secrets
    since 1.24), user ``account``."""
    tokens: list[str] = []

    def token() -> bool:
        made = kubectl(
            cluster, "create", "token", account, "-n", namespace, "--duration=24h", check=False
        )
        if made.count(".") == 2 and " " not in made.strip():  # a JWT, not an error
            tokens.append(made.strip())
        return bool(tokens)

    assert wait_for(token), f"no token for service account {namespace}/{account}"
    config = yaml.safe_load(cluster.kubeconfig.read_text())
    config["users"] = [{"name": account, "user": {"token": tokens[0]}}]
    config["contexts"][0]["context"]["user"] = account
    path.write_text(yaml.safe_dump(config))
    return path


def allowed(cluster: LocalCluster, namespace: str, account: str, *args: str) -> bool:
    """``kubectl auth can-i ARGS`` as service account ``namespace/account``."""
    subject = f"--as=system:serviceaccount:{namespace}:{account}"
    return kubectl(cluster, "auth", "can-i", subject, *args, check=False).startswith("yes")
