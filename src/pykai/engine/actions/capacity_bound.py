"""Upper bounds on the room a preemptor could get, to skip scenarios that cannot work.

A node can give a preemptor at most its idle and releasing resources (whole GPUs, and the
spare portions of shared ones) plus what the scenario's victims on it hold. If, even so, the
preemptor's pods could not all find a node (counting how many of its smallest pod fit on each
node), simulating the scenario is pointless: it fails. The bound never rejects a scenario the
simulation would accept, so the search decides exactly as if it simulated every scenario (a
property test compares them).
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from pykai.engine.actions.victims import VictimUnit
from pykai.engine.jobs import Task
from pykai.engine.nodes import GPU, BoolArray, FloatArray, NodeTable
from pykai.model.resources import Resources

EPS = 1e-9


def feasible_mask(nodes: NodeTable, tasks: list[Task]) -> BoolArray:
    """Nodes at least one of the tasks may use (schedulable, constraints, room for a pod)."""
    mask: BoolArray = np.zeros(len(nodes), dtype=bool)
    for constraints, extended in {(t.pod.constraints, t.pod.extended) for t in tasks}:
        mask |= nodes.constraint_mask(constraints, extended)
    mask &= nodes.has_pod_room()
    return mask


def spare(nodes: NodeTable) -> FloatArray:
    """Per node and resource: idle plus releasing, GPUs counting spare shared portions."""
    free = nodes.alloc - nodes.used + nodes.releasing
    free[:, GPU] += nodes.shared_spare
    clipped: FloatArray = np.clip(free, 0.0, None)
    return clipped


class Capacity:
    """How many of a preemptor's pods could fit, at most, with given victims evicted."""

    def __init__(self, nodes: NodeTable, tasks: list[Task]) -> None:
        self._index = nodes.index
        self._mask = feasible_mask(nodes, tasks)
        self._free = spare(nodes)
        requests = np.array([tuple(t.request) for t in tasks], dtype=float).reshape(-1, 3)
        self._total = requests.sum(axis=0)
        self._smallest = requests.min(axis=0) if len(tasks) else np.zeros(3)
        self._pods = len(tasks)
        base = self._free[self._mask]
        self._base_total = base.sum(axis=0)
        self._base_slots = int(self._slots(base).sum())

    def _slots(self, free: FloatArray) -> np.ndarray:
        """Per row: how many of the smallest pod fit (a huge number when it asks nothing)."""
        asked = self._smallest > EPS
        if not asked.any():
            return np.full(len(free), self._pods)
        ratios = np.floor(free[:, asked] / self._smallest[asked] + EPS)
        fit: np.ndarray = ratios.min(axis=1)
        return fit

    def could_hold_extra(self, extra: Resources) -> bool:
        """Whether ``extra`` more room, anywhere, could make the pods' total fit."""
        return not (self._base_total + np.array(tuple(extra)) + EPS < self._total).any()

    def could_hold_units(self, units: Iterable[VictimUnit]) -> bool:
        """Whether evicting the units could make room."""
        return self._holds(t for unit in units for t in unit.tasks)

    def _holds(self, victims: Iterable[Task]) -> bool:
        added: dict[int, np.ndarray] = {}
        for task in victims:
            row = self._index.get(task.node)
            if row is None or not self._mask[row]:
                continue
            extra = added.get(row)
            if extra is None:
                extra = added[row] = np.zeros(3)
            extra += tuple(task.request)
        total = self._base_total.copy()
        for extra in added.values():
            total += extra
        if (total + EPS < self._total).any():
            return False
        if not added:
            return self._base_slots >= self._pods
        rows = np.fromiter(added, dtype=int, count=len(added))
        before = self._slots(self._free[rows])
        after = self._slots(self._free[rows] + np.array(list(added.values())))
        return self._base_slots - int(before.sum()) + int(after.sum()) >= self._pods
