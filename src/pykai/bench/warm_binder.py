"""The least a warm scheduler must do to bind pods created while it runs, and nothing more:
the ``warm-ceiling`` row of ``pykai bench kube --shape warm``.

A process that has started, listed the nodes and the pods and watches the pods (as pykai's
informers do) POSTs one binding for each pending pod of ``scheduler`` as soon as the watch
shows it, round-robin over the nodes, from as many threads as the cold ceiling
(bench/cold_binder.py). No decisions, no state beyond the pods it has bound: what separates
pykai from it is pykai's own work. It runs until it is stopped (SIGTERM); a failed bind is
dropped.

Run as ``python -m pykai.bench.warm_binder KUBECONFIG SCHEDULER``.
"""

from __future__ import annotations

import itertools
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from pykai.bench.cold_binder import THREADS
from pykai.kube.api import connect
from pykai.model.kinds import BY_KIND
from pykai.model.meta import Obj


def serve(kubeconfig: Path, scheduler: str) -> None:
    """Bind every pending pod of ``scheduler``, those there now and those to come."""
    api = connect(kubeconfig)
    nodes, _ = api.list(BY_KIND["Node"], resource_version="0")
    targets = itertools.cycle(sorted(node["metadata"]["name"] for node in nodes))
    bound: set[str] = set()
    pool = ThreadPoolExecutor(THREADS)

    def offer(pod: Obj) -> None:
        meta, spec = pod["metadata"], pod.get("spec", {})
        if spec.get("schedulerName") != scheduler or spec.get("nodeName"):
            return
        if meta["uid"] in bound:
            return
        bound.add(meta["uid"])
        pool.submit(api.bind, meta["namespace"], meta["name"], next(targets), meta["uid"])

    pods, version = api.list(BY_KIND["Pod"])
    for pod in pods:
        offer(pod)
    while True:
        for event, pod in api.watch(BY_KIND["Pod"], version, timeout=60):
            version = pod.get("metadata", {}).get("resourceVersion", version)
            if event in ("ADDED", "MODIFIED"):
                offer(pod)


if __name__ == "__main__":
    serve(Path(sys.argv[1]), sys.argv[2])
