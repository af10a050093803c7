"""preempt and stale-gang eviction on the engine alone."""

from __future__ import annotations

from typing import Any

from pykai.engine.jobs import TaskStatus
from pykai.engine.settings import SchedulerConfig
from pykai.model.builders import node, queue
from pykai.model.meta import Obj
from tests.engine.conftest import Engine, gang

RUNNING_SINCE = "2024-01-01T00:00:00Z"
PENDING_SINCE = "2024-01-01T00:01:00Z"


def running_gang(name: str, size: int, *, gpus: int, node_name: str, **options: Any) -> list[Obj]:
    """A gang running on ``node_name`` since before anything pending was created."""
    return gang(name, size, gpus=gpus, node_name=node_name, creation=RUNNING_SINCE, **options)


def pending(name: str, *, gpus: int, priority: str, queue_name: str = "q") -> list[Obj]:
    """A one-pod job created after the running ones."""
    return gang(
        name, 1, gpus=gpus, priority=priority, queue_name=queue_name, creation=PENDING_SINCE
    )


def test_inference_preempts_the_whole_training_gang(engine: Engine) -> None:
    engine.add([node("n1", gpus=2), queue("q")])
    engine.add(running_gang("train", 2, gpus=1, node_name="n1"))
    engine.add(pending("serve", gpus=1, priority="inference"))
    result = engine.cycle()
    assert sorted(e.name for e in result.evictions) == ["train-0", "train-1"]
    assert all(e.reason == "Preempted" and "default/serve" in e.message for e in result.evictions)
    assert result.pipelined == ["default/serve-0"]
    # the evicted pods go; next cycle the inference pod binds
    for e in result.evictions:
        engine.state.remove("Pod", e.namespace, e.name)
    result = engine.cycle()
    assert [b.name for b in result.binds] == ["serve-0"]


def test_equal_priority_does_not_preempt(engine: Engine) -> None:
    engine.add([node("n1", gpus=1), queue("q")])
    engine.add(running_gang("a", 1, gpus=1, node_name="n1"))
    engine.add(pending("b", gpus=1, priority="train"))
    result = engine.cycle()
    assert result.evictions == []


def test_non_preemptible_victim_is_never_evicted(engine: Engine) -> None:
    engine.add([node("n1", gpus=1), queue("q")])
    engine.add(running_gang("build", 1, gpus=1, node_name="n1", priority="build"))
    engine.add(pending("serve", gpus=1, priority="inference"))
    assert engine.cycle().evictions == []


def test_preempt_stays_inside_the_queue(engine: Engine) -> None:
    engine.add([node("n1", gpus=1), queue("a"), queue("b")])
    engine.add(running_gang("train", 1, gpus=1, node_name="n1", queue_name="a"))
    engine.add(pending("serve", gpus=1, priority="inference", queue_name="b"))
    assert engine.cycle().evictions == []


def test_elastic_victim_loses_extra_pods_first(engine: Engine) -> None:
    engine.add([node("n1", gpus=4), queue("q")])
    engine.add(running_gang("el", 4, gpus=1, node_name="n1", min_member=2))
    engine.add(pending("serve", gpus=1, priority="inference"))
    result = engine.cycle()
    assert len(result.evictions) == 1
    assert result.evictions[0].name in {"el-2", "el-3"}


def test_only_victims_on_the_used_node_are_evicted(engine: Engine) -> None:
    engine.add([node("n1", gpus=1), node("n2", gpus=2), queue("q")])
    engine.add(running_gang("small", 1, gpus=1, node_name="n1"))
    engine.add(running_gang("wide", 1, gpus=2, node_name="n2"))
    engine.add(pending("serve", gpus=2, priority="inference"))
    result = engine.cycle()
    assert [e.name for e in result.evictions] == ["wide-0"]


def test_no_victim_when_the_preemptor_cannot_fit_anyway(engine: Engine) -> None:
    engine.add([node("n1", gpus=2), queue("q")])
    engine.add(running_gang("train", 1, gpus=2, node_name="n1"))
    engine.add(pending("serve", gpus=4, priority="inference"))
    assert engine.cycle().evictions == []


def test_min_runtime_protects_a_young_victim() -> None:
    engine = Engine(SchedulerConfig(defaultPreemptMinRuntime=600))
    engine.add([node("n1", gpus=1), queue("q")])
    gang = running_gang("train", 1, gpus=1, node_name="n1")
    gang[0]["metadata"]["annotations"] = {
        "kai.scheduler/last-start-timestamp": "1970-01-12T13:40:00Z"
    }
    engine.add(gang)
    engine.add(pending("serve", gpus=1, priority="inference"))
    engine.now = 1_000_000.0  # 1970-01-12T13:46:40Z: 400 s after the start
    assert engine.cycle().evictions == []
    engine.now += 300
    assert len(engine.cycle().evictions) == 1


def test_stale_gang_is_evicted_after_grace(engine: Engine) -> None:
    engine.add([node("n1", gpus=4), queue("q")])
    engine.add(running_gang("g", 3, gpus=1, node_name="n1"))
    engine.state.remove("Pod", "default", "g-2")
    engine.state.remove("Pod", "default", "g-1")
    start = engine.now
    first = engine.cycle()
    assert first.evictions == [] and first.stale["default/g"] == start
    engine.now = start + 59
    assert engine.cycle().evictions == []
    engine.now = start + 61
    result = engine.cycle()
    assert [e.name for e in result.evictions] == ["g-0"]
    assert result.evictions[0].reason == "StaleGang"
    assert engine.state.task_by_key("default", "g-0").status == TaskStatus.RELEASING  # type: ignore[union-attr]


def test_a_spent_search_budget_names_the_queues_of_the_jobs_left_untried() -> None:
    """The budget stops an action before its next job: the cycle says how many jobs of which
    queue it did not try (for the queue's warning), and nothing is evicted for them; with the
    default budget the same cluster reclaims."""
    objs = [node("n1", gpus=2), queue("d")]
    objs += [queue(name, parent="d", gpu=(1, -1, 1)) for name in ("q1", "q2")]
    objs += [*running_gang("a", 1, gpus=1, node_name="n1", queue_name="q1")]
    objs += [*running_gang("b", 1, gpus=1, node_name="n1", queue_name="q1")]
    objs += pending("c", gpus=1, priority="train", queue_name="q2")
    results = {}
    for budget in (1e-12, 10.0):
        engine = Engine(SchedulerConfig(actionSearchBudget=budget))
        engine.add(objs)
        results[budget] = engine.cycle()
    spent, default = results[1e-12], results[10.0]
    assert spent.untried["reclaim"] == {"q2": 1}
    assert spent.out_of_budget["reclaim"] == 1
    assert not spent.evictions
    assert not default.untried and not default.out_of_budget
    assert [e.name for e in default.evictions] == ["b-0"]
