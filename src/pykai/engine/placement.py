"""Choosing a node for a task: filtering by fit and constraints, then the placement policy's
scorer and GPU chooser (engine/policies/), and explaining a failure."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pykai.engine.decisions import Choice
from pykai.engine.jobs import Task
from pykai.engine.nodes import CPU, GPU, MEM, BoolArray, FloatArray, IntArray, NodeTable
from pykai.engine.policies.base import PlacementPolicy, portions
from pykai.model.resources import EPS, format_cpu, format_gpu, format_memory


@dataclass(frozen=True, slots=True)
class Placement:
    """Where a task goes; ``pipelined`` when it fits only on resources being released."""

    node: str
    pipelined: bool
    gpu_groups: tuple[str, ...] = ()
    choice: Choice | None = None


def _fits(free: FloatArray, task: Task) -> BoolArray:
    r = task.request
    fit: BoolArray = free[:, GPU] >= (0.0 if task.pod.gpu.is_shared else r.gpu) - EPS
    if r.cpu:
        fit &= free[:, CPU] >= r.cpu - EPS
    if r.memory:
        fit &= free[:, MEM] >= r.memory - EPS
    return fit


def find_node(
    nodes: NodeTable, task: Task, policy: PlacementPolicy, avoid: str = ""
) -> Placement | None:
    """The best node for a task on idle resources, else on idle + releasing ones, else None.
    ``avoid`` names a node not to use (a pod being moved off it)."""
    if not len(nodes):
        return None
    mask = nodes.constraint_mask(task.pod.constraints, task.pod.extended) & nodes.has_pod_room()
    if avoid in nodes.index:
        mask[nodes.index[avoid]] = False
    if task.pod.gpu.is_shared:
        return _find_shared(nodes, task, policy, mask)
    idle = nodes.alloc - nodes.used
    candidates = np.flatnonzero(mask & _fits(idle, task))
    pipelined = False
    if not candidates.size:
        if not nodes.releasing.any():
            return None
        candidates = np.flatnonzero(mask & _fits(idle + nodes.releasing, task))
        if not candidates.size:
            return None
        pipelined = True
    scorer = policy.scorer_for(task)
    scores = scorer.score(nodes, task, candidates, pipelined)
    best = int(np.argmax(scores))
    return Placement(
        nodes.names[int(candidates[best])],
        pipelined,
        choice=_choice(nodes, scorer.name, candidates, scores, best),
    )


def _choice(
    nodes: NodeTable, scorer: str, candidates: IntArray, scores: FloatArray, best: int
) -> Choice:
    """The chosen candidate's score and the runner-up (the best of the others)."""
    if len(candidates) < 2:
        return Choice(scorer, float(scores[best]))
    others = scores.copy()
    others[best] = -np.inf
    second = int(np.argmax(others))
    return Choice(
        scorer, float(scores[best]), nodes.names[int(candidates[second])], float(scores[second])
    )


def _find_shared(
    nodes: NodeTable, task: Task, policy: PlacementPolicy, mask: BoolArray
) -> Placement | None:
    """A node and GPU groups for a fractional task: nodes in the scorer's order, devices by the
    policy's chooser. Idle portions and devices first; else, pipelined, what releasing pods
    free (a group's releasing portion, or a wholly released device)."""
    idle = nodes.alloc - nodes.used
    share = portions(nodes, task)
    devices = task.pod.gpu.devices
    one_device = share <= 1 + EPS
    scorer = policy.scorer_for(task)
    for future in (False, True):
        if future and not (
            nodes.releasing.any() or (nodes.shared_future > nodes.shared_free).any()
        ):
            break
        free = idle + nodes.releasing if future else idle
        group_fits = (nodes.shared_future if future else nodes.shared_free) >= share - EPS
        group_fits &= one_device
        device_fit = (free[:, GPU] >= devices - EPS) & one_device
        if devices == 1:
            device_fit |= group_fits
        candidates = np.flatnonzero(mask & _fits(free, task) & device_fit)
        if not candidates.size:
            continue
        scores = scorer.score(nodes, task, candidates, future)
        for position in np.argsort(-scores, kind="stable"):
            row = int(candidates[int(position)])
            groups = policy.chooser.choose(nodes, task, row, float(share[row]), future)
            if groups is not None:
                choice = _choice(nodes, scorer.name, candidates, scores, int(position))
                return Placement(nodes.names[row], future, groups, choice)
    return None


def explain(nodes: NodeTable, task: Task) -> str:
    """Why no node fits, in kube-scheduler's words, plus the largest free GPU count."""
    total = len(nodes)
    if not total:
        return "0/0 nodes are available: the cluster has no nodes"
    parts: list[str] = []
    unschedulable = int((~nodes.schedulable).sum())
    if unschedulable:
        parts.append(f"{unschedulable} node(s) were not ready or were cordoned")
    selects, tolerates, has_extended = nodes.constraint_parts(
        task.pod.constraints, task.pod.extended
    )
    selectable = nodes.schedulable & selects
    mismatched = int((nodes.schedulable & ~selects).sum())
    tainted = int((selectable & ~tolerates).sum())
    selectable &= tolerates
    missing = int((selectable & ~has_extended).sum())
    selectable &= has_extended
    if mismatched:
        parts.append(f"{mismatched} node(s) didn't match the pod's node selector or affinity")
    if tainted:
        parts.append(f"{tainted} node(s) had taints the pod does not tolerate")
    if missing:
        names = ", ".join(name for name, _ in task.pod.extended)
        parts.append(f"{missing} node(s) lacked {names}")
    full = int((selectable & ~nodes.has_pod_room()).sum())
    if full:
        parts.append(f"{full} Too many pods")
    idle = nodes.alloc - nodes.used
    r = task.request
    for column, name, amount in (
        (GPU, "nvidia.com/gpu", r.gpu),
        (CPU, "cpu", r.cpu),
        (MEM, "memory", r.memory),
    ):
        short = int((selectable & (idle[:, column] < amount - EPS)).sum())
        if short:
            parts.append(f"{short} Insufficient {name}")
    message = f"0/{total} nodes are available: " + (", ".join(parts) or "no node fits")
    if r.gpu > 0 and selectable.any():
        largest = float(idle[selectable, GPU].max())
        message += (
            f"; not enough GPUs: needs {format_gpu(r.gpu)} on one node,"
            f" largest free is {format_gpu(max(largest, 0.0))}"
        )
    elif selectable.any() and r.cpu > 0:
        largest_cpu = float(idle[selectable, CPU].max())
        largest_mem = float(idle[selectable, MEM].max())
        message += (
            f"; needs cpu {format_cpu(r.cpu)} and memory {format_memory(r.memory)} on one node;"
            f" largest free: cpu {format_cpu(max(largest_cpu, 0.0))},"
            f" memory {format_memory(max(largest_mem, 0.0))}"
        )
    return message
