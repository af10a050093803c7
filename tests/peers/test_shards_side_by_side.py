"""KAI's scheduling shards side by side (issue 23, item 5): one cluster split by the node-pool
label into the default shard (no label) and shard ``a``, under two real kai-schedulers
(``peer_kai.start`` + ``peer_kai.start_shard``) and under two ``pykai run
--components=scheduler --partition-label-value=…`` beside one process of the shared
components (pykai.compare.shards). The expected outcome is what the real KAI decided: which
pods are bound where (by node class: the pool label tells the pools' nodes apart), queue
allocation, PodGroup conditions and the pool each condition names.

The scenario: two 4-GPU nodes, two queues (root-a, team-a) and a two-pod gang labelled ``a``;
two 4-GPU nodes, two queues and jobs without the label. Step 2 adds a job to ``a`` when its
nodes are full and the default shard's have room (it must stay pending, not cross), and a job
to the default shard (it binds). Two PodGroups name a queue of the other shard (Queue names
are cluster-wide; each shard lists only the queues of its partition)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pykai.compare.scenario import Scenario, Step
from pykai.compare.shards import ShardRun, compare_shards
from pykai.compare.side_by_side import AGREE, Outcome
from pykai.kube import peer_kai, peers
from pykai.kube.localcluster import LocalCluster, kai_crds
from pykai.model import builders as b
from pykai.model.constants import NODE_POOL_LABEL
from pykai.model.meta import Obj
from tests.peers.test_compare_failures import processes_naming

PARTITIONS = ["", "a"]
QUEUE_OF_ANOTHER_SHARD = (
    "KAI v0.12.0 silently skips a PodGroup whose queue its shard does not list (no condition); "
    "pykai writes QueueDoesNotExist naming the shard's pool, as KAI does since #820: "
    "docs/conformance.md (s1)"
)

try:
    for _name in peer_kai.COMPONENTS:
        peers.binary(_name)
except peers.PeerMissing as missing:  # not in `make test`'s peers: `make peers` builds them
    pytestmark = pytest.mark.skip(reason=str(missing))


def pooled(obj: Obj, pool: str) -> Obj:
    if pool:
        obj["metadata"].setdefault("labels", {})[NODE_POOL_LABEL] = pool
    return obj


def job(name: str, queue: str, pool: str, pods: int, gpus: int) -> list[Obj]:
    """A PodGroup of ``pods`` pods of ``gpus`` GPUs each, all labelled with ``pool``."""
    group = pooled(b.podgroup(name, queue=queue, min_member=pods), pool)
    members = [
        pooled(b.pod(f"{name}-{i}", group=name, gpus=gpus, cpu="1"), pool) for i in range(pods)
    ]
    return [group, *members]


def shards_scenario(across: bool = False) -> Scenario:
    """Shard a full, the default shard with room; ``across``: plus two jobs whose queue lives
    in the other shard."""
    cluster: list[Obj] = []
    for pool, prefix in (("a", "node-a"), ("", "node-d")):
        cluster += [pooled(b.node(f"{prefix}-{i}", gpus=4, cpu="16"), pool) for i in range(2)]
        root, team = ("root-a", "team-a") if pool else ("root-d", "team-d")
        cluster += [pooled(b.queue(root), pool), pooled(b.queue(team, parent=root), pool)]
    first = [
        *cluster,
        *job("a-gang", "team-a", "a", pods=2, gpus=4),  # fills shard a's two nodes
        *job("d-one", "team-d", "", pods=1, gpus=2),
    ]
    if across:
        first += [
            *job("x-a-in-d", "team-d", "a", pods=1, gpus=1),  # shard a's job, default's queue
            *job("x-d-in-a", "team-a", "", pods=1, gpus=1),  # default's job, shard a's queue
        ]
    second = [
        *job("a-late", "team-a", "a", pods=1, gpus=2),  # a is full, default has room
        *job("d-two", "team-d", "", pods=1, gpus=4),
    ]
    steps = (Step("apply", objects=tuple(first)), Step("apply", objects=tuple(second)))
    name = "shards-queue-of-another-shard" if across else "shards-default-and-a"
    return Scenario(name, Path("."), {}, steps)


def report(outcome: Outcome, runs: tuple[ShardRun, ShardRun]) -> str:
    lines = [f"{outcome.name}: {outcome.verdict} {outcome.reasons}"]
    for found in outcome.differences:
        lines.append(f"  step {found.step} {found.field}\n    KAI:   {found.peer}")
        lines.append(f"    pykai: {found.pykai}")
    for run in runs:
        lines.append(f"  {run.record.side}: {run.record.seconds:.0f}s")
        for step in run.record.steps:
            lines.append(f"  {run.record.side} step {step.number}: {step.placed}")
        lines.append(f"  {run.record.side} pools: {run.pools}")
        if run.record.failure:
            lines.append(f"  {run.record.side}: {run.record.failure}\n{run.record.log_tail}")
    return "\n".join(lines)


def test_scenario_splits_across_both_pools() -> None:
    objects = [o for step in shards_scenario(across=True).steps for o in step.objects]
    pools = {(o["kind"], (o["metadata"].get("labels") or {}).get(NODE_POOL_LABEL)) for o in objects}
    for kind in ("Node", "Queue", "PodGroup", "Pod"):
        assert {(kind, "a"), (kind, None)} <= pools, kind


def test_a_shard_scheduler_needs_a_value_and_a_running_stack(tmp_path: Path) -> None:
    cluster = LocalCluster(tmp_path, crds=kai_crds())
    with pytest.raises(peer_kai.KaiStackError, match="default shard"):
        peer_kai.start_shard(cluster, "")
    with pytest.raises(peer_kai.KaiStackError, match="call start first"):
        peer_kai.start_shard(cluster, "a")
    assert peer_kai.scheduler_process("a") == "kai-scheduler-a"
    assert peer_kai.scheduler_process() == "kai-scheduler"


@pytest.mark.parametrize(
    "across",
    [
        pytest.param(False, id="default-and-a"),
        pytest.param(
            True,
            id="queue-of-another-shard",
            marks=pytest.mark.xfail(reason=QUEUE_OF_ANOTHER_SHARD, strict=True),
        ),
    ],
)
def test_two_shards_decide_as_the_real_kai_with_two_shards(across: bool, tmp_path: Path) -> None:
    scenario = shards_scenario(across)
    outcome, runs = compare_shards(scenario, tmp_path, PARTITIONS)
    print(report(outcome, runs))
    kai = runs[0].record
    assert not kai.failure, report(outcome, runs)
    # the real KAI's own partitioning, so that the comparison below is about shards: no pod is
    # bound to a node of another pool (the pod's label is its PodGroup's)
    pool_of = {
        f"{o['metadata'].get('namespace', 'default')}/{o['metadata']['name']}"
        if o["kind"] == "Pod"
        else o["metadata"]["name"]: (o["metadata"].get("labels") or {}).get(NODE_POOL_LABEL, "")
        for step in scenario.steps
        for o in step.objects
        if o["kind"] in ("Pod", "Node")
    }
    last = kai.steps[-1]
    for pod, node in last.placed.items():
        if node:
            assert pool_of[node] == pool_of[pod], (pod, node)
    assert last.placed["default/a-late-0"] == "", report(outcome, runs)
    assert last.placed["default/d-two-0"], report(outcome, runs)  # the default shard had room
    assert runs[0].pools[-1]["default/a-late"] == ("a",), report(outcome, runs)
    assert processes_naming(str(tmp_path)) == []
    assert outcome.verdict == AGREE, report(outcome, runs)
