"""consolidation on the engine alone: move controller-owned preemptible pods to make room."""

from __future__ import annotations

from pykai.engine.settings import SchedulerConfig
from pykai.model.builders import node, pod, podgroup, queue
from tests.engine.conftest import Engine

OWNER = {
    "apiVersion": "apps/v1",
    "kind": "ReplicaSet",
    "name": "rs",
    "uid": "rs-uid",
    "controller": True,
}


def running(
    name: str, node_name: str, *, owned: bool = True, priority: str = "train"
) -> list[dict]:  # type: ignore[type-arg]
    p = pod(
        f"{name}-0",
        group=name,
        gpus=2,
        node_name=node_name,
        phase="Running",
        uid=f"uid-{name}-0",
        creation="2024-01-01T00:00:00Z",
    )
    if owned:
        p["metadata"]["ownerReferences"] = [OWNER]
    return [
        podgroup(
            name,
            queue="q",
            priority_class=priority,
            uid=f"uid-{name}",
            creation="2024-01-01T00:00:00Z",
        ),
        p,
    ]


def pending_four() -> list[dict]:  # type: ignore[type-arg]
    return [
        podgroup("big", queue="q", uid="uid-big", creation="2024-01-01T00:01:00Z"),
        pod("big-0", group="big", gpus=4, uid="uid-big-0", creation="2024-01-01T00:01:00Z"),
    ]


def fragmented(engine: Engine, *, owned: bool = True) -> None:
    engine.add([node("n1", gpus=4), node("n2", gpus=4), queue("q")])
    engine.add(running("a", "n1", owned=owned) + running("b", "n2", owned=owned) + pending_four())


def test_one_pod_is_moved_so_a_four_gpu_job_fits(engine: Engine) -> None:
    fragmented(engine)
    result = engine.cycle()
    assert len(result.evictions) == 1 and result.evictions[0].reason == "Consolidated"
    moved = result.evictions[0].name
    assert "default/big-0" in result.pipelined and f"default/{moved}" in result.pipelined


def test_bare_pods_are_never_moved(engine: Engine) -> None:
    fragmented(engine, owned=False)
    assert engine.cycle().evictions == []


def test_non_preemptible_pods_are_not_moved(engine: Engine) -> None:
    engine.add([node("n1", gpus=4), node("n2", gpus=4), queue("q", gpu=(8, -1, 1))])
    engine.add(
        running("a", "n1", priority="build") + running("b", "n2", priority="build") + pending_four()
    )
    assert engine.cycle().evictions == []


def test_off_with_spread() -> None:
    engine = Engine(SchedulerConfig.model_validate({"placementStrategy": {"gpu": "spread"}}))
    fragmented(engine)
    assert engine.cycle().evictions == []


def test_no_move_when_the_job_cannot_fit_even_after(engine: Engine) -> None:
    engine.add([node("n1", gpus=4), node("n2", gpus=4), queue("q")])
    engine.add(running("a", "n1") + running("b", "n2"))
    engine.add(
        [
            podgroup("huge", queue="q", uid="uid-huge"),
            pod("huge-0", group="huge", gpus=6, uid="uid-huge-0"),
        ]
    )
    assert engine.cycle().evictions == []


def test_moved_pod_count_is_capped() -> None:
    engine = Engine(SchedulerConfig(maxConsolidationPreemptees=0))
    fragmented(engine)
    assert engine.cycle().evictions == []
