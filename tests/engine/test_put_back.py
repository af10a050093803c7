"""Putting an evicted pod back where it was: ``NodeTable.overcommitted_back`` foretells it.

The solver puts a victim back after the preemptor only if its node is not overcommitted then,
and skips the attempt (evict, put back, roll back) when ``overcommitted_back`` says the node
would be. On clusters where some running pods are evicted and pending pods are placed on what
they release (pipelined, as in a simulated scenario), putting each evicted pod back must
overcommit its node exactly when ``overcommitted_back`` said so (a node overcommitted before
may stay so for other reasons: there only "said so" implies "it is").
"""

from __future__ import annotations

import random

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pykai.bench.contended import build, reclaim_heavy
from pykai.engine.actions.allocate import tasks_to_allocate
from pykai.engine.actions.gang import place_gang
from pykai.engine.jobs import EVICTABLE
from pykai.engine.session import Session
from pykai.engine.settings import SchedulerConfig
from pykai.engine.state import ClusterState
from pykai.model.meta import Obj

from .test_search_exact import contended


def _foretold(state: ClusterState, seed: int) -> list[bool]:
    """Evict half the running pods (chosen by ``seed``), place every pending job on what is
    free or released, then check each evicted pod; what was foretold for each."""
    session = Session.open(state, SchedulerConfig(), 1_000_000.0)
    statement = session.statement()
    running = sorted(
        (t for t in state.tasks.values() if t.status in EVICTABLE and t.node),
        key=lambda t: t.uid,
    )
    evicted = random.Random(seed).sample(running, k=len(running) // 2)
    for task in evicted:
        statement.evict(task, "Reclaimed", "test")
    for key in sorted(state.pending_jobs):
        place_gang(session, statement, tasks_to_allocate(state.jobs[key]), satisfied=False)
    nodes = state.nodes
    said_so = []
    for task in evicted:
        groups = task.gpu_groups
        shared = (groups, state.portion(task, task.node)) if groups else None
        before = nodes.overcommitted(task.node)
        said = nodes.overcommitted_back(task.node, task.request, shared)
        mark = statement.checkpoint()
        statement.unevict(task)
        found = nodes.overcommitted(task.node)
        statement.rollback(mark)
        assert found if said else not found or before, task.name
        said_so.append(said)
    statement.discard()
    return said_so


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(contended(), st.integers(0, 1000))
def test_overcommitted_back_says_what_putting_back_does(objs: list[Obj], seed: int) -> None:
    state = ClusterState()
    for obj in objs:
        state.upsert(obj)
    state.ensure_current()
    _foretold(state, seed)


def test_both_answers_occur_on_a_full_cluster() -> None:
    """Every GPU held (whole and shared devices), pending jobs of every kind placed on what the
    evicted pods release: some evicted pods fit back, others would overcommit their node."""
    said_so = _foretold(build(reclaim_heavy(8)), seed=1)
    assert any(said_so)
    assert not all(said_so)
