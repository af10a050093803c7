"""allocate: gangs, elastic growth, limits, quotas and placement, driven on the engine alone."""

from __future__ import annotations

import pytest

from pykai.engine.jobs import TaskStatus
from pykai.engine.settings import SchedulerConfig
from pykai.model.builders import node, pod, podgroup, queue
from tests.engine.conftest import Engine, gang


def test_gang_that_fits_is_bound_together(engine: Engine) -> None:
    engine.add([node("n1", gpus=4), node("n2", gpus=4), queue("q")])
    engine.add(gang("a", 3, gpus=2))
    result = engine.cycle()
    assert sorted(b.name for b in result.binds) == ["a-0", "a-1", "a-2"]
    assert all(t.status == TaskStatus.BINDING for t in engine.state.tasks.values())


def test_gang_that_does_not_fit_stays_pending_entirely(engine: Engine) -> None:
    engine.add([node("n1", gpus=4), node("n2", gpus=2), queue("q")])
    engine.add(gang("a", 4, gpus=2))
    result = engine.cycle()
    assert result.binds == []
    assert all(t.status == TaskStatus.PENDING for t in engine.state.tasks.values())
    assert [r.reason for r in result.unschedulable["default/a"]] == ["PodSchedulingErrors"]
    # node usage fully rolled back
    assert engine.state.nodes.used.sum() == 0


def test_binpack_fills_the_fullest_node_first(engine: Engine) -> None:
    engine.add([node("n1", gpus=8), node("n2", gpus=8), queue("q")])
    engine.add([pod("busy", gpus=5, node_name="n2", group="x"), podgroup("x", queue="q")])
    engine.add(gang("a", 1, gpus=2))
    engine.cycle()
    assert engine.placements()["a-0"] == "n2"


def test_spread_prefers_the_emptiest_node() -> None:
    engine = Engine(
        SchedulerConfig.model_validate({"placementStrategy": {"gpu": "spread", "cpu": "spread"}})
    )
    engine.add([node("n1", gpus=8), node("n2", gpus=8), queue("q")])
    engine.add([pod("busy", gpus=5, node_name="n2", group="x"), podgroup("x", queue="q")])
    engine.add(gang("a", 1, gpus=2))
    engine.cycle()
    assert engine.placements()["a-0"] == "n1"


def test_queue_limit_blocks_with_over_limit(engine: Engine) -> None:
    engine.add([node("n1", gpus=8), queue("q", gpu=(0, 3, 1))])
    engine.add(gang("a", 2, gpus=2))
    result = engine.cycle()
    assert result.binds == []
    reason = result.unschedulable["default/a"][0]
    assert reason.reason == "OverLimit"
    assert "limit 3" in reason.message


def test_parent_limit_applies_to_child(engine: Engine) -> None:
    engine.add([node("n1", gpus=8), queue("dept", gpu=(-1, 2, 1)), queue("q", parent="dept")])
    engine.add(gang("a", 1, gpus=3))
    result = engine.cycle()
    assert result.unschedulable["default/a"][0].reason == "OverLimit"
    assert 'queue "dept"' in result.unschedulable["default/a"][0].message


def test_non_preemptible_job_over_quota(engine: Engine) -> None:
    engine.add([node("n1", gpus=8), queue("q", gpu=(2, -1, 1))])
    engine.add(gang("inf", 1, gpus=4, priority="inference"))
    engine.add(gang("tr", 1, gpus=4, priority="train"))
    result = engine.cycle()
    assert [b.name for b in result.binds] == ["tr-0"]
    assert result.unschedulable["default/inf"][0].reason == "NonPreemptibleOverQuota"


def test_elastic_job_gets_extra_pods_after_gangs(engine: Engine) -> None:
    engine.add([node("n1", gpus=4), queue("q")])
    engine.add(gang("el", 4, gpus=1, min_member=1, creation="2024-01-01T00:00:00Z"))
    engine.add(gang("g", 2, gpus=1, creation="2024-01-01T00:00:01Z"))
    engine.cycle()
    placed = {k for k, v in engine.placements().items() if v}
    # el's minimum (1) and the whole gang g (2) run; one extra elastic pod fills the rest
    assert {"g-0", "g-1", "el-0"} <= placed
    assert len(placed) == 4


def test_missing_queue_is_reported(engine: Engine) -> None:
    engine.add([node("n1", gpus=4)])
    engine.add(gang("a", 1, gpus=1, queue_name="nope"))
    result = engine.cycle()
    assert result.unschedulable["default/a"][0].reason == "QueueDoesNotExist"


def test_gpu_explanation_names_largest_free(engine: Engine) -> None:
    engine.add([node("n1", gpus=2), node("n2", gpus=2), queue("q")])
    engine.add(gang("a", 1, gpus=4))
    result = engine.cycle()
    message = result.unschedulable["default/a"][0].message
    assert "needs 4 on one node, largest free is 2" in message
    assert "2 Insufficient nvidia.com/gpu" in message


def test_nodes_never_over_allocated(engine: Engine) -> None:
    engine.add([node(f"n{i}", gpus=8) for i in range(3)] + [queue("q")])
    for i in range(30):
        engine.add(gang(f"j{i}", 1, gpus=1 + i % 3))
    engine.cycle()
    nodes = engine.state.nodes
    assert (nodes.used <= nodes.alloc + 1e-9).all()
    assert nodes.used[:, 2].sum() == 24


def test_failed_gang_releases_what_it_held_for_the_next_job(engine: Engine) -> None:
    engine.add([node("n1", gpus=8), queue("q")])
    engine.add(gang("big", 2, gpus=8, creation="2024-01-01T00:00:00Z"))
    engine.add(gang("one", 1, gpus=8, creation="2024-01-01T00:00:01Z"))
    result = engine.cycle()
    assert [b.name for b in result.binds] == ["one-0"]


def shared(name: str, fraction: str, *, queue_name: str = "q", creation: str = "") -> list[dict]:  # type: ignore[type-arg]
    return [
        podgroup(name, queue=queue_name, uid=f"uid-{name}", creation=creation),
        pod(
            f"{name}-0",
            group=name,
            uid=f"uid-{name}-0",
            annotations={"gpu-fraction": fraction},
            creation=creation,
        ),
    ]


def test_fractions_share_one_gpu_group_and_close_it_when_the_last_leaves(engine: Engine) -> None:
    engine.add([node("n1", gpus=2), queue("q")])
    engine.add(shared("a", "0.7") + shared("b", "0.2"))
    result = engine.cycle()
    groups = {b.name: b.gpu_groups for b in result.binds}
    assert groups["a-0"] == groups["b-0"] and len(groups["a-0"]) == 1
    assert {b.gpu_portion for b in result.binds} == {0.7, 0.2}
    nodes = engine.state.nodes
    assert nodes.used[0, 2] == 1  # one device taken out of the idle count
    assert engine.state.subtree["q"].allocated.gpu == pytest.approx(0.9)  # quota counts fractions
    engine.state.remove("Pod", "default", "a-0")
    assert nodes.used[0, 2] == 1
    engine.state.remove("Pod", "default", "b-0")
    assert nodes.used[0, 2] == 0 and not nodes.shared["n1"].groups


def test_fraction_never_spans_devices(engine: Engine) -> None:
    engine.add([node("n1", gpus=2), queue("q")])
    for name in "abc":
        engine.add(shared(name, "0.6"))
    result = engine.cycle()
    assert len(result.binds) == 2  # the third 0.6 needs a third device
    assert result.binds[0].gpu_groups != result.binds[1].gpu_groups
