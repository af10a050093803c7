"""What would let a job run, tried by the engine on copies of a cluster's objects. Expected
outcomes follow KAI's rules: a pod needs its GPUs on one node; a queue's limit bounds its jobs
however empty the cluster; a gang needs minMember pods at once; a queue within its deserved
quota reclaims from one beyond it; nothing is evicted unless the preemptor can run."""

from __future__ import annotations

from pykai.engine.settings import SchedulerConfig
from pykai.engine.whatif import JobExplanation, explain_job
from pykai.model.builders import node, pod, podgroup, queue
from pykai.model.meta import Obj
from pykai.model.priorityclass import builtin_priority_classes

NOW = 1_000_000.0


def gang(
    name: str, queue_name: str, *, gpus: int, pods: int = 1, min_member: int = 0, on: str = ""
) -> list[Obj]:
    """A PodGroup with ``pods`` pods of ``gpus`` GPUs; ``on`` a node: they run there."""
    group = podgroup(name, queue=queue_name, min_member=min_member or pods, uid=f"uid-{name}")
    phase = "Running" if on else ""
    members = [
        pod(f"{name}-{i}", group=name, gpus=gpus, uid=f"uid-{name}-{i}", node_name=on, phase=phase)
        for i in range(pods)
    ]
    return [group, *members]


def explained(objects: list[Obj], job: str) -> JobExplanation:
    found = explain_job(
        [*builtin_priority_classes(), *objects], f"default/{job}", SchedulerConfig(), NOW
    )
    assert found is not None
    return found


def test_a_pod_bigger_than_every_node_can_never_run() -> None:
    found = explained(
        [node("n1", gpus=4), node("n2", gpus=2), queue("q"), *gang("big", "q", gpus=8)], "big"
    )
    assert (found.rule, found.now.runs, found.ever.runs) == ("node constraints", False, False)
    assert "can never run" in found.verdict
    assert "needs 8 on one node, largest free is 4" in found.verdict
    assert found.alternatives == ()


def test_a_limit_below_the_request_can_never_be_met() -> None:
    objects = [node("n1", gpus=8), queue("q", gpu=(0, 2, 1)), *gang("wide", "q", gpus=4)]
    found = explained(objects, "wide")
    assert (found.rule, found.ever.runs) == ("limit", False)
    assert found.ever.reasons[0].reason == "OverLimit"


def test_a_missing_queue_and_a_gang_short_of_pods() -> None:
    lost = explained([node("n1", gpus=8), *gang("lost", "nowhere", gpus=1)], "lost")
    assert lost.rule == "missing queue" and "does not exist" in lost.verdict
    short = explained(
        [node("n1", gpus=8), queue("q"), *gang("short", "q", gpus=1, pods=2, min_member=3)], "short"
    )
    assert short.rule == "gang" and "needs 3 (minMember), 2 exist" in short.verdict


def test_a_smaller_gang_or_fewer_gpus_would_run_now() -> None:
    # 4 GPUs free; a gang of 3 pods × 2 GPUs waits: 2 pods fit, and 1 GPU each would fit all 3
    objects = [node("n1", gpus=4), queue("q"), *gang("g", "q", gpus=2, pods=3)]
    found = explained(objects, "g")
    assert (found.now.runs, found.ever.runs) == (False, False)  # 6 GPUs never fit on one 4-GPU node
    objects = [node("n1", gpus=4), node("n2", gpus=2), queue("q")]
    objects += [*gang("hog", "q", gpus=2, on="n2"), *gang("g", "q", gpus=2, pods=3)]
    found = explained(objects, "g")
    assert (found.now.runs, found.ever.runs) == (False, True)
    assert [t.change for t in found.alternatives] == ["minMember 2", "1 GPU(s) per pod"]
    assert all(t.runs for t in found.alternatives)


def test_another_queue_under_its_limit_would_run_it() -> None:
    objects = [node("n1", gpus=8), queue("full", gpu=(0, 2, 1)), queue("free")]
    objects += [*gang("first", "full", gpus=2, on="n1"), *gang("next", "full", gpus=2)]
    found = explained(objects, "next")
    assert found.rule == "limit" and found.ever.runs
    assert [t.change for t in found.alternatives] == ["queue free"]


def test_a_reclaim_names_the_pods_it_would_evict() -> None:
    # queue a deserves the whole node and has nothing; b deserves none and holds it all
    objects = [node("n1", gpus=4), queue("a", gpu=(4, -1, 1)), queue("b", gpu=(0, -1, 1))]
    objects += [*gang("squatter", "b", gpus=4, on="n1"), *gang("owner", "a", gpus=4)]
    found = explained(objects, "owner")
    assert (found.now.runs, found.now.bound, found.rule) == (True, False, "none")
    assert found.now.evictions == ("default/squatter-0: Reclaimed by queue a for default/owner",)
    assert "once the 1 pod(s) evicted for it" in found.verdict


def test_a_queue_beyond_its_fair_share_may_not_reclaim() -> None:
    # a deserves 2 of the 4 GPUs and already runs 2; its next job would take it past its fair
    # share, so it may not reclaim from b, which runs only its own quota
    objects = [node("n1", gpus=4), queue("a", gpu=(2, -1, 1)), queue("b", gpu=(2, -1, 1))]
    objects += [*gang("a-run", "a", gpus=2, on="n1"), *gang("b-run", "b", gpus=2, on="n1")]
    objects += [*gang("a-more", "a", gpus=2), *gang("b-more", "b", gpus=2)]
    found = explained(objects, "a-more")
    assert (found.now.runs, found.rule) == (False, "fair share")
    assert "queue a would pass its fair share of gpu" in found.verdict
    assert [q.name for q in found.queues] == ["a"]
    assert found.queues[0].allocated.gpu == 2


def test_a_full_cluster_of_its_own_queues_jobs_is_capacity_not_fair_share() -> None:
    # one queue: its running job of the same priority holds the node; no other queue holds
    # anything to reclaim, and preemption takes only from lower priorities
    objects = [node("n1", gpus=4), queue("q"), *gang("r", "q", gpus=4, on="n1")]
    found = explained([*objects, *gang("p", "q", gpus=2)], "p")
    assert (found.now.runs, found.ever.runs, found.rule) == (False, True, "capacity")
    assert "held by jobs it may not take from" in found.verdict


def test_nothing_pending_has_no_explanation() -> None:
    objects = [
        *builtin_priority_classes(),
        node("n1", gpus=4),
        queue("q"),
        *gang("r", "q", gpus=1, on="n1"),
    ]
    assert explain_job(objects, "default/r", SchedulerConfig(), NOW) is None
    assert explain_job(objects, "default/none", SchedulerConfig(), NOW) is None
