"""Nodes as arrays: allocatable, used and releasing resources per node, and cached constraint masks.

Rows are kept in node-name order so that "first best" is "lowest name", KAI's tie-break.
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

from pykai.engine.gpu_sharing import GpuGroup, NodeGpuGroups
from pykai.model.constraints import NodeConstraints
from pykai.model.node import NodeView
from pykai.model.resources import EPS, Resources

FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]
IntArray = npt.NDArray[np.int64]
CPU, MEM, GPU = 0, 1, 2
MILLI = 1000  # a whole GPU, in the milli units of per-device free capacity
GPU_CLASSES = 9  # pods counted per GPU class: shares, then 1..8 whole GPUs
MAX_DEVICES = 64  # devices per node seen one by one (a node claiming more: the first 64)
_ConstraintKey = tuple[NodeConstraints, tuple[tuple[str, float], ...]]


class NodeTable:
    """All nodes, with per-resource columns [cpu, memory, gpu] as numpy arrays."""

    def __init__(self) -> None:
        self._views: dict[str, NodeView] = {}
        self.names: list[str] = []
        self.index: dict[str, int] = {}
        self.alloc: FloatArray = np.zeros((0, 3))
        self.used: FloatArray = np.zeros((0, 3))
        self.releasing: FloatArray = np.zeros((0, 3))
        self.schedulable: BoolArray = np.zeros(0, dtype=bool)
        self.gpu_memory_mib: FloatArray = np.zeros(0)
        self.pod_capacity: FloatArray = np.zeros(0)  # allocatable "pods" (inf if not given)
        self.pod_count: FloatArray = np.zeros(0)  # pods placed on the node (any status on it)
        self.gpu_classes: IntArray = np.zeros((0, GPU_CLASSES), dtype=np.int64)  # see add_pod
        self.shared: dict[str, NodeGpuGroups] = {}  # node -> its shared GPU groups
        self.shared_free: FloatArray = np.zeros(0)  # largest free portion of a group, per row
        self.shared_future: FloatArray = np.zeros(0)  # the same, counting what is releasing
        self.shared_spare: FloatArray = np.zeros(0)  # Σ of those portions over the groups
        # free milli of each device (shared groups in their order, then idle whole GPUs; 0
        # past the last),
        # and a per-row counter bumped on every change, for scorers that cache per row
        self.device_milli: IntArray = np.zeros((0, 1), dtype=np.int64)
        self.row_version: IntArray = np.zeros(0, dtype=np.int64)
        self.derived: dict[object, object] = {}  # scorers' per-node data, dropped with masks
        self._masks: dict[_ConstraintKey, BoolArray] = {}
        self._parts: dict[_ConstraintKey, tuple[BoolArray, BoolArray, BoolArray]] = {}
        self.dirty = False

    def __len__(self) -> int:
        return len(self.names)

    def __contains__(self, name: object) -> bool:
        """Whether the cluster has a node of that name (one not laid out yet included)."""
        return name in self._views

    def view(self, name: str) -> NodeView:
        """The node's view."""
        return self._views[name]

    def views(self) -> list[NodeView]:
        """All node views in row order."""
        return [self._views[n] for n in self.names]

    def upsert(self, node: NodeView) -> None:
        """Add or replace a node. A new node marks the table for rebuild."""
        if node.name in self.index and not self.dirty:
            i = self.index[node.name]
            self.alloc[i] = tuple(node.allocatable)
            self.schedulable[i] = node.ready and not node.unschedulable
            self.gpu_memory_mib[i] = node.gpu_memory_mib
            self.pod_capacity[i] = node.extended.get("pods", np.inf)
            if _devices(node.allocatable.gpu) > self.device_milli.shape[1]:
                self.dirty = True  # more devices than the per-device columns hold
            else:
                self._refresh_devices(i)
        else:
            self.dirty = True
        self._views[node.name] = node
        self._clear_masks()

    def remove(self, name: str) -> None:
        """Forget a node."""
        if self._views.pop(name, None) is not None:
            self.dirty = True
            self._clear_masks()

    def rebuild(self) -> None:
        """Lay the rows out again in name order; usage is zeroed for the caller to recount."""
        self.names = sorted(self._views)
        self.index = {n: i for i, n in enumerate(self.names)}
        views = [self._views[n] for n in self.names]
        self.alloc = np.array([tuple(v.allocatable) for v in views], dtype=float).reshape(-1, 3)
        self.used = np.zeros_like(self.alloc)
        self.releasing = np.zeros_like(self.alloc)
        self.schedulable = np.array([v.ready and not v.unschedulable for v in views], dtype=bool)
        self.gpu_memory_mib = np.array([v.gpu_memory_mib for v in views], dtype=float)
        self.pod_capacity = np.array([v.extended.get("pods", np.inf) for v in views], dtype=float)
        self.pod_count = np.zeros(len(views))
        self.gpu_classes = np.zeros((len(views), GPU_CLASSES), dtype=np.int64)
        self.shared = {}
        self.shared_free = np.zeros(len(views))
        self.shared_future = np.zeros(len(views))
        self.shared_spare = np.zeros(len(views))
        width = max((_devices(v.allocatable.gpu) for v in views), default=0)
        self.device_milli = np.zeros((len(views), max(width, 1)), dtype=np.int64)
        self.device_milli[np.arange(width)[None, :] < self.alloc[:, GPU : GPU + 1]] = MILLI
        self.row_version = np.zeros(len(views), dtype=np.int64)
        self._clear_masks()
        self.dirty = False

    def _clear_masks(self) -> None:
        self._masks.clear()
        self._parts.clear()
        self.derived.clear()

    def _refresh_devices(self, i: int) -> None:
        """Lay out row ``i``'s per-device free milli again, and mark the row changed."""
        width = self.device_milli.shape[1]
        groups = self.shared.get(self.names[i])
        free = [round(g.free * MILLI) for g in groups.groups.values()][:width] if groups else []
        whole = _devices(self.alloc.item(i, GPU) - self.used.item(i, GPU) + EPS)
        free += [MILLI] * min(whole, width - len(free))
        free += [0] * (width - len(free))
        self.device_milli[i] = free
        self.row_version[i] += 1

    def has_pod_room(self) -> BoolArray:
        """Nodes that can take one more pod (allocatable "pods")."""
        room: BoolArray = self.pod_count < self.pod_capacity
        return room

    def add_task(
        self,
        name: str,
        request: Resources,
        sign: float,
        gpu_class: int,
        releasing: bool,
        shared: tuple[tuple[str, ...], float] | None = None,
        settled: bool = True,
    ) -> None:
        """Count a pod on (sign=+1) or off (sign=-1) a node: what it requests (its GPUs as
        portions of the ``shared`` groups, with the portion, if any), also as releasing if
        it is, and the pod itself in its GPU class (0: a share, k: k whole GPUs, up to 8;
        -1: none). Not ``settled``: another change of the row follows at once, which lays
        out its devices and marks it changed (this one does neither)."""
        i = self.index.get(name)
        if i is None:
            return
        gpu = 0.0
        if shared is not None:
            self._add_shared(i, name, shared[0], shared[1], sign, releasing)
        else:
            gpu = sign * request.gpu
        cpu, memory = sign * request.cpu, sign * request.memory
        row = self.used[i]
        row[CPU] += cpu
        row[MEM] += memory
        row[GPU] += gpu
        if releasing:
            row = self.releasing[i]
            row[CPU] += cpu
            row[MEM] += memory
            row[GPU] += gpu
        self.pod_count[i] += sign
        if gpu_class >= 0:
            self.gpu_classes[i, gpu_class] += int(sign)
        if not settled:
            return
        if shared is not None or gpu:
            self._refresh_devices(i)
        else:
            self.row_version[i] += 1

    def _add_shared(
        self,
        i: int,
        name: str,
        groups: tuple[str, ...],
        portion: float,
        sign: float,
        releasing: bool,
    ) -> None:
        """Add (sign=+1) or remove (-1) a pod's portion on each of its GPU groups (on row
        ``i``). Opening a group takes a whole device; the last pod leaving frees it; a group
        whose pods are all releasing counts as a releasing device."""
        node = self.shared.setdefault(name, NodeGpuGroups())
        for group_id in groups:
            group = node.groups.get(group_id)
            if group is None:
                group = node.groups[group_id] = GpuGroup(group_id)
                self.used[i, GPU] += 1
            was_released = group.all_released
            group.used += sign * portion
            group.pods += int(sign)
            if releasing:
                group.releasing += sign * portion
                group.releasing_pods += int(sign)
            self.releasing[i, GPU] += int(group.all_released) - int(was_released)
            if group.pods <= 0:
                del node.groups[group_id]
                self.used[i, GPU] -= 1
        self.shared_free[i] = node.best_free()
        self.shared_future[i] = node.best_future_free()
        self.shared_spare[i] = sum(g.future_free for g in node.groups.values())

    def overcommitted(self, name: str) -> bool:
        """True if what the node's pods hold, releasing ones excepted, passes what it has
        (a whole resource, or a shared device)."""
        i = self.index.get(name)
        if i is None:
            return False
        if ((self.alloc[i] - self.used[i] + self.releasing[i]) < -EPS).any():
            return True
        groups = self.shared.get(name)
        return groups is not None and any(
            g.used - g.releasing > 1 + EPS for g in groups.groups.values()
        )

    def overcommitted_back(
        self, name: str, request: Resources, shared: tuple[tuple[str, ...], float] | None
    ) -> bool:
        """Whether putting a releasing pod on the node back to running (its ``request``, its
        GPUs as portions of ``shared`` groups if any) would leave the node ``overcommitted``:
        the sums worked out as ``add_task`` would, changing nothing (False: it fits)."""
        i = self.index.get(name)
        if i is None:
            return False
        released = 0  # shared devices that stop being wholly releasing
        if shared is not None:
            groups = self.shared.get(name)
            portion = shared[1]
            for group_id in shared[0]:
                group = groups.groups.get(group_id) if groups is not None else None
                if group is None:
                    return False  # not on the device: trying will tell
                released += group.all_released
                if group.pods > 1:  # (the last pod leaving and coming back reopens it empty)
                    used = group.used + -portion + portion
                    if used - (group.releasing + -portion) > 1 + EPS:
                        return True
        gpu = 0.0 if shared is not None else request.gpu  # shared: counted by its devices
        for k, amount in enumerate((request.cpu, request.memory, gpu)):
            used = self.used.item(i, k) + -amount + amount  # taken off as releasing, back on
            releasing = self.releasing.item(i, k) + -amount - (released if k == GPU else 0)
            if self.alloc.item(i, k) - used + releasing < -EPS:
                return True
        return False

    def idle(self) -> FloatArray:
        """Free resources per node now."""
        return self.alloc - self.used

    def constraint_parts(
        self, constraints: NodeConstraints, extended: tuple[tuple[str, float], ...] = ()
    ) -> tuple[BoolArray, BoolArray, BoolArray]:
        """Per node: selector/affinity matches, taints tolerated, extended resources present.
        Cached until the nodes change."""
        key = (constraints, extended)
        parts = self._parts.get(key)
        if parts is None:
            views = [self._views[n] for n in self.names]
            selects = np.array([constraints.selects(v.meta.labels) for v in views], dtype=bool)
            tolerates = np.array([not constraints.untolerated(v.taints) for v in views], dtype=bool)
            has_extended = np.array(
                [
                    all(v.extended.get(name, 0.0) >= amount for name, amount in extended)
                    for v in views
                ],
                dtype=bool,
            )
            parts = (selects.reshape(-1), tolerates.reshape(-1), has_extended.reshape(-1))
            self._parts[key] = parts
        return parts

    def constraint_mask(
        self, constraints: NodeConstraints, extended: tuple[tuple[str, float], ...] = ()
    ) -> BoolArray:
        """Nodes that are schedulable and that the pod's selector, affinity, tolerations and
        extended resources allow. Cached until the nodes change."""
        key = (constraints, extended)
        mask = self._masks.get(key)
        if mask is None:
            selects, tolerates, has_extended = self.constraint_parts(constraints, extended)
            mask = self.schedulable & selects & tolerates & has_extended
            self._masks[key] = mask
        return mask


def _devices(amount: float) -> int:
    """Whole devices in an amount of GPUs, at most MAX_DEVICES (0 for nonsense)."""
    if not math.isfinite(amount) or amount <= 0:
        return MAX_DEVICES if amount == np.inf else 0
    return int(min(amount, MAX_DEVICES))
