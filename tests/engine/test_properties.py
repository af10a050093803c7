"""Property tests of the engine's invariants (design.md): on random clusters and workloads,
no node is over-allocated, gangs start whole, limits and non-preemptible quotas hold at every
level, and the incremental sums always equal a recount from scratch."""

from __future__ import annotations

import copy

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pykai.engine.decisions import Bind
from pykai.engine.jobs import EVICTABLE, HOLDS_NODE, TaskStatus
from pykai.engine.scheduler import Scheduler
from pykai.engine.session import Session
from pykai.engine.settings import SchedulerConfig
from pykai.engine.state import ClusterState
from pykai.model.builders import node, pod, podgroup, queue
from pykai.model.meta import Obj
from pykai.model.priorityclass import builtin_priority_classes

PRIORITIES = ["train", "build-preemptible", "build", "inference"]


@st.composite
def clusters(draw: st.DrawFn) -> list[Obj]:
    objs: list[Obj] = list(builtin_priority_classes())
    for i in range(draw(st.integers(1, 5))):
        objs.append(
            node(
                f"n{i}", gpus=draw(st.sampled_from([0, 2, 4, 8])), cpu=str(draw(st.integers(2, 16)))
            )
        )
    objs.append(queue("root", gpu=(-1, draw(st.sampled_from([-1, 4, 8, 16])), 1)))
    for q in range(draw(st.integers(1, 3))):
        quota = draw(st.sampled_from([0, 2, 4, -1]))
        limit = draw(st.sampled_from([-1, 0, 3, 6, 12]))
        objs.append(
            queue(
                f"q{q}",
                parent="root",
                gpu=(quota, limit, draw(st.sampled_from([0, 1, 3]))),
                priority=draw(st.sampled_from([None, 50, 100, 200])),
            )
        )
    queues = [
        o["metadata"]["name"]
        for o in objs
        if o["kind"] == "Queue" and o["metadata"]["name"] != "root"
    ]
    for j in range(draw(st.integers(1, 10))):
        size = draw(st.integers(1, 4))
        name = f"j{j}"
        objs.append(
            podgroup(
                name,
                queue=draw(st.sampled_from(queues)),
                min_member=draw(st.integers(1, size)),
                priority_class=draw(st.sampled_from(PRIORITIES)),
                uid=f"pg-{j:03d}",
                creation=f"2024-01-01T00:00:{j:02d}Z",
            )
        )
        gpus = draw(st.sampled_from([0, 1, 2, 4]))
        for i in range(size):
            objs.append(
                pod(
                    f"{name}-{i}",
                    group=name,
                    gpus=gpus,
                    cpu=draw(st.sampled_from(["500m", "1", "2"])),
                    uid=f"pod-{j:03d}-{i}",
                    creation=f"2024-01-01T00:00:{j:02d}Z",
                )
            )
    return objs


def load(objs: list[Obj]) -> ClusterState:
    state = ClusterState()
    for obj in objs:
        state.upsert(obj)
    return state


def confirm_binds(objs: list[Obj], binds: dict[str, str]) -> list[Obj]:
    """The objects as a backend would store them after binding."""
    out = copy.deepcopy(objs)
    for obj in out:
        if obj["kind"] == "Pod" and obj["metadata"]["uid"] in binds:
            obj["spec"]["nodeName"] = binds[obj["metadata"]["uid"]]
    return out


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters())
def test_invariants_hold_after_cycles(objs: list[Obj]) -> None:
    state = load(objs)
    scheduler = Scheduler()
    binds: dict[str, str] = {}
    evicted: set[str] = set()
    for cycle in range(3):
        placed_before = {t.uid for t in state.tasks.values() if t.status in EVICTABLE}
        told: list[Bind] = []
        result = scheduler.run_cycle(state, 1000.0 + cycle, told.append)
        # each bind was told once, as its statement committed, and no other (a backend binds
        # them while the cycle goes on)
        assert sorted(told, key=lambda b: (b.namespace, b.name)) == result.binds
        # only pods placed before this cycle are evicted, never one allocated in it
        assert {e.uid for e in result.evictions} <= placed_before
        binds.update({b.uid: b.node for b in result.binds})
        for eviction in result.evictions:  # as a backend does: the pod is deleted
            state.remove("Pod", eviction.namespace, eviction.name)
            evicted.add(eviction.uid)
    nodes = state.nodes
    # no node or GPU over-allocated
    assert (nodes.used <= nodes.alloc + 1e-6).all()
    for job in state.jobs.values():
        running = sum(1 for t in job.tasks.values() if t.status in HOLDS_NODE)
        # gangs start whole
        assert running == 0 or running >= job.min_member, job.key
        assert all(t.status != TaskStatus.PIPELINED for t in job.tasks.values())
    for name, view in state.queues.items():
        usage = state.subtree.get(name)
        if usage is None:
            continue
        assert usage.allocated.fits_in(view.limit, eps=1e-6), name
        assert usage.allocated_non_preemptible.fits_in(view.deserved, eps=1e-6), name
    # incremental sums equal a recount from the stored objects after binding
    fresh = load([o for o in confirm_binds(objs, binds) if o["metadata"].get("uid") not in evicted])
    fresh.ensure_current()
    assert np.allclose(fresh.nodes.used, state.nodes.used)
    for name, usage in fresh.subtree.items():
        mine = state.subtree[name]
        assert np.allclose(tuple(usage.allocated), tuple(mine.allocated)), name
        assert np.allclose(tuple(usage.requested), tuple(mine.requested)), name
    assert fresh.indexes.below_minimum == state.indexes.below_minimum

    def running(s: ClusterState) -> set[str]:
        return {
            k for by_priority in s.indexes.running.values() for b in by_priority.values() for k in b
        }

    assert running(fresh) == running(state)
    for key, job in fresh.jobs.items():
        assert (job.active, job.alive, job.pending) == (
            state.jobs[key].active,
            state.jobs[key].alive,
            state.jobs[key].pending,
        ), key


@settings(max_examples=60, deadline=None)
@given(clusters())
def test_rolled_back_statement_restores_every_sum(objs: list[Obj]) -> None:
    state = load(objs)
    state.ensure_current()
    session = Session.open(state, SchedulerConfig(), 0.0)
    before_used = state.nodes.used.copy()
    before = {k: (u.allocated, u.requested) for k, u in state.subtree.items()}
    statement = session.statement()
    for task in list(state.tasks.values())[:5]:
        statement.allocate(task, state.nodes.names[0])
    statement.discard()
    assert np.array_equal(before_used, state.nodes.used)
    assert before == {k: (u.allocated, u.requested) for k, u in state.subtree.items()}
