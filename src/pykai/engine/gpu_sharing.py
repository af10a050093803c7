"""GPU sharing: shared devices as GPU groups, and choosing devices for a fractional pod.

A fractional pod (``gpu-fraction``, or ``gpu-memory`` converted with the node's GPU memory)
takes a portion of one device per requested device. The first portion on a device opens a
GPU group (a UUID), which takes that whole device out of the node's idle count; the group is
freed when its last pod leaves. A portion never spans devices.

Releasing pods (evicted, being deleted) still hold their portion, and that portion can be
promised to a pipelined pod, as KAI's gpu_sharing_node_info does: a group's future free portion
is what neither its running nor its pipelined pods take. A group whose pods are all releasing
is a whole releasing device: it counts in the node's releasing GPUs (a whole-GPU pod or a new
group may be pipelined onto it) and takes no further portions itself.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Literal

from pykai.model.pod import GpuRequest
from pykai.model.resources import EPS

_GROUP_NAMESPACE = uuid.UUID("8b6b0f8e-3c1e-4d59-9a43-5c3b1f0e7a21")


@dataclass(slots=True)
class GpuGroup:
    """One shared device: the portion its pods hold (and the part of it being released), and
    how many pods are on it (and how many of them are releasing)."""

    group_id: str
    used: float = 0.0
    pods: int = 0
    releasing: float = 0.0
    releasing_pods: int = 0

    @property
    def free(self) -> float:
        """The portion free now."""
        return max(0.0, 1.0 - self.used)

    @property
    def future_free(self) -> float:
        """The portion free once its releasing pods are gone (0 for a wholly released device,
        which is offered as a whole releasing GPU instead)."""
        return 0.0 if self.all_released else max(0.0, 1.0 - self.used + self.releasing)

    @property
    def all_released(self) -> bool:
        """True if every pod on the device is releasing."""
        return self.pods > 0 and self.releasing_pods == self.pods


@dataclass(slots=True)
class NodeGpuGroups:
    """The shared devices of one node."""

    groups: dict[str, GpuGroup] = field(default_factory=dict)

    def best_free(self) -> float:
        """The largest free portion of any group (0 when there are none)."""
        return max((g.free for g in self.groups.values()), default=0.0)

    def best_future_free(self) -> float:
        """The largest portion of any group free once its releasing pods are gone."""
        return max((g.future_free for g in self.groups.values()), default=0.0)


def portion_of(request: GpuRequest, gpu_memory_mib: float) -> float:
    """The portion of one device a shared request takes on a node (0 if it cannot say)."""
    if request.fraction:
        return request.fraction
    if request.memory_mib and gpu_memory_mib > 0:
        return request.memory_mib / gpu_memory_mib
    return 0.0


def new_group_id(task_uid: str, device: int) -> str:
    """A fresh, reproducible GPU-group UUID for a task's n-th device."""
    return str(uuid.uuid5(_GROUP_NAMESPACE, f"{task_uid}/{device}"))


def choose_devices(
    node: NodeGpuGroups,
    whole: int,
    portion: float,
    devices: int,
    task_uid: str,
    order: Literal["pack", "spread"],
    *,
    future: bool = False,
) -> tuple[str, ...] | None:
    """GPU groups for ``devices`` portions on one node, or None if they do not fit. ``whole``
    is how many devices a new group may open; ``future`` counts what releasing pods free.

    ``pack`` fills the most used groups that fit first and opens new devices last (KAI's
    gpupack); ``spread`` opens idle devices first, then the least used groups (gpuspread).
    """
    fitting = [
        g for g in node.groups.values() if (g.future_free if future else g.free) >= portion - EPS
    ]
    fitting.sort(key=lambda g: (-g.used, g.group_id) if order == "pack" else (g.used, g.group_id))
    new = [new_group_id(task_uid, i) for i in range(min(whole, devices))]
    existing = [g.group_id for g in fitting]
    choice = existing + new if order == "pack" else new + existing
    if len(choice) < devices:
        return None
    return tuple(choice[:devices])
