"""The bounded victim search decides exactly as the exhaustive one.

The solver skips scenarios an upper bound shows cannot work, remembers failed searches until
something is committed, and keeps lists and keys for the action; the exhaustive search
(``exhaustiveSearch``) simulates every scenario with none of that. On small random contended
clusters (queue trees with quotas and limits, running gangs, elastic jobs, shared GPUs and CPU
pods, pending jobs of every kind and priority), one full cycle of each must make the same
binds, evictions and pipelined placements.
"""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pykai.engine.actions.allocate import tasks_to_allocate
from pykai.engine.actions.solver import Solver
from pykai.engine.decisions import CycleResult
from pykai.engine.scheduler import Scheduler
from pykai.engine.session import Session
from pykai.engine.settings import SchedulerConfig
from pykai.engine.state import ClusterState
from pykai.model import constants as c
from pykai.model.builders import node, pod, podgroup, queue
from pykai.model.meta import Obj
from pykai.model.priorityclass import builtin_priority_classes

PRIORITIES = ["train", "build-preemptible", "build", "inference"]
STAMP = "2024-01-01T00:{:02d}:{:02d}Z"


def _owner(name: str) -> list[dict[str, Any]]:
    return [
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "name": name,
            "uid": f"o-{name}",
            "controller": True,
        }
    ]


@st.composite
def contended(draw: st.DrawFn) -> list[Obj]:
    objs: list[Obj] = list(builtin_priority_classes())
    free: dict[str, int] = {}
    for i in range(draw(st.integers(1, 4))):
        gpus = draw(st.sampled_from([2, 4, 8]))
        objs.append(node(f"n{i}", gpus=gpus, cpu=str(draw(st.sampled_from([4, 8, 32])))))
        free[f"n{i}"] = gpus
    leaves: list[str] = []
    for d in range(draw(st.integers(1, 2))):
        objs.append(queue(f"d{d}", gpu=(draw(st.sampled_from([0, 2, 4, -1])), -1, 1)))
        for t in range(draw(st.integers(1, 3))):
            name = f"d{d}t{t}"
            leaves.append(name)
            objs.append(
                queue(
                    name,
                    parent=f"d{d}",
                    gpu=(
                        draw(st.sampled_from([0, 1, 2, 3])),
                        draw(st.sampled_from([-1, -1, 2, 5])),
                        draw(st.sampled_from([0, 1, 2])),
                    ),
                    priority=draw(st.sampled_from([None, None, 150])),
                )
            )
    job = 0
    for _ in range(draw(st.integers(3, 14))):  # running jobs, placed where they fit
        kind = draw(st.sampled_from(["gpu", "gpu", "gang", "elastic", "shared", "cpu"]))
        size = {"gpu": 1, "gang": 2, "elastic": 3, "shared": 2, "cpu": 1}[kind]
        per_pod = 0 if kind in ("shared", "cpu") else draw(st.sampled_from([1, 1, 2]))
        need = 1 if kind == "shared" else per_pod * size
        hosts = [n for n, f in free.items() if f >= need]
        if not hosts:
            continue
        host = draw(st.sampled_from(hosts))
        free[host] -= need
        name = f"r{job}"
        stamp = STAMP.format(0, job)
        objs.append(
            podgroup(
                name,
                queue=draw(st.sampled_from(leaves)),
                min_member=1 if kind in ("elastic", "shared") else size,
                priority_class=draw(st.sampled_from(PRIORITIES)),
                uid=f"pg-{name}",
                creation=stamp,
            )
        )
        for i in range(size):
            shared = kind == "shared"
            obj = pod(
                f"{name}-{i}",
                group=name,
                gpus=per_pod,
                cpu="500m" if kind == "cpu" else "1",
                uid=f"{name}-{i}",
                node_name=host,
                phase="Running",
                creation=stamp,
                labels={c.GPU_GROUP_LABEL: f"g-{name}"} if shared else None,
                annotations={c.GPU_FRACTION_ANNOTATION: "0.5"} if shared else None,
            )
            obj["metadata"]["ownerReferences"] = _owner(name)
            objs.append(obj)
        job += 1
    for _ in range(draw(st.integers(1, 6))):  # pending jobs
        kind = draw(st.sampled_from(["gpu", "gpu", "gpu", "gang", "fraction"]))
        size = 2 if kind == "gang" else 1
        name = f"p{job}"
        stamp = STAMP.format(1, job)
        objs.append(
            podgroup(
                name,
                queue=draw(st.sampled_from(leaves)),
                min_member=size,
                priority_class=draw(st.sampled_from(PRIORITIES)),
                uid=f"pg-{name}",
                creation=stamp,
            )
        )
        for i in range(size):
            fraction = kind == "fraction"
            obj = pod(
                f"{name}-{i}",
                group=name,
                gpus=0 if kind in ("fraction", "cpu") else draw(st.sampled_from([1, 2])),
                uid=f"{name}-{i}",
                creation=stamp,
                annotations={c.GPU_FRACTION_ANNOTATION: "0.5"} if fraction else None,
            )
            obj["metadata"]["ownerReferences"] = _owner(name)
            objs.append(obj)
        job += 1
    return objs


