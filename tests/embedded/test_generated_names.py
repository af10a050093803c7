"""Names the workload controllers generate never make a create fail: when one is taken, another
suffix is tried (as the API server's generateName does), and untaken names stay what they
always were."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pykai.embedded.cluster import EmbeddedCluster
from pykai.model import constants as c
from pykai.model.builders import node, pod
from pykai.model.errors import AlreadyExists
from pykai.model.meta import Obj
from pykai.standins.pods import NAME_ATTEMPTS, create_named

TEMPLATE = {
    "metadata": {"labels": {"app": "web", c.QUEUE_LABEL: "default-queue"}},
    "spec": {"schedulerName": c.SCHEDULER_NAME, "containers": [{"name": "m", "image": "x"}]},
}


def job(name: str, parallelism: int) -> Obj:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name},
        "spec": {
            "parallelism": parallelism,
            "template": {**TEMPLATE, "spec": {**TEMPLATE["spec"], "restartPolicy": "Never"}},
        },
    }


def deployment(name: str, replicas: int) -> Obj:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": "web"}},
            "template": TEMPLATE,
        },
    }


def rayservice(name: str) -> Obj:
    head = {"template": TEMPLATE}
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayService",
        "metadata": {"name": name, "labels": {c.QUEUE_LABEL: "default-queue"}},
        "spec": {"rayClusterConfig": {"headGroupSpec": head, "workerGroupSpecs": []}},
    }


def squatter(kind: str, name: str, api_version: str = "v1") -> Obj:
    """An object nobody owns, holding a name a controller would generate."""
    spec: dict[str, Any] = {"containers": TEMPLATE["spec"]["containers"]}
    if kind == "ReplicaSet":
        spec = {"replicas": 0, "selector": {"matchLabels": {"app": "web"}}, "template": TEMPLATE}
    if kind == "RayCluster":
        spec = {"headGroupSpec": {"template": TEMPLATE}, "workerGroupSpecs": []}
    return {"apiVersion": api_version, "kind": kind, "metadata": {"name": name}, "spec": spec}


def names(cluster: EmbeddedCluster, kind: str) -> list[str]:
    return sorted(o["metadata"]["name"] for o in cluster.list(kind, "default"))


def owned_names(cluster: EmbeddedCluster, kind: str, owner: str) -> list[str]:
    return sorted(
        o["metadata"]["name"]
        for o in cluster.list(kind, "default")
        if any(r["name"] == owner for r in o["metadata"].get("ownerReferences") or [])
    )


def test_pod_names_taken_by_other_pods_are_skipped_and_the_rest_are_unchanged() -> None:
    plain = EmbeddedCluster.open(None)
    plain.apply([job("train", 3)])
    usual = owned_names(plain, "Pod", "train")
    assert len(usual) == 3
    crowded = EmbeddedCluster.open(None)
    taken = [squatter("Pod", usual[0]), squatter("Pod", usual[2])]
    crowded.apply([job("train", 3), *taken])  # the job first: the same uid, the same names
    mine = owned_names(crowded, "Pod", "train")
    assert len(mine) == 3 and usual[1] in mine
    assert not {usual[0], usual[2]} & set(mine)
    assert all(name.startswith("train-") for name in mine)
    assert crowded.settle() == 1  # and the cluster settles


def test_a_replicaset_name_taken_by_another_gets_another_hash() -> None:
    plain = EmbeddedCluster.open(None)
    plain.apply([deployment("web", 2)])
    [usual] = owned_names(plain, "ReplicaSet", "web")
    crowded = EmbeddedCluster.open(None)
    crowded.apply([squatter("ReplicaSet", usual, "apps/v1"), deployment("web", 2)])
    [mine] = owned_names(crowded, "ReplicaSet", "web")
    assert mine != usual and mine.startswith("web-")
    replicaset = crowded.get("ReplicaSet", mine, "default")
    assert replicaset is not None
    assert replicaset["metadata"]["labels"]["pod-template-hash"] == mine.removeprefix("web-")
    assert len(owned_names(crowded, "Pod", mine)) == 2
    assert names(crowded, "ReplicaSet") == sorted([usual, mine])  # the other one is left alone
    assert crowded.settle() == 1


def test_a_rayservice_cluster_name_taken_by_another_raycluster_gets_another_suffix() -> None:
    plain = EmbeddedCluster.open(None)
    plain.apply([node("n1"), rayservice("serve")])
    [usual] = owned_names(plain, "RayCluster", "serve")
    crowded = EmbeddedCluster.open(None)
    crowded.apply([node("n1"), rayservice("serve"), squatter("RayCluster", usual, "ray.io/v1")])
    [mine] = owned_names(crowded, "RayCluster", "serve")
    assert mine != usual and mine.startswith("serve-")  # KubeRay's <rayservice>-<5 random>
    service = crowded.get("RayService", "serve", "default")
    assert service is not None
    status = service["status"]
    named = status.get("activeServiceStatus") or status["pendingServiceStatus"]
    assert named["rayClusterName"] == mine


class Crowded:
    """A WorkloadHost whose every name in ``taken`` exists already."""

    def __init__(self, taken: set[str]) -> None:
        self.taken = taken
        self.tried: list[str] = []

    def create(self, obj: Obj) -> Obj:
        name = obj["metadata"]["name"]
        self.tried.append(name)
        if name in self.taken:
            raise AlreadyExists(name)
        return obj


def named(token: str) -> Obj:
    return pod(f"p-{token}")


def test_create_named_tries_the_seed_then_numbered_variants_then_gives_up() -> None:
    host = Crowded({"p-s", "p-s/1"})
    assert create_named(host, named, "s")["metadata"]["name"] == "p-s/2"  # type: ignore[arg-type]
    assert host.tried == ["p-s", "p-s/1", "p-s/2"]
    hopeless = Crowded({f"p-s/{n}" for n in range(1, NAME_ATTEMPTS)} | {"p-s"})
    with pytest.raises(AlreadyExists, match="every name"):
        create_named(hopeless, named, "s")  # type: ignore[arg-type]
    assert len(hopeless.tried) == NAME_ATTEMPTS


def test_a_replicaset_is_named_alike_on_both_stores_whatever_the_key_order(
    tmp_path: Path,
) -> None:
    """The ReplicaSet's name hashes the pod template, not the order its keys were written in:
    a SQLite file hands them back sorted, the memory store as written."""
    reordered = deployment("web", 1)
    template = reordered["spec"]["template"]
    reordered["spec"]["template"] = {"spec": template["spec"], "metadata": template["metadata"]}
    made = []
    for path in (tmp_path / "c.db", None):
        cluster = EmbeddedCluster.open(path)
        cluster.apply([reordered])
        made.append(names(cluster, "ReplicaSet"))
        cluster.close()
    assert made[0] == made[1] and len(made[0]) == 1
