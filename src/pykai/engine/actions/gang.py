"""Placing a gang's tasks inside a statement: the step allocate and the victim solver share."""

from __future__ import annotations

from collections.abc import Callable

from pykai.engine.jobs import Task, TaskStatus
from pykai.engine.placement import find_node
from pykai.engine.session import Session, Statement
from pykai.model.constraints import NodeConstraints
from pykai.model.resources import Resources

FitKey = tuple[Resources, NodeConstraints, tuple[tuple[str, float], ...]]


def fit_key(task: Task) -> FitKey:
    """What decides whether a task fits somewhere: its request and its node constraints."""
    return (task.request, task.pod.constraints, task.pod.extended)


def place_gang(
    session: Session,
    statement: Statement,
    tasks: list[Task],
    satisfied: bool,
    misfit: Callable[[Task], bool] | None = None,
) -> int | None:
    """Place tasks on idle, else releasing, resources; if any part of an unsatisfied gang must
    wait for releases, pipeline the whole gang. Returns None when all are placed, else the index
    of the task that found no node (and nothing stays placed). ``misfit`` names tasks already
    known not to fit."""
    mark = statement.checkpoint()
    pipelined = False
    for index, task in enumerate(tasks):
        known = misfit is not None and misfit(task)
        placement = None if known else find_node(session.state.nodes, task, session.placement)
        if placement is None:
            statement.rollback(mark)
            return index
        if placement.pipelined:
            statement.pipeline(task, placement.node, placement.gpu_groups)
            pipelined = True
        else:
            statement.allocate(task, placement.node, placement.gpu_groups, placement.choice)
    if pipelined and not satisfied:
        for task in tasks:
            if task.status == TaskStatus.ALLOCATED:
                statement.pipeline(task, task.node, task.gpu_groups)
    return None
