"""A real control plane (etcd + kube-apiserver built by scripts/kube-binaries) for kube tests."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from pykai.kube.localcluster import DEFAULT_BIN, LocalCluster

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def local_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    cluster = LocalCluster(tmp_path_factory.mktemp("kube"))
    cluster.up(controller_manager=False)
    yield cluster
    cluster.down()


def kubectl(cluster: LocalCluster, *args: str) -> str:
    """Debian's kubectl 1.20 against the local cluster; fails the test on a non-zero exit."""
    result = subprocess.run(
        [str(DEFAULT_BIN / "kubectl"), f"--kubeconfig={cluster.kubeconfig}", *args],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout
