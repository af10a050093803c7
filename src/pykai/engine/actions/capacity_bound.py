"""Upper bounds on the room a preemptor could get, to skip scenarios that cannot work.

A node can give a preemptor at most its idle and releasing resources (whole GPUs, and the
spare portions of shared ones) plus what the scenario's victims on it hold. If, even so, the
preemptor's pods could not all find a node (counting how many of its smallest pod fit on each
node), simulating the scenario is pointless: it fails. A preemptor whose pods all ask for whole
devices can use no portion of a shared one: a scenario gives it a shared device only when every
pod on that device is then releasing (the device is then a whole releasing GPU). The bound never
rejects a scenario the simulation would accept, so the search decides exactly as if it simulated
every scenario (a property test compares them).
"""

from __future__ import annotations

import math
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
        self._nodes = nodes
        self._mask = feasible_mask(nodes, tasks)
        self._free = spare(nodes)
        requests = np.array([tuple(t.request) for t in tasks], dtype=float).reshape(-1, 3)
        self._total = requests.sum(axis=0)
        self._smallest = requests.min(axis=0) if len(tasks) else np.zeros(3)
        self._pods = len(tasks)
        base = self._free[self._mask]
        self._base_total = base.sum(axis=0)
        # whole devices only: no shared portion counts, a shared device only once released
        self._whole = all(not t.pod.gpu.is_shared for t in tasks)
        if self._whole:
            self._free[:, GPU] -= nodes.shared_spare
            base = self._free[self._mask]
        self._scenario_total = tuple(base.sum(axis=0).tolist())
        self._needed = tuple(self._total.tolist())
        self._asked = [(k, float(v)) for k, v in enumerate(self._smallest.tolist()) if v > EPS]
        self._base_slots = int(self._slots(base).sum())

    def _slots(self, free: FloatArray) -> np.ndarray:
        """Per row: how many of the smallest pod fit (a huge number when it asks nothing)."""
        asked = self._smallest > EPS
        if not asked.any():
            return np.full(len(free), self._pods)
        ratios = np.floor(free[:, asked] / self._smallest[asked] + EPS)
        fit: np.ndarray = ratios.min(axis=1)
        return fit

    def _row_slots(self, free: list[float]) -> int:
        """``_slots`` of one row."""
        if not self._asked:
            return self._pods
        return min(math.floor(free[k] / smallest + EPS) for k, smallest in self._asked)

    def could_hold_extra(self, extra: Resources) -> bool:
        """Whether ``extra`` more room, anywhere, could make the pods' total fit (``extra``
        counting shared portions as devices: a bound for every preemptor)."""
        return not (self._base_total + np.array(tuple(extra)) + EPS < self._total).any()

    def could_hold_units(self, units: Iterable[VictimUnit]) -> bool:
        """Whether evicting the units could make room."""
        return self._holds(t for unit in units for t in unit.tasks)

    def _holds(self, victims: Iterable[Task]) -> bool:
        index = self._nodes.index
        mask = self._mask
        added: dict[int, list[float]] = {}
        shared: dict[tuple[str, str], int] = {}  # (node, shared device) -> victims on it
        for task in victims:
            row = index.get(task.node)
            if row is None or not mask[row]:
                continue
            request = task.request
            gpu = request.gpu
            if self._whole and task.gpu_groups:
                gpu = 0.0
                for group in task.gpu_groups:
                    shared[(task.node, group)] = shared.get((task.node, group), 0) + 1
            extra = added.get(row)
            if extra is None:
                added[row] = [request.cpu, request.memory, gpu]
            else:
                extra[0] += request.cpu
                extra[1] += request.memory
                extra[2] += gpu
        for (node, group), count in shared.items():
            if self._released_with(node, group, count):
                added[index[node]][GPU] += 1.0
        total = list(self._scenario_total)
        for extra in added.values():
            total[0] += extra[0]
            total[1] += extra[1]
            total[2] += extra[2]
        if any(have + EPS < need for have, need in zip(total, self._needed, strict=True)):
            return False
        slots = self._base_slots
        for row, extra in added.items():
            free = self._free[row].tolist()
            slots -= self._row_slots(free)
            slots += self._row_slots([f + e for f, e in zip(free, extra, strict=True)])
        return slots >= self._pods

    def _released_with(self, node: str, group_id: str, victims: int) -> bool:
        """Whether a shared device becomes a whole releasing one once ``victims`` of its pods
        are evicted (it was not one already)."""
        groups = self._nodes.shared.get(node)
        group = groups.groups.get(group_id) if groups is not None else None
        return (
            group is not None
            and not group.all_released
            and group.releasing_pods + victims >= group.pods
        )
