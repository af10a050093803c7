"""A pod bound to a node that is not in the cluster (deleted, or never there) holds nothing a
queue can be charged for, as in KAI: its snapshot gives a pod its accepted resources only when
one of its nodes takes the pod in, and the proportion plugin charges queues those. The pod
still counts for its gang (its status is Running or Bound), and once the node exists its
resources count again. Other schedulers' pods on such a node take nothing from the total."""

from __future__ import annotations

import random

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from pykai.engine.state import ClusterState
from pykai.model.builders import node, pod, podgroup, queue
from pykai.model.meta import Obj
from pykai.model.priorityclass import builtin_priority_classes


def _objects() -> list[Obj]:
    return [
        *builtin_priority_classes(),
        queue("team"),
        node("n1", gpus=8),
        podgroup("train", queue="team", min_member=2, uid="pg-1"),
        pod("train-0", group="train", gpus=6, node_name="ghost", phase="Running", uid="p-0"),
        pod("train-1", group="train", gpus=1, node_name="n1", phase="Running", uid="p-1"),
    ]


def _load(objects: list[Obj]) -> ClusterState:
    state = ClusterState()
    for obj in objects:
        state.upsert(obj)
    return state


def test_a_pod_on_a_node_that_does_not_exist_is_not_charged_to_its_queue() -> None:
    state = _load(_objects())
    usage = state.subtree["team"]
    assert usage.allocated.gpu == 1 and usage.requested.gpu == 1
    job = state.jobs["default/train"]
    assert job.running == 2 and job.active == 2  # the gang is whole: both pods hold a place
    state.upsert(node("ghost", gpus=8))
    assert usage.allocated.gpu == 7 and usage.requested.gpu == 7
    state.remove("Node", "", "ghost")
    assert usage.allocated.gpu == 1 and usage.requested.gpu == 1
    assert state.usage["team"].allocated.gpu == 1


def test_a_node_that_cannot_be_read_still_charges_what_is_on_it() -> None:
    """ "A pod that holds a node always counts": an unreadable node stays (unschedulable)."""
    state = _load([*_objects(), node("ghost", gpus=8)])
    broken = node("ghost", gpus=8)
    broken["status"]["allocatable"]["cpu"] = "lots"
    state.upsert(broken)
    assert state.subtree["team"].allocated.gpu == 7


def test_another_schedulers_pod_on_a_missing_node_takes_nothing_from_the_total() -> None:
    state = _load(
        [node("n1", gpus=8), pod("theirs", gpus=4, node_name="gone", scheduler="default")]
    )
    assert state.total_capacity().gpu == 8
    state.upsert(node("gone", gpus=8))
    assert state.total_capacity().gpu == 12


@st.composite
def _histories(draw: st.DrawFn) -> tuple[list[Obj], list[str]]:
    """Objects in a random order, some pods on nodes that come, go or never exist; and the
    nodes deleted afterwards."""
    names = [f"n{i}" for i in range(4)]
    objects: list[Obj] = [*builtin_priority_classes(), queue("team"), queue("other")]
    objects += [node(n, gpus=8) for n in names[:3]]
    for j in range(draw(st.integers(1, 4))):
        objects.append(podgroup(f"j{j}", queue=draw(st.sampled_from(["team", "other"]))))
        for i in range(draw(st.integers(1, 3))):
            phase = draw(st.sampled_from(["Running", "Pending", ""]))
            where = draw(st.sampled_from(["", *names]))
            objects.append(
                pod(
                    f"j{j}-{i}", group=f"j{j}", gpus=1, node_name=where, phase=phase, uid=f"{j}-{i}"
                )
            )
    draw(st.randoms(use_true_random=False)).shuffle(objects)
    removed = draw(st.lists(st.sampled_from(names), unique=True))
    return objects, removed


@settings(max_examples=80, deadline=None)
@given(_histories(), st.integers(0, 2**16))
def test_queue_sums_equal_a_fresh_count_whatever_the_order(
    history: tuple[list[Obj], list[str]], seed: int
) -> None:
    objects, removed = history
    state = _load(objects)
    for name in removed:
        state.remove("Node", "", name)
    left = [o for o in objects if not (o["kind"] == "Node" and o["metadata"]["name"] in removed)]
    random.Random(seed).shuffle(left)
    fresh = _load(left)
    for name, usage in fresh.subtree.items():
        mine = state.subtree[name]
        assert np.allclose(tuple(usage.allocated), tuple(mine.allocated)), name
        assert np.allclose(tuple(usage.requested), tuple(mine.requested)), name
    state.ensure_current()
    fresh.ensure_current()
    assert state.total_capacity() == fresh.total_capacity()
