"""Contended clusters for the engine benchmark: every GPU queue wants more than it gets.

- ``contended``: N nodes of 8 GPUs / 128 CPU / 1 TiB; 10 departments x 10 teams (department
  GPU quota 9 % of the cluster, team 0.8 %, weight 1, no limits). 7 of 8 GPUs per node are in
  use: 40 % by single 1-GPU jobs, 40 % by gangs of 8, 20 % by devices shared by two 0.5-GPU
  pods; the other running pods are small CPU pods, each its own PodGroup. The pending pods
  (5 per node) are 40 % single 1-GPU jobs, 40 % gangs of 8 and 20 % 0.5-GPU jobs. Jobs go to
  the teams round-robin, all at priority train.
- ``reclaim``: the same shapes, but every GPU is in use by departments 0-4 and the pending jobs
  belong to departments 5-9, so reclaim has to take back a large part of the cluster.

Where the kinds of GPU work sit is a seeded shuffle, so the layout is the same on every run.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass

from pykai.engine.state import ClusterState
from pykai.model import constants as c
from pykai.model.builders import node, pod, podgroup, queue
from pykai.model.meta import Obj
from pykai.model.priorityclass import builtin_priority_classes

GPUS_PER_NODE = 8
DEPARTMENTS = 10
TEAMS_PER_DEPARTMENT = 10
DEPARTMENT_QUOTA = 0.09  # of the cluster's GPUs
TEAM_QUOTA = 0.008
GANG = 8
RUNNING_STAMP = "2025-01-01T00:00:00Z"
PENDING_STAMP = "2025-01-02T00:00:00Z"
SEED = 20260101


@dataclass(frozen=True, slots=True)
class Workload:
    """The size of a contended cluster."""

    nodes: int
    running: int  # running pods, GPU and CPU ones together
    pending: int  # pending pods
    used_gpus_per_node: int = 7
    running_departments: tuple[int, ...] = tuple(range(DEPARTMENTS))
    pending_departments: tuple[int, ...] = tuple(range(DEPARTMENTS))


def contended(nodes: int, running: int | None = None, pending: int | None = None) -> Workload:
    """The issue's contended cluster: 20 running and 5 pending pods per node by default."""
    return Workload(
        nodes=nodes,
        running=20 * nodes if running is None else running,
        pending=5 * nodes if pending is None else pending,
    )


