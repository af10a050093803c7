"""scripts/peers: idempotent and cached by version, and failing at once with the module, its
version and what to check when the Go module proxy cannot serve it, leaving nothing behind."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

from pykai.kube import peers

SCRIPT = peers.REPO / "scripts/peers"
CACHE = Path(os.environ.get("PYKAI_PEERS_CACHE") or Path.home() / ".cache/pykai/peers")


def run(*args: str, **env: str) -> tuple[subprocess.CompletedProcess[str], float]:
    """scripts/peers ARGS with ``env`` over this environment; its answer and its seconds."""
    start = time.monotonic()
    done = subprocess.run(
        ["bash", str(SCRIPT), *args],
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
        env={**os.environ, **env},
    )
    return done, time.monotonic() - start


def test_a_second_run_builds_nothing(tmp_path: Path) -> None:
    """make test has built the tests' peers: another run only links them, into a new place."""
    done, seconds = run("--tests", PYKAI_PEERS=str(tmp_path / "peers"))
    assert done.returncode == 0, done.stderr
    assert "building" not in done.stderr
    assert done.stdout.strip().splitlines()[-1] == str(tmp_path / "peers")
    linked = tmp_path / "peers/bin/kube-apiserver"
    assert linked.is_symlink() and os.access(linked, os.X_OK)
    assert linked.resolve().parent == (CACHE / "bin").resolve()
    assert (tmp_path / "peers/modules/kwok/kustomize/stage").is_dir()
    assert seconds < 30


def test_the_versions_are_the_ones_pinned() -> None:
    assert peers.version("k8s.io/kubernetes") == "v1.34.4"
    out = subprocess.run(
        [str(peers.binary("kube-apiserver")), "--version"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stdout.strip() == "Kubernetes v1.34.4"
    out = subprocess.run(
        [str(peers.binary("helm")), "version", "--short"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stdout.startswith(peers.version("helm.sh/helm/v3"))


def test_an_unknown_name_is_refused() -> None:
    done, _ = run("kube-apiservr")
    assert done.returncode == 1
    assert "no peer named 'kube-apiservr'" in done.stderr


def test_no_proxy_fails_at_once_naming_the_module(tmp_path: Path) -> None:
    """An empty cache and a proxy that refuses connections: the first download fails, the
    message names a module@version and says what to check; no binary, nothing half-written."""
    cache = tmp_path / "cache"
    done, seconds = run(
        "etcd",
        PYKAI_PEERS_CACHE=str(cache),
        PYKAI_PEERS=str(tmp_path / "peers"),
        GOPROXY="http://127.0.0.1:9",
    )
    assert done.returncode == 1
    assert seconds < 60
    assert (
        "scripts/peers: fetching go.etcd.io/" in done.stderr
        or "scripts/peers: fetching" in done.stderr
    )
    assert "@v" in done.stderr.splitlines()[0]
    assert "did not serve a module above, or did not answer in time" in done.stderr
    assert not list((cache / "bin").iterdir())
    assert not (tmp_path / "peers/bin/etcd").exists()


def test_a_build_past_its_deadline_leaves_nothing_a_later_run_would_trust(
    tmp_path: Path,
) -> None:
    """The modules are there (shared), the build cache is empty and the deadline too short:
    the build is stopped, said so, and neither the binary nor its partial file is left."""
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / "go-mod").symlink_to(CACHE / "go-mod")
    done, seconds = run(
        "kwok",
        PYKAI_PEERS_CACHE=str(cache),
        PYKAI_PEERS=str(tmp_path / "peers"),
        PYKAI_PEERS_BUILD_DEADLINE="2",
    )
    assert done.returncode == 1, done.stderr
    assert "scripts/peers: building kwok from sigs.k8s.io/kwok@v" in done.stderr
    assert "did not finish within 2 s" in done.stderr
    assert "ran past its deadline" in done.stderr
    assert not list((cache / "bin").iterdir())
    assert seconds < 120
