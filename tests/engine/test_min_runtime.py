"""Min-runtime resolution: inheritance up the queue tree and KAI's LCA rule for reclaim."""

from __future__ import annotations

from pykai.engine.min_runtime import preempt_min_runtime, reclaim_min_runtime
from pykai.engine.session import Session
from pykai.engine.settings import SchedulerConfig
from pykai.model.builders import podgroup, queue
from tests.engine.conftest import Engine


def with_runtimes(q: dict, preempt: str | None = None, reclaim: str | None = None) -> dict:  # type: ignore[type-arg]
    if preempt:
        q["spec"]["preemptMinRuntime"] = preempt
    if reclaim:
        q["spec"]["reclaimMinRuntime"] = reclaim
    return q


def test_values_inherit_up_the_tree_and_default_from_config() -> None:
    engine = Engine(SchedulerConfig(defaultPreemptMinRuntime=7, defaultReclaimMinRuntime=9))
    engine.add(
        [
            with_runtimes(queue("org"), preempt="1m", reclaim="2m"),
            queue("dept-a", parent="org"),
            with_runtimes(queue("team-a1", parent="dept-a"), reclaim="30s"),
            queue("team-a2", parent="dept-a"),
            with_runtimes(queue("dept-b", parent="org"), reclaim="5m"),
            queue("team-b1", parent="dept-b"),
            queue("lonely"),
            podgroup("victim", queue="team-a1"),
            podgroup("other", queue="lonely"),
        ]
    )
    session = Session.open(engine.state, engine.scheduler.config, 0.0)
    victim = engine.state.jobs["default/victim"]
    assert preempt_min_runtime(session, victim) == 60  # inherited from org
    # reclaimer in a sibling team: the level below the LCA (dept-a) on the victim's side is team-a1
    assert reclaim_min_runtime(session, victim, "team-a2") == 30
    # reclaimer in another department: the level below the LCA (org) is dept-a, which inherits org's
    assert reclaim_min_runtime(session, victim, "team-b1") == 120
    other = engine.state.jobs["default/other"]
    assert preempt_min_runtime(session, other) == 7  # nothing set anywhere: the default
    assert reclaim_min_runtime(session, other, "team-b1") == 9
