"""The least a scheduler started cold must do before and while it binds, and nothing more: the
``cold-ceiling`` row of ``pykai bench kube``.

A fresh process loads pykai's API client only, reads the kubeconfig, lists the nodes and the
pods (from the apiserver's watch cache, as pykai's informers do), and POSTs one binding per
pending pod of ``scheduler``, round-robin over the nodes, from as many threads as the
``ceiling`` row. No decisions, no watch, no state: what separates it from ``ceiling`` is what
no scheduler started after its pods can skip (its start and learning what to bind).

Run as ``python -m pykai.bench.cold_binder KUBECONFIG SCHEDULER``.
"""

from __future__ import annotations

import itertools
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from pykai.kube.api import connect
from pykai.model.kinds import BY_KIND

THREADS = 32  # as the ``ceiling`` row


def bind_all(kubeconfig: Path, scheduler: str) -> int:
    """Bind every pending pod of ``scheduler``; how many were bound."""
    api = connect(kubeconfig)
    nodes, _ = api.list(BY_KIND["Node"], resource_version="0")
    pods, _ = api.list(BY_KIND["Pod"], resource_version="0")
    pending = [
        (pod["metadata"]["namespace"], pod["metadata"]["name"])
        for pod in pods
        if pod["spec"].get("schedulerName") == scheduler and not pod["spec"].get("nodeName")
    ]
    names = itertools.cycle(sorted(node["metadata"]["name"] for node in nodes))
    targets = [(namespace, name, next(names)) for namespace, name in pending]
    with ThreadPoolExecutor(THREADS) as pool:
        list(pool.map(lambda target: api.bind(*target), targets))
    return len(targets)


if __name__ == "__main__":
    bind_all(Path(sys.argv[1]), sys.argv[2])
