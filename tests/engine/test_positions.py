"""Positions of pending jobs: in their queue (KAI's job order) and in the order allocate tries
jobs (KAI's queue order down the tree); expected orders follow KAI's rules
(plugins/priority, plugins/elastic, proportion/queue_order)."""

from __future__ import annotations

from pykai.engine.decisions import Reason
from pykai.engine.positions import pending_positions, recorded_reasons
from pykai.model.builders import node, pod, podgroup, queue
from pykai.model.meta import Obj
from pykai.model.positions import Position
from tests.engine.conftest import Engine


def job(
    name: str, queue_name: str, *, gpus: int = 1, pods: int = 1, priority: str = "train", at: int
) -> list[Obj]:
    """A pending gang of ``pods`` pods created ``at`` seconds into the day."""
    creation = f"2026-01-01T00:00:{at:02d}Z"
    objs = [
        podgroup(
            name,
            queue=queue_name,
            min_member=pods,
            priority_class=priority,
            uid=f"uid-{name}",
            creation=creation,
        )
    ]
    objs += [
        pod(f"{name}-{i}", group=name, gpus=gpus, uid=f"uid-{name}-{i}", creation=creation)
        for i in range(pods)
    ]
    return objs


def by_job(positions: list[Position]) -> dict[str, Position]:
    return {p.job.split("/")[1]: p for p in positions}


def cycle_order(positions: list[Position]) -> list[str]:
    tried = [p for p in positions if p.in_cycle is not None]
    return [p.job.split("/")[1] for p in sorted(tried, key=lambda p: p.in_cycle or 0)]


def test_in_a_queue_higher_priority_goes_first_then_the_older_job(engine: Engine) -> None:
    engine.add([node("n1", gpus=0), queue("q")])
    engine.add(job("old", "q", at=1))
    engine.add(job("new", "q", at=2))
    engine.add(job("urgent", "q", priority="inference", at=3))  # 125 beats train's 50
    found = by_job(pending_positions(engine.state, engine.now))
    assert {name: p.in_queue for name, p in found.items()} == {"urgent": 0, "old": 1, "new": 2}
    assert found["urgent"].priority == 125


def test_a_queue_within_its_quota_goes_before_one_beyond_it(engine: Engine) -> None:
    # Both queues deserve 2 GPUs; after a1 (2 GPUs) queue a is no longer starved with its next
    # job while b still is, so b1 is tried before a2 though a2 is older.
    engine.add([node("n1", gpus=0), queue("a", gpu=(2, -1, 1)), queue("b", gpu=(2, -1, 1))])
    engine.add([*job("a1", "a", gpus=2, at=1), *job("a2", "a", gpus=2, at=2)])
    engine.add([*job("a3", "a", gpus=2, at=3), *job("b1", "b", gpus=2, at=4)])
    positions = pending_positions(engine.state, engine.now)
    assert cycle_order(positions) == ["a1", "b1", "a2", "a3"]
    found = by_job(positions)
    assert (found["b1"].in_queue, found["b1"].in_cycle) == (0, 1)
    assert (found["a3"].in_queue, found["a3"].in_cycle) == (2, 3)


def test_a_higher_priority_queue_goes_first_whatever_its_share(engine: Engine) -> None:
    engine.add([node("n1", gpus=4), queue("low", gpu=(0, -1, 1))])
    engine.add([queue("high", gpu=(0, -1, 1), priority=200)])
    engine.add([*job("l1", "low", at=1), *job("h1", "high", at=2), *job("h2", "high", at=3)])
    assert cycle_order(pending_positions(engine.state, engine.now)) == ["h1", "h2", "l1"]


def test_running_jobs_count_for_their_queue_and_have_no_position(engine: Engine) -> None:
    # Queue a already runs 2 GPUs, its whole quota: b's job comes first though a's is older.
    engine.add([node("n1", gpus=2), queue("a", gpu=(2, -1, 1)), queue("b", gpu=(2, -1, 1))])
    engine.add(job("running", "a", gpus=2, at=0))
    engine.cycle()
    engine.add([*job("a1", "a", gpus=2, at=1), *job("b1", "b", gpus=2, at=2)])
    positions = pending_positions(engine.state, engine.now)
    assert cycle_order(positions) == ["b1", "a1"]
    assert "running" not in by_job(positions)


def test_a_job_allocate_will_not_try_has_no_place_but_its_blocker(engine: Engine) -> None:
    engine.add([node("n1", gpus=4), queue("q")])
    engine.add([*job("lost", "nowhere", at=1), *job("ok", "q", at=2)])
    found = by_job(pending_positions(engine.state, engine.now))
    assert (found["lost"].in_queue, found["lost"].in_cycle) == (None, None)
    assert found["lost"].reason == "QueueDoesNotExist"
    assert (found["ok"].in_queue, found["ok"].in_cycle) == (0, 0)


def test_reasons_given_are_kept_and_nothing_in_the_state_changes(engine: Engine) -> None:
    engine.add([node("n1", gpus=1), queue("q")])
    engine.add(job("big", "q", gpus=4, at=1))
    result = engine.cycle()
    used = engine.state.nodes.used.copy()
    found = by_job(pending_positions(engine.state, engine.now, result.unschedulable))
    assert found["big"].reason == "PodSchedulingErrors"
    assert found["big"].reasons == tuple(result.unschedulable["default/big"])
    assert (engine.state.nodes.used == used).all()
    assert engine.state.usage["q"].allocated.gpu == 0


def test_recorded_reasons_read_a_podgroups_conditions_and_tolerate_junk() -> None:
    group = podgroup("g", queue="q")
    group["status"] = {
        "schedulingConditions": [
            {"reasons": [{"reason": "OverLimit", "message": "limit 2"}, {"message": "no code"}]},
            "junk",
        ]
    }
    assert recorded_reasons(group) == [Reason("OverLimit", "limit 2")]
    assert recorded_reasons(podgroup("h", queue="q")) == []
    assert recorded_reasons({**group, "status": "junk"}) == []