@st.composite
def fragmented(draw: st.DrawFn) -> list[Obj]:
    """Nodes with their free GPUs scattered and pending jobs that need them together, so
    that consolidation moves pods (some of which nothing brings back)."""
    objs: list[Obj] = [*builtin_priority_classes(), queue("d"), queue("t", parent="d")]
    nodes = draw(st.integers(2, 4))
    for i in range(nodes):
        objs.append(node(f"n{i}", gpus=4))
        for j in range(draw(st.integers(1, 3))):
            name = f"r{i}{j}"
            objs.append(
                podgroup(name, queue="t", uid=f"pg-{name}", creation=STAMP.format(0, 10 * i + j))
            )
            fraction = draw(st.booleans()) and draw(st.booleans())
            obj = pod(
                f"{name}-0",
                group=name,
                gpus=0 if fraction else 1,
                uid=f"{name}-0",
                node_name=f"n{i}",
                phase="Running",
                labels={c.GPU_GROUP_LABEL: f"g-{name}"} if fraction else None,
                annotations={c.GPU_FRACTION_ANNOTATION: "0.5"} if fraction else None,
            )
            if draw(st.integers(0, 4)):
                obj["metadata"]["ownerReferences"] = _owner(name)
            objs.append(obj)
    for k in range(draw(st.integers(1, 3))):
        name = f"p{k}"
        objs.append(podgroup(name, queue="t", uid=f"pg-{name}", creation=STAMP.format(1, k)))
        objs.append(pod(f"{name}-0", group=name, gpus=draw(st.integers(2, 4)), uid=f"{name}-0"))
    return objs


def decisions(objs: list[Obj], exhaustive: bool) -> tuple[Any, ...]:
    state = ClusterState()
    for obj in objs:
        state.upsert(obj)
    result: CycleResult = Scheduler(SchedulerConfig(exhaustiveSearch=exhaustive)).run_cycle(
        state, 1_000_000.0
    )
    assert not result.out_of_budget
    return (
        sorted((b.name, b.node, b.gpu_groups) for b in result.binds),
        sorted((e.name, e.reason, e.message) for e in result.evictions),
        sorted(result.pipelined),
    )


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(contended())
def test_bounded_search_decides_as_the_exhaustive_one(objs: list[Obj]) -> None:
    assert decisions(objs, exhaustive=False) == decisions(objs, exhaustive=True)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(fragmented())
def test_bounded_consolidation_decides_as_the_exhaustive_one(objs: list[Obj]) -> None:
    assert decisions(objs, exhaustive=False) == decisions(objs, exhaustive=True)


def test_bounds_skip_scenarios_the_exhaustive_search_simulates() -> None:
    """The property above compares something: a one-GPU preemptor whose first victims are
    CPU pods, which can never free a GPU; the bounded search simulates only the scenario that
    works, the exhaustive one every scenario before it, and both evict the same pod."""
    objs: list[Obj] = [*builtin_priority_classes(), node("n0", gpus=1, cpu="64"), queue("q")]
    objs += [podgroup("gpu", queue="q", uid="pg-gpu", creation=STAMP.format(0, 0))]
    objs += [pod("gpu-0", group="gpu", gpus=1, uid="gpu-0", node_name="n0", phase="Running")]
    for i in range(5):
        name = f"c{i}"
        objs.append(podgroup(name, queue="q", uid=f"pg-{name}", creation=STAMP.format(0, 1 + i)))
        objs.append(pod(f"{name}-0", group=name, uid=f"{name}-0", node_name="n0", phase="Running"))
    objs += [
        podgroup("serve", queue="q", priority_class="inference", creation=STAMP.format(1, 0)),
        pod("serve-0", group="serve", gpus=1, uid="serve-0", creation=STAMP.format(1, 0)),
    ]
    found = {}
    for exhaustive in (False, True):
        state = ClusterState()
        for obj in objs:
            state.upsert(obj)
        session = Session.open(state, SchedulerConfig(), 1_000_000.0)
        solver = Solver(session, "preempt", "Preempted", exhaustive=exhaustive)
        job = state.jobs["default/serve"]
        outcome = solver.solve(
            job, tasks_to_allocate(job), ["q"], lambda v: v.priority < 100,
            lambda _: False, "preempted",
        )  # fmt: skip
        assert outcome is not None
        victims = [t.name for unit in outcome.victims for t in unit.tasks]
        found[exhaustive] = (victims, solver.simulated)
    assert found[False][0] == found[True][0] == ["gpu-0"]
    assert (found[False][1], found[True][1]) == (1, 6)
