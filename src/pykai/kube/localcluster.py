"""A real control plane on loopback, built from the Go modules pinned in tools/peers by
scripts/peers (pykai.kube.peers finds them): etcd and kube-apiserver v1.34, with
kube-controller-manager running the Deployment, ReplicaSet, Job (suspend included), CronJob,
disruption-budget and garbage-collector controllers; KWOK as every node's kubelet (nodes kept Ready
with leases; bound pods Running; a pod annotated ``pykai.io/duration`` Succeeded after it, a
deleted one gone at the end of its grace period: the stages are KWOK's and pykai's,
deploy/local/kwok); the real KubeRay operator (with KAI's batch-scheduler integration, as the KAI +
KubeRay guide installs it); optionally kube-scheduler as the default scheduler. pykai's CRDs (or
KAI's own, from its module), KubeRay's CRDs from its module, Kueue's kinds as the chart ships them
(or Kueue's own CRDs, from its module), KAI's priority classes and default queues are installed.
What no peer supplies runs as a stand-in, when asked: the cluster autoscaler's answer to
ProvisioningRequests (``pykai run --components provisioning``).
Everything binds to 127.0.0.1; state and logs live in one directory, kept 0700, whose keys, tokens
and kubeconfig are 0600; ``down`` leaves no process behind. The directory's CA (``ca.crt``) signs
the apiserver's serving certificate and is its client CA: the kubeconfig trusts it (inline), and
``issue_client_certificate`` makes users of it."""

from __future__ import annotations

import base64
import functools
import json
import os
import secrets
import signal
import socket
import ssl
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import yaml
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from pykai.kube import peers
from pykai.kube.api import KubeApi, connect
from pykai.kube.certs import Authority
from pykai.model.conditions import is_true
from pykai.model.errors import PykaiError
from pykai.model.kinds import BY_KIND
from pykai.model.meta import Obj
from pykai.model.priorityclass import builtin_priority_classes
from pykai.model.queue import default_queues

REPO = peers.REPO
PYKAI_CRDS = REPO / "deploy/helm/pykai/crds"  # KAI's kinds, as pykai defines them
KUEUE_CRDS = sorted(PYKAI_CRDS.glob("kueue.x-k8s.io_*.yaml"))  # stand-ins the chart ships too
LOCAL = REPO / "deploy/local"  # what only local clusters install: stand-in CRDs, KWOK stages
KCM_CONTROLLERS = (
    "garbagecollector,namespace,serviceaccount,serviceaccount-token,root-ca-cert-publisher,"
    "deployment,replicaset,job,cronjob,disruption,ttl-after-finished"
)
# KWOK's own stages (from its module): a node initialised and kept Ready with a lease, a bound
# pod Running at once; then pykai's (deploy/local/kwok): completion after pykai.io/duration,
# removal at the end of the grace period.
KWOK_STAGES = (
    "kustomize/stage/node/fast/node-initialize.yaml",
    "kustomize/stage/node/heartbeat-with-lease/node-heartbeat-with-lease.yaml",
    "kustomize/stage/pod/fast/pod-ready.yaml",
)


def kai_crds() -> Path:
    """KAI's own CRDs, from the KAI module scripts/peers fetched."""
    return peers.module("kai") / "deployments/kai-scheduler/crds"


def kueue_crds() -> list[Path]:
    """Kueue's own CRDs (v0.17.0: schemas, defaults, CEL rules; no conversion stanza), from
    the Kueue module scripts/peers fetched."""
    return sorted((peers.module("kueue") / "config/components/crd/bases").glob("*.yaml"))


def kuberay_crds() -> list[Path]:
    """KubeRay's CRDs (RayCluster, RayJob, RayService), from the KubeRay module."""
    return sorted((peers.module("kuberay") / "config/crd/bases").glob("ray.io_*.yaml"))


class LocalClusterError(PykaiError, RuntimeError):
    """The control plane could not start (the message says which part and where its log is)."""


def free_port() -> int:
    """A free TCP port on 127.0.0.1."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def write_private(path: Path, data: bytes) -> None:
    """Write a key, token or kubeconfig that only its owner may read (0600, also when the
    file existed with another mode)."""
    with os.fdopen(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "wb") as out:
        os.fchmod(out.fileno(), 0o600)
        out.write(data)


def private_directory(path: Path) -> None:
    """Create ``path`` (and its parents) if missing; only its owner may enter it (0700)."""
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    path.chmod(0o700)


def _gone_within(pid: int, seconds: float) -> bool:
    """Wait up to ``seconds`` for a process to end (and reap it); True if it did."""
    deadline = time.monotonic() + seconds
    while alive(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def answers(url: str, still: Callable[[], bool], timeout: float) -> bool:
    """Whether ``url`` answers 200 within ``timeout`` seconds while ``still()`` holds (a
    process started against the cluster, polled every 0.25 s)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and still():
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                if response.status == 200:
                    return True
        except OSError:
            pass
        time.sleep(0.25)
    return False


