"""The Dockerfile, built here with buildah (scripts/image-builder: no image registry is reachable,
so the base is a Debian bookworm root with python3, made by mmdebstrap, in place of Python's
slim image): the image runs ``pykai`` as uid 65532, carries what ``pykai run`` and ``pykai
webhook`` need and nothing of the plot or dev extras, and its ``pykai run`` schedules a pod on a
real apiserver and answers its probes."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import ssl
import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from pykai.kube.api import connect
from pykai.kube.localcluster import LocalCluster, free_port
from pykai.model import builders
from pykai.model.kinds import BY_KIND
from tests.kube.conftest import ROOT, pinned_node, wait_for
from tests.setup_scripts import installed

IMAGE = "localhost/pykai:test"
UID = 65532


def buildah(*args: str, timeout: float = 900) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["buildah", "--storage-driver=vfs", *args],
        capture_output=True,
        text=True,
        check=False,
        timeout=timeout,
    )


def succeeded(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return result.stdout


@pytest.fixture(scope="module")
def image() -> Iterator[str]:
    """The Dockerfile built on the local base; removed afterwards with its build stage."""
    base = installed("image-builder").split()[-1]
    before = set(dangling())
    # the machine's trust store, for pip in the build (a TLS-intercepting proxy's CA, if any)
    trust = ssl.get_default_verify_paths().cafile or "/etc/ssl/certs/ca-certificates.crt"
    succeeded(
        buildah(
            "bud",
            "--isolation=chroot",
            f"--build-arg=BASE={base}",
            f"--volume={trust}:/etc/ssl/certs/ca-certificates.crt:ro",
            f"--tag={IMAGE}",
            str(ROOT),
        )
    )
    try:
        yield IMAGE
    finally:
        buildah("rmi", IMAGE)
        for stage in set(dangling()) - before:  # the build stage
            buildah("rmi", stage)


def dangling() -> list[str]:
    """Untagged images (a build's stages)."""
    return succeeded(buildah("images", "--quiet", "--filter=dangling=true")).split()


@pytest.fixture
def container(image: str) -> Iterator[str]:
    name = succeeded(buildah("from", "--quiet", image)).strip()
    try:
        yield name
    finally:
        buildah("rm", name)


def run_in(container: str, *command: str) -> subprocess.CompletedProcess[str]:
    return buildah("run", "--isolation=chroot", container, "--", *command, timeout=120)


def test_the_image_runs_pykai_unprivileged_with_the_runtime_only(
    image: str, container: str
) -> None:
    config = json.loads(succeeded(buildah("inspect", "--type=image", image)))["OCIv1"]["config"]
    assert config["User"] == f"{UID}:{UID}" and config["Entrypoint"] == ["pykai"]
    assert succeeded(run_in(container, "id", "-u")).strip() == str(UID)
    for command in ("run", "webhook"):
        assert "--kubeconfig" in succeeded(run_in(container, "pykai", command, "--help"))
    assert "--metrics-address" in succeeded(run_in(container, "pykai", "run", "--help"))
    # the plot extra, the dev extra and the installer itself are not in the image
    for module in ("matplotlib", "pytest", "hypothesis", "mypy", "pip"):
        missing = run_in(container, "python3", "-c", f"import {module}")
        assert missing.returncode != 0 and "ModuleNotFoundError" in missing.stderr, module
    for module in ("prometheus_client", "pythonjsonlogger", "numpy", "cryptography"):
        assert run_in(container, "python3", "-c", f"import {module}").returncode == 0, module


def test_the_image_schedules_a_pod(
    local_cluster: LocalCluster, container: str, tmp_path: Path
) -> None:
    """``pykai run`` from the image (host network: the apiserver is on loopback) binds a pod
    only its node takes, and answers its probes."""
    api = connect(local_cluster.kubeconfig)
    pin = pinned_node(local_cluster, "imaged-node", "imaged")
    pod = builders.pod("imaged-pod", gpus=1, labels={"kai.scheduler/queue": "imaged"})
    api.create(BY_KIND["Pod"], pin(pod))
    kubeconfig = tmp_path / "kubeconfig"  # readable by the image's user only
    kubeconfig.write_bytes(local_cluster.kubeconfig.read_bytes())
    kubeconfig.chmod(0o600)
    os.chown(kubeconfig, UID, UID)
    port = free_port()
    process = subprocess.Popen(
        [
            "buildah",
            "--storage-driver=vfs",
            "run",
            "--isolation=chroot",
            f"--volume={kubeconfig}:/etc/pykai/kubeconfig:ro",
            container,
            "--",
            "pykai",
            "run",
            "--kubeconfig=/etc/pykai/kubeconfig",
            f"--metrics-address=127.0.0.1:{port}",
            "--period=0.3",
            "--log-format=json",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,  # buildah and pykai: one process group, ended together
    )

    def answers(path: str) -> bool:
        try:
            return httpx.get(f"http://127.0.0.1:{port}{path}").status_code == 200
        except httpx.HTTPError:
            return False

    def node_of() -> str:
        found = api.get(BY_KIND["Pod"], "imaged-pod", "default") or {}
        return str((found.get("spec") or {}).get("nodeName") or "")

    try:
        assert wait_for(lambda: answers("/readyz") or process.poll() is not None, timeout=120)
        assert process.poll() is None
        assert wait_for(lambda: node_of() == "imaged-node", timeout=60)
        assert answers("/healthz")
        assert "kai_queue_allocated_gpus" in httpx.get(f"http://127.0.0.1:{port}/metrics").text
    finally:
        with contextlib.suppress(ProcessLookupError):  # already ended
            os.killpg(process.pid, signal.SIGTERM)
        output, _ = process.communicate(timeout=60)
    assert b'"msg": "ready:' in output, output[-3000:]
