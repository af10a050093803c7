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
from pykai.model.resources import EPS


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
    clipped: FloatArray = np.maximum(free, 0.0)
    return clipped


class Capacity:
    """How many of a preemptor's pods could fit, at most, with given victims evicted."""

    def __init__(self, nodes: NodeTable, tasks: list[Task]) -> None:
        # (sums over the rows as products with ones: numpy's per-axis reductions cost far
        # more than the arithmetic on a few hundred rows, and every search builds one)
        self.nodes = nodes
        self.mask = feasible_mask(nodes, tasks)
        self.usable: list[bool] = self.mask.tolist()  # the same, read one row at a time
        self._free = spare(nodes)
        requests: list[tuple[float, ...]] = [tuple(t.request) for t in tasks]
        self.pods = len(tasks)
        columns = list(zip(*requests, strict=True)) if tasks else [(0.0,)] * 3
        self.needed = tuple(sum(column) for column in columns)
        smallest = [min(column) for column in columns]
        self._asked: list[tuple[int, float]] = [(k, v) for k, v in enumerate(smallest) if v > EPS]
        ones = np.ones(len(nodes))
        base = self._usable_rows()
        self._base_total: list[float] = (ones @ base).tolist()
        # whole devices only: no shared portion counts, a shared device only once released
        self.whole = all(not t.pod.gpu.is_shared for t in tasks)
        if self.whole:
            self._free[:, GPU] -= nodes.shared_spare
            base = self._usable_rows()
        self.scenario_total = tuple((ones @ base).tolist())
        self.base_slots = int(ones @ self._slots(base))
        self._slots_before: dict[int, int] = {}  # row -> slots with no victim
        self._free_rows: dict[int, list[float]] = {}  # row -> its free room, as read
        self._release_counts: dict[tuple[str, str], int] = {}  # see release_count

    def _usable_rows(self) -> FloatArray:
        """The free room of the usable rows, nothing on the others."""
        rows: FloatArray = np.where(self.mask[:, None], self._free, 0.0)
        return rows

    def _slots(self, free: FloatArray) -> np.ndarray:
        """Per row: how many of the smallest pod fit in ``free`` (the usable rows' room; all
        the pods on a usable row when the pod asks for nothing)."""
        fit: np.ndarray = self.mask * float(self.pods)
        for i, (k, smallest) in enumerate(self._asked):
            column = np.floor(free[:, k] / smallest + EPS)
            fit = column if i == 0 else np.minimum(fit, column)
        return fit

    def _row_slots(self, free: list[float]) -> int:
        """``_slots`` of one row."""
        if not self._asked:
            return self.pods
        return min([math.floor(free[k] / smallest + EPS) for k, smallest in self._asked])

    def could_hold_extra(self, extra: tuple[float, float, float]) -> bool:
        """Whether ``extra`` more room, anywhere, could make the pods' total fit (``extra``
        counting shared portions as devices: a bound for every preemptor)."""
        base, needed = self._base_total, self.needed
        return not any(base[k] + amount + EPS < needed[k] for k, amount in enumerate(extra))

    def could_hold_units(self, units: Iterable[VictimUnit]) -> bool:
        """Whether evicting the units could make room."""
        room = self.room()
        for unit in units:
            room.add(unit.tasks)
        return room.holds()

    def room(self) -> Room:
        """An empty set of victims, to grow one unit at a time."""
        return Room(self)

    def row_slots(self, row: int, extra: list[float] | None = None) -> int:
        """How many of the smallest pod fit on a row, with ``extra`` more room."""
        free = self._free_rows.get(row)
        if free is None:
            free = self._free_rows[row] = self._free[row].tolist()
        if extra is None:
            slots = self._slots_before.get(row)
            if slots is None:
                slots = self._slots_before[row] = self._row_slots(free)
            return slots
        return self._row_slots([free[0] + extra[0], free[1] + extra[1], free[2] + extra[2]])

    def release_count(self, key: tuple[str, str]) -> int:
        """How many of a shared device's pods (``key``: its node and group), once evicted, make
        it a whole releasing device (0: never, it is one already or is no shared device); kept
        for the search, whose cluster is the same whenever it asks."""
        count = self._release_counts.get(key)
        if count is None:
            node, group_id = key
            groups = self.nodes.shared.get(node)
            group = groups.groups.get(group_id) if groups is not None else None
            released = group is None or group.all_released
            count = 0 if group is None or released else group.pods - group.releasing_pods
            self._release_counts[key] = count
        return count


class Room:
    """What a set of victims gives back on the nodes a preemptor may use, grown one unit at
    a time; ``holds`` says whether the preemptor's pods could then fit (``Capacity``).

    Everything ``holds`` reads is kept as units are added: the shared devices they wholly
    release (a device's victims only grow, so it is released from one count on) and each
    row's gain in slots, worked out again only for the rows changed since the last ``holds``.
    The cluster is the same whenever a room is used (a search rolls every scenario back)."""

    __slots__ = ("_capacity", "_changed", "_released", "_rows", "_shared", "_slots", "_total")

    def __init__(self, capacity: Capacity) -> None:
        self._capacity = capacity
        # row -> cpu, memory and GPUs given back, shared devices wholly given back, and the
        # slots gained as of the last ``holds``
        self._rows: dict[int, list[float]] = {}
        self._shared: dict[tuple[str, str], int] | None = None  # shared device -> its victims
        self._released = 0.0  # Σ of the shared devices wholly given back
        self._slots = capacity.base_slots  # base slots + Σ of the gains
        self._changed: set[int] = set()  # rows whose gain may have changed since
        self._total = list(capacity.scenario_total)

    def add(self, tasks: Iterable[Task]) -> None:
        """Count the victims' pods in."""
        capacity = self._capacity
        index = capacity.nodes.index
        usable = capacity.usable
        whole = capacity.whole
        total = self._total
        rows = self._rows
        changed = self._changed
        for task in tasks:
            row = index.get(task.node)
            if row is None or not usable[row]:
                continue
            request = task.request
            cpu, memory, gpu = request.cpu, request.memory, request.gpu
            given = rows.get(row)
            if given is None:
                given = rows[row] = [0.0, 0.0, 0.0, 0.0, 0.0]
            if whole and task.gpu_groups:
                gpu = 0.0
                for group in task.gpu_groups:
                    self._count_shared((task.node, group), given)
            given[0] += cpu
            given[1] += memory
            given[2] += gpu
            changed.add(row)
            total[0] += cpu
            total[1] += memory
            total[2] += gpu

    def _count_shared(self, key: tuple[str, str], given: list[float]) -> None:
        """One more victim on a shared device; the device counts as given back (on its row,
        ``given``) from the count that releases it wholly."""
        shared = self._shared
        if shared is None:
            shared = self._shared = {}
        count = shared[key] = shared.get(key, 0) + 1
        if count == self._capacity.release_count(key):
            given[3] += 1.0
            self._released += 1.0

    def holds(self) -> bool:
        """Whether the preemptor's pods could fit with these victims evicted."""
        capacity = self._capacity
        needed = capacity.needed
        total = self._total
        if (
            total[0] + EPS < needed[0]
            or total[1] + EPS < needed[1]
            or total[2] + self._released + EPS < needed[2]
        ):
            return False
        if self._changed:
            for row in self._changed:
                given = self._rows[row]
                bonus = given[3]
                extra = [given[0], given[1], given[2] + bonus] if bonus else given[:3]
                gain = capacity.row_slots(row, extra) - capacity.row_slots(row)
                self._slots += gain - int(given[4])
                given[4] = gain
            self._changed.clear()
        return self._slots >= capacity.pods
