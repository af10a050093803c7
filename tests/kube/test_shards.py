"""KAI's scheduling shards on a real apiserver, deployed as KAI deploys them: one process of
the components that serve every shard (binder, pod-grouper, controllers) and one scheduler per
partition of the node-pool label. They split the cluster as KAI's schedulers do
(conf/scheduler_conf.go: a shard sees only the nodes, queues and PodGroups whose
`kai.scheduler/node-pool` label holds its value; the pod-grouper's PodGroups carry the pod's
label, podgrouper/pod_controller.go). Expected outcomes from KAI's code."""

from __future__ import annotations

import time
from pathlib import Path

from pykai.kube.api import connect
from pykai.kube.nodes import create_ready_nodes
from pykai.model import builders as b
from pykai.model.constants import NODE_POOL_LABEL
from pykai.model.kinds import BY_KIND
from pykai.model.meta import Obj
from tests.kube.conftest import fresh_cluster, pykai_running, wait_for


def labelled(obj: Obj, pool: str) -> Obj:
    obj["metadata"].setdefault("labels", {})[NODE_POOL_LABEL] = pool
    return obj


def shard_objects() -> list[Obj]:
    objects: list[Obj] = []
    for pool in ("a", "b"):
        objects.append(labelled(b.node(f"node-{pool}", gpus=8), pool))
        objects.append(labelled(b.queue(f"root-{pool}"), pool))
        objects.append(labelled(b.queue(f"team-{pool}", parent=f"root-{pool}"), pool))
    for name, pool, count in (("a", "a", 3), ("b", "b", 1)):
        for index in range(count):
            labels = {NODE_POOL_LABEL: pool, "kai.scheduler/queue": f"team-{pool}"}
            objects.append(b.pod(f"{name}-{index}", gpus=4, labels=labels))
    # no label: the default shard's, and no default shard runs
    objects.append(b.pod("plain-0", gpus=1, labels={"kai.scheduler/queue": "team-a"}))
    return objects


def test_two_shards_each_schedule_only_their_partition(tmp_path: Path) -> None:
    with fresh_cluster(tmp_path) as cluster:
        api = connect(cluster.kubeconfig)
        objects = shard_objects()
        create_ready_nodes(api, [o for o in objects if o["kind"] == "Node"], time.time())
        for obj in (o for o in objects if o["kind"] != "Node"):
            api.create(BY_KIND[obj["kind"]], obj)
        shard = ("--components=scheduler", "--leader-elect", "--lease-namespace=default")
        shared = "--components=binder,podgrouper,queuecontroller,podgroupcontroller"
        with (
            pykai_running(cluster, shared),
            pykai_running(cluster, "--partition-label-value=a", *shard),
            pykai_running(cluster, "--partition-label-value=b", *shard),
        ):

            def placed() -> dict[str, str]:
                pods, _ = api.list(BY_KIND["Pod"])
                return {p["metadata"]["name"]: p["spec"].get("nodeName", "") for p in pods}

            def settled() -> bool:
                where = placed()
                return sum(1 for n in where.values() if n) == 3

            assert wait_for(settled, 120), placed()
            where = placed()
            # shard a sees only node-a (8 GPUs): two of its three 4-GPU pods, though node-b
            # has room; shard b puts its pod on node-b; the unlabelled pod has no shard
            assert sorted(n for p, n in where.items() if p.startswith("a-")) == [
                "",
                "node-a",
                "node-a",
            ], where
            assert where["b-0"] == "node-b", where
            assert where["plain-0"] == "", where

            def groups() -> dict[str, Obj]:
                items, _ = api.list(BY_KIND["PodGroup"])
                return {g["metadata"]["name"]: g for g in items}

            # each PodGroup carries its pod's node pool; the pending one's condition names
            # its pool (KAI's UnschedulableOnNodePool); the plain pod is grouped, unlabelled
            def pending_condition() -> bool:
                found = groups()
                pools = {
                    (g["metadata"].get("labels") or {}).get(NODE_POOL_LABEL) for g in found.values()
                }
                conditions = [
                    c
                    for g in found.values()
                    for c in (g.get("status") or {}).get("schedulingConditions") or []
                ]
                return pools == {"a", "b", None} and any(
                    c.get("nodePool") == "a" for c in conditions
                )

            assert wait_for(pending_condition, 60), groups()
            assert len(groups()) == 5, sorted(groups())
            # the controllers serve every partition: the running pods' PodGroups are Running
            assert wait_for(
                lambda: (
                    sum(
                        (g.get("status") or {}).get("phase") == "Running" for g in groups().values()
                    )
                    == 3
                ),
                60,
            ), groups()
            leases, _ = api.list(BY_KIND["Lease"])
            names = {lease["metadata"]["name"] for lease in leases}
            assert {"pykai-scheduler-a", "pykai-scheduler-b"} <= names, names
