"""Where the real counterparts are: the binaries scripts/peers built from the Go modules pinned in
tools/peers/ (kube-apiserver, etcd, KWOK, the KubeRay operator, Helm, …) and the modules whose
files pykai reads at run time (KAI's and KubeRay's CRDs, KWOK's stages). scripts/peers links
them into one directory, ``<checkout>/.pykai/peers`` unless ``PYKAI_PEERS`` names another:
``bin/NAME`` and ``modules/NAME``. Nothing here builds; a missing peer is an error that says
which command makes it."""

from __future__ import annotations

import os
import re
from pathlib import Path

from pykai.model.errors import PykaiError

REPO = Path(__file__).resolve().parents[3]
TOOLS = REPO / "tools/peers"


class PeerMissing(PykaiError, FileNotFoundError):
    """A peer scripts/peers has not built or fetched (the message says how to get it)."""


def directory() -> Path:
    """Where scripts/peers links what it built and fetched."""
    return Path(os.environ.get("PYKAI_PEERS") or REPO / ".pykai/peers")


def binary(name: str) -> Path:
    """The peer binary ``name`` (``kube-apiserver``, ``kwok``, ``helm``, …)."""
    path = directory() / "bin" / name
    if not os.access(path, os.X_OK):
        raise PeerMissing(f"{path} is missing: run scripts/peers (or make peers) to build {name}")
    return path


def module(name: str) -> Path:
    """The source of the peer module ``name`` (``kai``, ``kuberay``, ``kwok``, ``kueue``)."""
    path = directory() / "modules" / name
    if not path.is_dir():
        raise PeerMissing(f"{path} is missing: run scripts/peers (or make peers) to fetch {name}")
    return path


def version(module_path: str) -> str:
    """The version of Go module ``module_path`` that tools/peers pins (``v1.34.4`` for
    ``k8s.io/kubernetes``), or "" if no group requires it."""
    pattern = re.compile(rf"^\s*(?:require\s+)?{re.escape(module_path)}\s+(v\S+)", re.MULTILINE)
    for go_mod in sorted(TOOLS.glob("*/go.mod")):
        found = pattern.search(go_mod.read_text())
        if found:
            return found.group(1)
    return ""
