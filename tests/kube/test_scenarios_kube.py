"""A representative subset of the declarative scenarios (tests/scenarios), run against a real
kube-apiserver with ``pykai run`` instead of the embedded cluster, checked by the same
``check`` with the same expected outcomes. Each step's objects are created while pykai is
stopped (the embedded cluster applies a step at once, so a cycle never sees half a step);
then pykai runs until nothing changes any more, and the expectations are checked."""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from pykai.kube.api import KubeApi, connect
from pykai.kube.binding import RESERVATION_NAMESPACE
from pykai.kube.localcluster import LocalCluster, install_basics
from pykai.kube.nodes import create_ready_nodes
from pykai.model.kinds import BY_KIND
from pykai.model.meta import Obj
from tests.kube.conftest import PykaiProcess, fresh_cluster, pykai_running, wait_for
from tests.test_scenarios import check, load, namespace_of, read_objects

SUBSET = [
    "01-gang-fits",
    "02-gang-all-or-nothing",
    "07-queue-limit-leaf",
    "12-queue-does-not-exist",
    "18-fair-share-golden",
    "23-binpack-gpu",
    "24-spread-gpu",
    "27-node-selector",
    "29-taints-and-tolerations",
    "31-pre-bound-pod-counted",
    "33-explain-not-enough-gpus",
    "44-inference-preempts-training",
    "47-reclaim-evicts-whole-gang",
    "72-gpu-fractions-share-a-group",
    "73-gpu-fractions-spread",
    "77-gpu-group-freed-by-last-pod",
]
KINDS_READ = ("Pod", "PodGroup", "Queue", "Node")


class KubeScenarioCluster:
    """What ``check`` reads (``list`` and ``get``), over the apiserver."""

    def __init__(self, api: KubeApi) -> None:
        self.api = api

    def list(self, kind: str) -> list[Obj]:
        items, _ = self.api.list(BY_KIND[kind])
        return [i for i in items if i["metadata"].get("namespace") != RESERVATION_NAMESPACE]

    def get(self, kind: str, name: str, namespace: str = "") -> Obj | None:
        return self.api.get(BY_KIND[kind], name, namespace)

    def digest(self) -> str:
        """What the scheduler and controllers write, in one hash."""
        parts = []
        for kind in KINDS_READ:
            for obj in self.list(kind):
                meta = obj["metadata"]
                parts.append(
                    (
                        kind,
                        meta.get("namespace", ""),
                        meta["name"],
                        obj.get("spec", {}).get("nodeName"),
                        obj.get("status") if kind != "Node" else None,
                    )
                )
        return hashlib.sha256(json.dumps(sorted(parts, key=str), default=str).encode()).hexdigest()

    def settle(self, process: PykaiProcess, quiet: int = 3, timeout: float = 180.0) -> None:
        """Wait until nothing pykai writes has changed over ``quiet`` of its cycles."""
        deadline = time.monotonic() + timeout
        last, since = self.digest(), process.cycles()
        while time.monotonic() < deadline:
            assert process.wait_cycles(1, deadline - time.monotonic()), "pykai stopped cycling"
            now = self.digest()
            if now != last:
                last, since = now, process.cycles()
            elif process.cycles() - since >= quiet:
                return
        raise AssertionError("the cluster did not settle")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory, crds: Path) -> Iterator[LocalCluster]:
    """An empty cluster on pykai's CRDs, then one on KAI's."""
    with fresh_cluster(tmp_path_factory.mktemp("scenarios"), crds) as local:
        yield local


def wipe(api: KubeApi, crds: Path) -> None:
    """Remove everything a scenario made, and KAI's priority classes are put back."""
    for kind in ("Pod", "PodGroup", "BindRequest", "Queue", "Node", "PriorityClass"):
        items, _ = api.list(BY_KIND[kind])
        for item in items:
            meta = item["metadata"]
            if kind == "PriorityClass" and meta["name"].startswith("system-"):
                continue
            api.delete(BY_KIND[kind], meta["name"], meta.get("namespace", ""), 0)
    for kind in ("Pod", "Queue", "Node"):
        assert wait_for(lambda kind=kind: not api.list(BY_KIND[kind])[0], timeout=30)
    install_basics(api, crds=crds)


def create(api: KubeApi, objects: list[Obj]) -> None:
    """Create a step's objects in file order; nodes also get a Ready status."""
    for obj in objects:
        kind = obj["kind"]
        if kind == "Node":
            create_ready_nodes(api, [obj], time.time())
            continue
        body: dict[str, Any] = {k: v for k, v in obj.items() if k != "status"}
        if kind not in ("Queue", "PriorityClass"):
            body["metadata"] = {**obj["metadata"], "namespace": namespace_of(kind, obj)}
        api.create(BY_KIND[kind], body)


@pytest.mark.parametrize("name", SUBSET)
def test_scenario_on_apiserver(name: str, cluster: LocalCluster, tmp_path: Path) -> None:
    scenario = load(name)
    args = []
    if scenario.get("config"):
        (tmp_path / "config.yaml").write_text(yaml.safe_dump(scenario["config"]))
        args.append(f"--scheduler-config={tmp_path / 'config.yaml'}")
    api = connect(cluster.kubeconfig)
    wipe(api, cluster.crds)
    view = KubeScenarioCluster(api)
    for number, step in enumerate(scenario["steps"], start=1):
        where = f"{name} step {number} (apiserver)"
        assert "reject" not in step and "advance" not in step, "not in the subset's steps"
        if "apply" in step:
            create(api, read_objects(name, step["apply"]))
        for target in step.get("delete") or []:
            kind = target["kind"]
            api.delete(BY_KIND[kind], target["name"], namespace_of(kind, target.get("namespace")))
        with pykai_running(cluster, *args) as process:
            view.settle(process)
            if step.get("expect") is not None:
                check(view, step["expect"], where)  # type: ignore[arg-type]