def reclaim_heavy(nodes: int) -> Workload:
    """Departments 0-4 hold every GPU; departments 5-9 have the pending jobs."""
    return Workload(
        nodes=nodes,
        running=20 * nodes,
        pending=5 * nodes,
        used_gpus_per_node=GPUS_PER_NODE,
        running_departments=tuple(range(DEPARTMENTS // 2)),
        pending_departments=tuple(range(DEPARTMENTS // 2, DEPARTMENTS)),
    )


def build(workload: Workload) -> ClusterState:
    """A ClusterState holding the workload."""
    state = ClusterState()
    for obj in objects(workload):
        state.upsert(obj)
    state.ensure_current()
    return state


def objects(workload: Workload) -> Iterator[Obj]:
    """Every object of the workload: priority classes, queues, nodes, running then pending."""
    yield from builtin_priority_classes()
    yield from _queues(workload.nodes * GPUS_PER_NODE)
    for i in range(workload.nodes):
        yield node(_node(i), gpus=GPUS_PER_NODE, cpu="128", memory="1Ti")
    yield from _running(workload)
    yield from _pending(workload)


def _node(i: int) -> str:
    return f"node-{i:05d}"


def _queues(gpus: int) -> Iterator[Obj]:
    for d in range(DEPARTMENTS):
        yield queue(f"dept-{d}", gpu=(DEPARTMENT_QUOTA * gpus, -1, 1))
        for t in range(TEAMS_PER_DEPARTMENT):
            yield queue(_team(d, t), parent=f"dept-{d}", gpu=(TEAM_QUOTA * gpus, -1, 1))


def _team(department: int, team: int) -> str:
    return f"dept-{department}-team-{team}"


def _teams(departments: tuple[int, ...]) -> list[str]:
    return [_team(d, t) for d in departments for t in range(TEAMS_PER_DEPARTMENT)]


def _running(workload: Workload) -> Iterator[Obj]:
    """Running GPU work on ``used_gpus_per_node`` GPUs of every node, then CPU pods."""
    gpus = workload.nodes * workload.used_gpus_per_node
    gangs = round(0.4 * gpus) // GANG
    singles = round(0.4 * gpus)
    shared = gpus - singles - gangs * GANG
    kinds = ["gang"] * gangs + ["single"] * singles + ["shared"] * shared
    random.Random(SEED).shuffle(kinds)
    slots = (_node(i) for i in range(workload.nodes) for _ in range(workload.used_gpus_per_node))
    teams = _teams(workload.running_departments)
    pods = 0
    for j, kind in enumerate(kinds):
        name, team = f"run-{j:06d}", teams[j % len(teams)]
        stamp = RUNNING_STAMP
        if kind == "gang":
            yield podgroup(name, queue=team, min_member=GANG, uid=name, creation=stamp)
            for i in range(GANG):
                yield _gpu_pod(f"{name}-{i}", name, next(slots), gpus=1)
            pods += GANG
        elif kind == "single":
            yield podgroup(name, queue=team, uid=name, creation=stamp)
            yield _gpu_pod(f"{name}-0", name, next(slots), gpus=1)
            pods += 1
        else:
            device = next(slots)
            for half in range(2):
                group = f"{name}-{half}"
                yield podgroup(
                    group, queue=teams[(j + half) % len(teams)], uid=group, creation=stamp
                )
                yield _gpu_pod(f"{group}-0", group, device, fraction=name)
            pods += 2
    cpu_pods = max(0, workload.running - pods)
    for k in range(cpu_pods):
        name = f"cpu-{k:06d}"
        yield podgroup(name, queue=teams[k % len(teams)], uid=name, creation=RUNNING_STAMP)
        yield pod(
            f"{name}-0",
            group=name,
            cpu="2",
            memory="8Gi",
            uid=f"{name}-0",
            node_name=_node(k % workload.nodes),
            phase="Running",
            creation=RUNNING_STAMP,
        )


def _gpu_pod(name: str, group: str, node_name: str, *, gpus: int = 0, fraction: str = "") -> Obj:
    """A running GPU pod; ``fraction`` names the shared device (its GPU group)."""
    labels = {c.GPU_GROUP_LABEL: fraction} if fraction else {}
    annotations = {c.GPU_FRACTION_ANNOTATION: "0.5"} if fraction else {}
    return pod(
        name,
        group=group,
        gpus=gpus,
        cpu="4",
        memory="32Gi",
        uid=name,
        node_name=node_name,
        phase="Running",
        labels=labels,
        annotations=annotations,
        creation=RUNNING_STAMP,
    )


def _pending(workload: Workload) -> Iterator[Obj]:
    """Pending jobs: 40 % of the pods single 1-GPU jobs, 40 % gangs of 8, 20 % 0.5-GPU jobs."""
    singles = round(0.4 * workload.pending)
    gangs = round(0.4 * workload.pending) // GANG
    fractions = workload.pending - singles - gangs * GANG
    kinds = ["single"] * singles + ["gang"] * gangs + ["fraction"] * fractions
    random.Random(SEED + 1).shuffle(kinds)
    teams = _teams(workload.pending_departments)
    for j, kind in enumerate(kinds):
        name, team = f"pend-{j:06d}", teams[j % len(teams)]
        stamp = f"{PENDING_STAMP[:11]}{j // 3600 % 24:02d}:{j // 60 % 60:02d}:{j % 60:02d}Z"
        size = GANG if kind == "gang" else 1
        yield podgroup(name, queue=team, min_member=size, uid=name, creation=stamp)
        for i in range(size):
            yield pod(
                f"{name}-{i}",
                group=name,
                gpus=0 if kind == "fraction" else 1,
                cpu="4",
                memory="32Gi",
                uid=f"{name}-{i}",
                annotations={c.GPU_FRACTION_ANNOTATION: "0.5"} if kind == "fraction" else None,
                creation=stamp,
            )
