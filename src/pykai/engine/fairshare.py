"""Hierarchical fair-share division (KAI's proportion plugin, resource_division.go).

Per resource, top-down level by level: the top-level queues share the cluster total and each
child shares its parent's fair share. In each level, every queue first gets its deserved quota
(capped by its limit and its request); what remains goes over quota, priority level by priority
level (highest first), in rounds proportional to overQuotaWeight. A queue gets whole units
(floored) unless the rest of its request is smaller; the leftover of a level goes one unit each
to the queues with the largest floored-off remainders (older queue first on ties).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from pykai.model.resources import RESOURCE_NAMES, Resources

EPS = 1e-9


@dataclass(frozen=True, slots=True)
class QueueShareInput:
    """A queue's settings and request, in engine units (math.inf = unlimited)."""

    name: str
    parent: str | None
    priority: int
    deserved: Resources
    limit: Resources
    over_quota_weight: Resources
    request: Resources  # leaf: allocated + pending; ignored for parents (sum of children)
    creation: float
    uid: str


@dataclass(frozen=True, slots=True)
class QueueShare:
    """What a queue is entitled to this cycle."""

    name: str
    deserved: Resources
    fair_share: Resources
    request: Resources


@dataclass(slots=True)
class _Slot:
    """One queue's figures for one resource during the division."""

    queue: QueueShareInput
    deserved: float
    limit: float
    weight: float
    request: float
    share: float = 0.0
    remainder: float = 0.0

    @property
    def cap(self) -> float:
        return min(self.limit, self.request)


def compute_fair_shares(
    queues: Sequence[QueueShareInput], total: Resources
) -> dict[str, QueueShare]:
    """Divide ``total`` (the cluster's schedulable capacity) among the queue tree. Queues whose
    parent is missing (or that sit in a cycle) are orphans and get no entry."""
    by_name = {q.name: q for q in queues}
    children: dict[str | None, list[QueueShareInput]] = {}
    for q in queues:
        children.setdefault(
            q.parent if q.parent in by_name else _ORPHAN if q.parent else None, []
        ).append(q)
    requests: dict[str, Resources] = {}
    _subtree_requests(None, children, requests)
    shares: dict[str, dict[str, float]] = {}
    deserved: dict[str, dict[str, float]] = {}
    pending: list[tuple[str | None, dict[str, float]]] = [
        (None, {r: total.get(r) for r in RESOURCE_NAMES})
    ]
    while pending:
        parent, amounts = pending.pop()
        level = sorted(children.get(parent, []), key=lambda q: q.name)
        if not level:
            continue
        for resource in RESOURCE_NAMES:
            slots = [
                _Slot(
                    queue=q,
                    deserved=amounts[resource]
                    if math.isinf(q.deserved.get(resource))
                    else q.deserved.get(resource),
                    limit=q.limit.get(resource),
                    weight=q.over_quota_weight.get(resource),
                    request=requests[q.name].get(resource),
                )
                for q in level
            ]
            _divide(slots, amounts[resource])
            for slot in slots:
                shares.setdefault(slot.queue.name, {})[resource] = slot.share
                deserved.setdefault(slot.queue.name, {})[resource] = slot.deserved
        for q in level:
            pending.append((q.name, shares[q.name]))
    return {
        name: QueueShare(
            name=name,
            deserved=Resources.from_map(deserved[name]),
            fair_share=Resources.from_map(share),
            request=requests[name],
        )
        for name, share in shares.items()
    }


_ORPHAN = "\x00orphan"


def _deserved(queue: QueueShareInput, resource: str, level_total: float) -> float:
    """Quota, with unlimited (-1) meaning the whole amount the level divides."""
    quota = queue.deserved.get(resource)
    return level_total if math.isinf(quota) else quota


def _subtree_requests(
    parent: str | None, children: dict[str | None, list[QueueShareInput]], out: dict[str, Resources]
) -> Resources:
    total = Resources.ZERO
    for q in children.get(parent, []):
        below = children.get(q.name)
        request = _subtree_requests(q.name, children, out) if below else q.request
        out[q.name] = request
        total += request
    return total


def _divide(slots: list[_Slot], amount: float) -> None:
    """Divide ``amount`` of one resource among sibling slots."""
    remaining = amount
    for slot in slots:
        slot.share = max(0.0, min(slot.deserved, slot.cap))
        remaining -= slot.share
    remaining = max(0.0, remaining)
    for priority in sorted({s.queue.priority for s in slots}, reverse=True):
        if remaining <= EPS:
            break
        level = [s for s in slots if s.queue.priority == priority]
        remaining = _over_quota(level, remaining)


def _over_quota(slots: list[_Slot], remaining: float) -> float:
    """Rounds of over-quota division within one priority level; returns what is left."""
    for slot in slots:
        slot.remainder = 0.0
    while remaining > EPS:
        hungry = [s for s in slots if s.weight > 0 and s.cap > s.share + EPS]
        if not hungry:
            return remaining
        weights = sum(s.weight for s in hungry)
        given = 0.0
        someone_satisfied = False
        for slot in hungry:
            portion = remaining * slot.weight / weights
            wanted = slot.cap - slot.share
            if wanted <= portion + EPS:
                slot.share += wanted
                given += wanted
                someone_satisfied = True
            else:
                whole = math.floor(portion + EPS)
                slot.share += whole
                slot.remainder += portion - whole
                given += whole
        remaining -= given
        if not someone_satisfied:
            break
    return _hand_out_leftover(slots, remaining)


def _hand_out_leftover(slots: list[_Slot], remaining: float) -> float:
    """One unit each to the queues with the largest fractional remainders."""
    order = sorted(
        (s for s in slots if s.remainder > EPS and s.cap > s.share + EPS),
        key=lambda s: (-s.remainder, s.queue.creation, s.queue.uid, s.queue.name),
    )
    for slot in order:
        if remaining <= EPS:
            break
        extra = min(1.0, remaining, slot.cap - slot.share)
        slot.share += extra
        remaining -= extra
    return remaining
