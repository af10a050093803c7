"""Helpers to drive the engine directly, with no backend."""

from __future__ import annotations

from collections.abc import Iterable

import pytest

from pykai.engine.decisions import CycleResult
from pykai.engine.scheduler import Scheduler
from pykai.engine.settings import SchedulerConfig
from pykai.engine.state import ClusterState
from pykai.model.builders import pod, podgroup
from pykai.model.meta import Obj
from pykai.model.priorityclass import builtin_priority_classes


class Engine:
    """A ClusterState plus a Scheduler, confirming binds as a backend would."""

    def __init__(self, config: SchedulerConfig | None = None) -> None:
        self.state = ClusterState()
        self.scheduler = Scheduler(config)
        self.now = 1_000_000.0
        for pc in builtin_priority_classes():
            self.state.upsert(pc)

    def add(self, objects: Iterable[Obj]) -> None:
        for obj in objects:
            self.state.upsert(obj)

    def cycle(self) -> CycleResult:
        result = self.scheduler.run_cycle(self.state, self.now)
        self.now += 1
        return result

    def placements(self) -> dict[str, str]:
        """pod name -> node ('' when not placed)."""
        return {t.name: t.node for t in self.state.tasks.values()}


@pytest.fixture
def engine() -> Engine:
    return Engine()


def gang(
    name: str,
    size: int,
    *,
    gpus: int,
    queue_name: str = "q",
    min_member: int | None = None,
    priority: str = "train",
    creation: str = "",
    node_name: str | None = None,
) -> list[Obj]:
    """A PodGroup of ``size`` pods of ``gpus`` GPUs each: pending, or running on ``node_name``."""
    group = podgroup(
        name,
        queue=queue_name,
        min_member=min_member or size,
        priority_class=priority,
        uid=f"uid-{name}",
        creation=creation,
    )
    placed = {"node_name": node_name, "phase": "Running"} if node_name else {}
    pods = [
        pod(
            f"{name}-{i}", group=name, gpus=gpus, uid=f"uid-{name}-{i}", creation=creation, **placed
        )
        for i in range(size)
    ]
    return [group, *pods]