def alive(pid: int) -> bool:
    """True if the process runs. A child of this process counts as gone once reaped (here): a
    child whose main thread ended while its other threads still exit cannot be reaped yet and
    still runs. Another process's zombie counts as gone."""
    try:
        reaped, _ = os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        child = False
    else:
        if reaped:
            return False
        child = True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return child or not _zombie(pid)


def _zombie(pid: int) -> bool:
    """True if the process has ended and waits to be reaped (or is gone already)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] == "Z"
    except OSError:
        return True  # gone while being read


@dataclass
class LocalCluster:
    """The control plane kept in ``directory``."""

    directory: Path
    crds: Path = PYKAI_CRDS  # the CRDs of KAI's kinds to install: pykai's, or KAI's own
    binaries: Path = field(default_factory=lambda: peers.directory() / "bin")
    kuberay_scheduler: str = "kai-scheduler"  # KubeRay's --batch-scheduler ("": none)
    kueue_crds: bool = False  # Kueue's own CRDs (from its module) in place of pykai's stand-ins

    @property
    def kubeconfig(self) -> Path:
        """Where the admin kubeconfig is written."""
        return self.directory / "kubeconfig"

    @property
    def _state(self) -> Path:
        return self.directory / "state.json"

    def binary(self, name: str) -> Path:
        """A peer binary (``kube-apiserver``, ``kwok``, …); missing: an error naming the fix."""
        path = self.binaries / name
        if not os.access(path, os.X_OK):
            raise LocalClusterError(
                f"{path} is missing: run scripts/peers (or make peers) to build it"
            )
        return path

    def up(
        self,
        *,
        controller_manager: bool = True,
        stand_ins: bool = True,
        webhook: bool = False,
        default_scheduler: bool = False,
        provisioning: bool = False,
        timeout: float = 60.0,
        progress: Callable[[str], None] = lambda _: None,
    ) -> Path:
        """Start etcd and kube-apiserver (and kube-controller-manager), install the CRDs and
        priority classes; with ``stand_ins``, start what a cluster's nodes and operators do:
        KWOK and the KubeRay operator (and the ProvisioningRequest stand-in with
        ``provisioning``); kube-scheduler with ``default_scheduler``; the admission webhook,
        registered, with ``webhook``. Return the kubeconfig. ``progress`` is told each step as
        it starts."""
        if self.running():
            return self.kubeconfig
        for name in ("etcd", "kube-apiserver"):
            self.binary(name)
        private_directory(self.directory)
        try:
            self._start_all(
                controller_manager,
                stand_ins,
                webhook,
                default_scheduler,
                provisioning,
                timeout,
                progress,
            )
        except BaseException:  # a failure, Ctrl-C: nothing started is left running
            self.down()
            raise
        return self.kubeconfig

    def _start_all(
        self,
        controller_manager: bool,
        stand_ins: bool,
        webhook: bool,
        default_scheduler: bool,
        provisioning: bool,
        timeout: float,
        progress: Callable[[str], None],
    ) -> None:
        """``up``'s work; each process is in the state file as soon as it is started."""
        token = secrets.token_hex(16)
        ports = {"etcd": free_port(), "peer": free_port(), "api": free_port()}
        pids: dict[str, int] = {}
        self._write_keys(token)
        progress("starting etcd and kube-apiserver")
        self._launch(pids, ports, "etcd", self._etcd_args(ports))
        self._launch(pids, ports, "kube-apiserver", self._apiserver_args(ports))
        self._write_kubeconfig(ports["api"], token)
        progress("waiting for kube-apiserver")
        self._wait_ready(ports["api"], token, timeout)
        if controller_manager:
            progress("starting kube-controller-manager")
            self._launch(pids, ports, "kube-controller-manager", self._controller_manager_args())
        progress("installing the CRDs and priority classes")
        kueue = kueue_crds() if self.kueue_crds else KUEUE_CRDS
        install_basics(connect(self.kubeconfig), timeout, self.crds, kueue)
        if stand_ins:
            progress("starting KWOK (every node's kubelet)")
            ports["kwok"] = free_port()
            self._launch(pids, ports, "kwok", self._kwok_args(ports["kwok"]))
            progress("starting the KubeRay operator")
            ports["kuberay-metrics"], ports["kuberay-probe"] = free_port(), free_port()
            self._launch(pids, ports, "kuberay-operator", self._kuberay_args(ports))
        if provisioning:
            progress("starting the ProvisioningRequest stand-in")
            self._launch_pykai(pids, ports, "pykai-stand-ins", "run", "--components=provisioning")
        if default_scheduler:
            progress("starting kube-scheduler (the default scheduler)")
            self._launch(pids, ports, "kube-scheduler", self._scheduler_args())
        if webhook:
            progress("starting the admission webhook")
            ports["webhook"] = free_port()
            address = f"--address=127.0.0.1:{ports['webhook']}"
            self._launch_pykai(pids, ports, "pykai-webhook", "webhook", address, "--register")
            self._wait_registered(timeout)

    def _launch(
        self, pids: dict[str, int], ports: dict[str, int], name: str, args: list[str]
    ) -> None:
        """Start peer binary ``name`` and record it at once (``down`` stops what is recorded)."""
        pids[name] = self._start(str(self.binary(name)), args)
        self._write_state(pids, ports)

    def launch(
        self, name: str, args: list[str], env: dict[str, str] | None = None, **ports: int
    ) -> int:
        """Start peer binary ``name`` beside the running control plane (``env`` over this
        process's environment, its log ``NAME.log`` in the directory) and record it, with the
        ``ports`` it was given, at once: ``down`` stops it, newest first. Its pid."""
        state = self._read_state()
        pids, known = state.get("pids", {}), state.get("ports", {})
        known.update(ports)
        pids[name] = self._start(str(self.binary(name)), args, env=env)
        self._write_state(pids, known)
        return pids[name]

    def _launch_pykai(
        self, pids: dict[str, int], ports: dict[str, int], name: str, *args: str
    ) -> None:
        """Start ``pykai ARGS`` against the cluster as ``name`` (its log ``NAME.log``) and
        record it at once."""
        command = ["-m", "pykai", args[0], f"--kubeconfig={self.kubeconfig}", *args[1:]]
        if args[0] == "run":
            command.append("--period=0.5")
        pids[name] = self._start(sys.executable, command, log_name=name)
        self._write_state(pids, ports)

    def _controller_manager_args(self) -> list[str]:
        return [
            f"--kubeconfig={self.kubeconfig}",
            "--bind-address=127.0.0.1",
            "--secure-port=0",
            f"--controllers={KCM_CONTROLLERS}",
            f"--service-account-private-key-file={self.directory / 'sa.key'}",
            f"--root-ca-file={self.directory / 'ca.crt'}",
            "--use-service-account-credentials=false",
            "--leader-elect=false",
        ]

    def _kwok_args(self, port: int) -> list[str]:
        stages = [peers.module("kwok") / stage for stage in KWOK_STAGES]
        stages += sorted((LOCAL / "kwok").glob("*.yaml"))
        return [
            f"--kubeconfig={self.kubeconfig}",
            "--manage-all-nodes=true",
            f"--server-address=127.0.0.1:{port}",
            "--cidr=10.0.0.1/16",  # pod IPs (KWOK's default /24 holds 254 pods)
            "--node-ip=127.0.0.1",
            *(f"--config={path}" for path in stages),
        ]

    def _kuberay_args(self, ports: dict[str, int]) -> list[str]:
        batch = [f"--batch-scheduler={self.kuberay_scheduler}"] if self.kuberay_scheduler else []
        return [
            f"--kubeconfig={self.kubeconfig}",
            f"--metrics-addr=127.0.0.1:{ports['kuberay-metrics']}",
            f"--health-probe-bind-address=127.0.0.1:{ports['kuberay-probe']}",
            "--enable-leader-election=false",
            "--log-stdout-encoder=console",
            *batch,
        ]

    def _scheduler_args(self) -> list[str]:
        return [
            f"--kubeconfig={self.kubeconfig}",
            f"--authentication-kubeconfig={self.kubeconfig}",
            f"--authorization-kubeconfig={self.kubeconfig}",
            "--bind-address=127.0.0.1",
            "--secure-port=0",
            "--leader-elect=false",
        ]

    def _wait_registered(self, timeout: float) -> None:
        api = connect(self.kubeconfig)
        deadline = time.monotonic() + timeout
        while api.get(BY_KIND["ValidatingWebhookConfiguration"], "pykai-validation") is None:
            if time.monotonic() > deadline or not self.running():
                log = self.directory / "pykai-webhook.log"
                raise LocalClusterError(f"the admission webhook did not register; see {log}")
            time.sleep(0.2)

    def down(self) -> None:
        """Stop every process started by ``up`` (newest first) and wait for them to exit."""
        state = self._read_state()
        for name in reversed(list(state.get("pids", {}))):
            pid = state["pids"][name]
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                continue
            if not _gone_within(pid, 10.0):
                os.kill(pid, signal.SIGKILL)
                # reaped, so no zombie is left behind (a process in a slow disk write on a
                # loaded machine can take a while to die even of SIGKILL)
                _gone_within(pid, 60.0)
        self._state.unlink(missing_ok=True)

    def restart_apiserver(self, pause: float = 1.0, timeout: float = 60.0) -> None:
        """Kill kube-apiserver (SIGKILL: a crash), wait ``pause`` seconds, start it again on
        the same port (for fault tests: clients must recover by themselves)."""
        state = self._read_state()
        pids, ports = state["pids"], state["ports"]
        os.kill(pids["kube-apiserver"], signal.SIGKILL)
        while alive(pids["kube-apiserver"]):
            time.sleep(0.05)
        time.sleep(pause)
        self._launch(pids, ports, "kube-apiserver", self._apiserver_args(ports))
        token = (self.directory / "tokens.csv").read_text().split(",")[0]
        self._wait_ready(ports["api"], token, timeout)

    def running(self) -> bool:
        """True if every recorded process is alive."""
        pids = self._read_state().get("pids", {})
        if not pids:
            return False
        return all(alive(pid) for pid in pids.values())

    def status(self) -> dict[str, object]:
        """Processes, ports and the kubeconfig path."""
        state = self._read_state()
        return {"running": self.running(), "kubeconfig": str(self.kubeconfig), **state}

    # ---- internals ---------------------------------------------------------------------------

    def _start(
        self, program: str, args: list[str], log_name: str = "", env: dict[str, str] | None = None
    ) -> int:
        log_file = self.directory / f"{log_name or Path(program).name}.log"
        log = open(log_file, "ab")  # noqa: SIM115 - kept by the child
        process = subprocess.Popen(
            [program, *args],
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env={**os.environ, **env} if env else None,
        )
        return process.pid

    def _etcd_args(self, ports: dict[str, int]) -> list[str]:
        return [
            f"--data-dir={self.directory / 'etcd'}",
            f"--listen-client-urls=http://127.0.0.1:{ports['etcd']}",
            f"--advertise-client-urls=http://127.0.0.1:{ports['etcd']}",
            f"--listen-peer-urls=http://127.0.0.1:{ports['peer']}",
            f"--initial-advertise-peer-urls=http://127.0.0.1:{ports['peer']}",
            f"--initial-cluster=default=http://127.0.0.1:{ports['peer']}",
            "--unsafe-no-fsync",  # a throwaway store: a disk flush per write only slows tests
            "--log-level=warn",
        ]

    def _apiserver_args(self, ports: dict[str, int]) -> list[str]:
        d = self.directory
        return [
            f"--etcd-servers=http://127.0.0.1:{ports['etcd']}",
            "--bind-address=127.0.0.1",
            "--advertise-address=127.0.0.1",
            f"--secure-port={ports['api']}",
            f"--tls-cert-file={d / 'apiserver.crt'}",
            f"--tls-private-key-file={d / 'apiserver.key'}",
            f"--client-ca-file={d / 'ca.crt'}",
            f"--token-auth-file={d / 'tokens.csv'}",
            "--authorization-mode=RBAC",
            f"--service-account-key-file={d / 'sa.pub'}",
            f"--service-account-signing-key-file={d / 'sa.key'}",
            "--service-account-issuer=https://kubernetes.default.svc",
            "--service-cluster-ip-range=10.96.0.0/24",
            "--enable-priority-and-fairness=false",
            # no kubelet mounts service-account tokens here, so pods need no token secret
            "--disable-admission-plugins=ServiceAccount",
            "--max-requests-inflight=2000",
            "--max-mutating-requests-inflight=1000",
        ]

    def issue_client_certificate(
        self, user: str, groups: tuple[str, ...] = ()
    ) -> tuple[bytes, bytes]:
        """A client certificate and key (PEM) the apiserver takes as ``user`` in ``groups``."""
        authority = Authority.load(
            (self.directory / "ca.crt").read_bytes(), (self.directory / "ca.key").read_bytes()
        )
        return authority.issue(user, organizations=groups)

    def _write_keys(self, token: str) -> None:
        authority = Authority.new("pykai-local-ca")
        serving, serving_key = authority.issue("kube-apiserver", hosts=["127.0.0.1", "localhost"])
        write_private(self.directory / "ca.crt", authority.cert_pem)
        write_private(self.directory / "ca.key", authority.key_pem)
        write_private(self.directory / "apiserver.crt", serving)
        write_private(self.directory / "apiserver.key", serving_key)
        key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        write_private(
            self.directory / "sa.key",
            key.private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.TraditionalOpenSSL,
                serialization.NoEncryption(),
            ),
        )
        write_private(
            self.directory / "sa.pub",
            key.public_key().public_bytes(
                serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
            ),
        )
        write_private(
            self.directory / "tokens.csv", f'{token},admin,admin,"system:masters"\n'.encode()
        )

    def _write_kubeconfig(self, port: int, token: str) -> None:
        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {
                    "name": "pykai",
                    "cluster": {
                        "server": f"https://127.0.0.1:{port}",
                        "certificate-authority-data": base64.b64encode(
                            (self.directory / "ca.crt").read_bytes()
                        ).decode(),
                    },
                }
            ],
            "users": [{"name": "admin", "user": {"token": token}}],
            "contexts": [{"name": "pykai", "context": {"cluster": "pykai", "user": "admin"}}],
            "current-context": "pykai",
        }
        write_private(self.kubeconfig, json.dumps(config, indent=2).encode())

    def _write_state(self, pids: dict[str, int], ports: dict[str, int]) -> None:
        self._state.write_text(json.dumps({"pids": pids, "ports": ports}))

    def _read_state(self) -> dict[str, dict[str, int]]:
        if not self._state.exists():
            return {}
        state: dict[str, dict[str, int]] = json.loads(self._state.read_text())
        return state

    def _wait_ready(self, port: int, token: str, timeout: float) -> None:
        context = ssl.create_default_context(cafile=self.directory / "ca.crt")
        request = urllib.request.Request(
            f"https://127.0.0.1:{port}/readyz", headers={"Authorization": f"Bearer {token}"}
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(request, context=context, timeout=2) as response:
                    if response.status == 200:
                        return
            except OSError:
                pass
            if not self.running():
                break
            time.sleep(0.25)
        raise LocalClusterError(
            f"kube-apiserver did not become ready in {timeout:g}s; "
            f"see {self.directory}/kube-apiserver.log"
        )


def install_basics(
    api: KubeApi,
    timeout: float = 60.0,
    crds: Path = PYKAI_CRDS,
    kueue: Sequence[Path] = KUEUE_CRDS,
) -> None:
    """Create the CRDs of KAI's kinds (from ``crds``), KubeRay's (from its module), Kueue's
    kinds (``kueue``: as the chart ships them, or ``kueue_crds()``, Kueue's own) and the
    stand-in ProvisioningRequest, KAI's priority classes and default queues if missing, and
    wait until the CRDs serve."""
    files = {*crds.glob("*.yaml"), *kueue, *kuberay_crds(), *(LOCAL / "crds").glob("*.yaml")}
    definitions = [doc for path in sorted(files) for doc in _documents(path)]
    if not definitions:
        raise LocalClusterError(f"no CRDs under {crds}: run from a checkout of pykai")
    _create_missing(api, [*definitions, *builtin_priority_classes()])
    deadline = time.monotonic() + timeout
    for crd in definitions:
        while not _established(api, crd["metadata"]["name"]):
            if time.monotonic() > deadline:
                raise LocalClusterError(f"CRD {crd['metadata']['name']} not established")
            time.sleep(0.1)
    _create_missing(api, default_queues())


@functools.lru_cache(maxsize=64)
def _documents(path: Path) -> tuple[Obj, ...]:
    """The documents of a YAML file, read once per process with libyaml (KubeRay's three CRDs
    are 3 MB: 6 s in pure Python, 1 s in C); callers only send them, never change them."""
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    return tuple(doc for doc in yaml.load_all(path.read_text(), Loader=loader) if doc)


def _create_missing(api: KubeApi, objects: list[dict[str, object]]) -> None:
    for obj in objects:
        api.create_if_absent(BY_KIND[str(obj["kind"])], obj)


def _established(api: KubeApi, name: str) -> bool:
    found = api.get(BY_KIND["CustomResourceDefinition"], name) or {}
    return is_true(found, "Established")
