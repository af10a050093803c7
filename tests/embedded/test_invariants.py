"""hypothesis: random sequences of applies, deletes and clock advances on the embedded cluster
keep pykai's promises (issue 3): no non-preemptible pod is evicted, no gang runs below its
minimum past the grace period, no node or GPU is over-allocated, and no job is preempted twice
in a row by the same preemptor."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pykai.embedded.cluster import EmbeddedCluster
from pykai.model.builders import node, pod, podgroup, queue
from pykai.model.quantity import count

PRIORITIES = ["train", "build-preemptible", "build", "inference"]
GRACE = 60.0

job_st = st.fixed_dictionaries(
    {
        "queue": st.sampled_from(["a", "b"]),
        "size": st.integers(1, 3),
        "min": st.integers(1, 3),
        "gpus": st.sampled_from([1, 2]),
        "priority": st.sampled_from(PRIORITIES),
    }
)
op_st = st.one_of(
    st.tuples(st.just("submit"), job_st),
    st.tuples(st.just("delete"), st.integers(0, 20)),
    st.tuples(st.just("advance"), st.sampled_from([10, 30, 61])),
)


def non_preemptible(cluster: EmbeddedCluster, group: str) -> bool:
    pg = cluster.get("PodGroup", group, "default")
    return pg is not None and pg["spec"]["priorityClassName"] in ("build", "inference")


def two_nodes_two_queues(path: str | None) -> EmbeddedCluster:
    """Two nodes of 4 GPUs and two queues of 4 GPUs each (in memory, or at ``path``)."""
    cluster = EmbeddedCluster.open(path)
    cluster.apply(
        [
            node("n1", gpus=4),
            node("n2", gpus=4),
            queue("a", gpu=(4, -1, 1)),
            queue("b", gpu=(4, -1, 1)),
        ]
    )
    return cluster


def run_op(cluster: EmbeddedCluster, op: str, arg: Any, name: str) -> None:
    """Submit job ``name``, delete a pod, or advance the clock."""
    if op == "submit":
        objs = [
            podgroup(
                name,
                queue=arg["queue"],
                min_member=min(arg["min"], arg["size"]),
                priority_class=arg["priority"],
            )
        ]
        objs += [
            pod(f"{name}-{i}", group=name, gpus=arg["gpus"], cpu="100m") for i in range(arg["size"])
        ]
        cluster.apply(objs)
    elif op == "delete":
        pods = cluster.list("Pod")
        if pods:
            target = pods[arg % len(pods)]["metadata"]["name"]
            cluster.delete("Pod", target, "default")
    else:
        cluster.advance(arg)


def group_evictions(cluster: EmbeddedCluster) -> list[tuple[str, str, str, str]]:
    """(PodGroup, KAI action, message, time) of every ``Evict`` event on a PodGroup (the
    message ends with "(action: <action>)")."""
    found = []
    for event in cluster.list("Event"):
        if event["reason"] == "Evict" and event["involvedObject"]["kind"] == "PodGroup":
            message = event["message"]
            action = message.rsplit("(action: ", 1)[1].rstrip(")")
            found.append(
                (event["involvedObject"]["name"], action, message, event["firstTimestamp"])
            )
    return found


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(op_st, min_size=1, max_size=12))
def test_promises_hold(ops: list[tuple[str, Any]]) -> None:
    cluster = two_nodes_two_queues(None)
    below_since: dict[str, float] = {}
    evictions: set[tuple[str, str, str]] = set()  # one per eviction of a job, not per pod
    for number, (op, arg) in enumerate(ops):
        run_op(cluster, op, arg, f"j{number}")
        now = cluster.now()
        for group, action, message, _ in group_evictions(cluster):
            assert not non_preemptible(cluster, group) or action == "stalegangeviction", message
        used: dict[str, float] = {}
        for p in cluster.list("Pod"):
            node_name = p["spec"].get("nodeName")
            if node_name:
                limits = p["spec"]["containers"][0]["resources"]["limits"]
                used[node_name] = used.get(node_name, 0.0) + count(
                    limits.get("nvidia.com/gpu", "0")
                )
        assert all(v <= 4 for v in used.values()), used
        for pg in cluster.list("PodGroup"):
            name = pg["metadata"]["name"]
            running = (pg.get("status") or {}).get("running", 0)
            if 0 < running < pg["spec"]["minMember"]:
                below_since.setdefault(name, now)
                assert now - below_since[name] <= GRACE, (
                    f"{name} below its minimum since {below_since[name]}"
                )
            else:
                below_since.pop(name, None)
        for victim, action, message, when in group_evictions(cluster):
            if action == "preempt":
                preemptor = message.split("Preempted by ")[-1].split(" ")[0]
                evictions.add((victim, preemptor, when))
        pairs = [f"{victim}>{preemptor}" for victim, preemptor, _ in evictions]
        assert len(pairs) == len(set(pairs)), (
            f"a job was preempted twice by the same preemptor: {pairs}"
        )


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(op_st, min_size=1, max_size=10))
def test_status_of_what_changed_is_the_full_status(ops: list[tuple[str, Any]]) -> None:
    """Each round writes status only for the jobs that changed (issue 12); a command opening
    the file afresh checks every object's status, and must find nothing left to write."""
    with tempfile.TemporaryDirectory() as folder:
        path = str(Path(folder) / "cluster.db")
        cluster = two_nodes_two_queues(path)
        for number, (op, arg) in enumerate(ops):
            run_op(cluster, op, arg, f"j{number}")
        fresh = EmbeddedCluster.open(path)
        fresh.settle()
        assert fresh.writes == 0
