"""Hierarchical fair-share division, after KAI's proportion plugin (resource_division.go).

Each resource is divided on its own, top-down: the top-level queues share the cluster total and
the children of a queue share that queue's fair share. Among siblings:

1. Deserved pass: each queue gets min(deserved, requestable), where requestable = min(limit,
   request) and an unlimited quota deserves the whole amount being divided. Quotas are honoured
   even when they add up to more than that amount; nothing is then left for the next pass.
2. Over-quota pass, one priority level at a time (highest first), on what is left: rounds over
   the unsatisfied queues with a positive weight, each offered remaining x w/sum(w). A queue that
   wants no more than its offer takes what it wants; any other takes the offer floored to whole
   units (1 millicore, 1 byte, 1 GPU) and the floored-off rest is recorded. Rounds repeat while
   some queue wanted less than its offer. What the level still holds then goes, up to one unit
   each, to the queues with the largest recorded rest (older queue, then name, first on ties:
   KAI's resource_division.go, whose queue UID is the queue's name).
   Lower priority levels only get what higher ones left.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import groupby

from pykai.model.resources import EPS, RESOURCE_NAMES, Resources


@dataclass(frozen=True, slots=True)
class QueueShareInput:
    """A queue's settings and request, in engine units (``math.inf`` = unlimited)."""

    name: str
    parent: str | None  # None for a top-level queue
    priority: int  # higher first in the over-quota pass
    deserved: Resources  # quota; inf = unlimited (the whole amount its level divides)
    limit: Resources  # inf = no limit; 0 = nothing allowed
    over_quota_weight: Resources  # 0 = no over-quota share
    request: Resources  # leaf: allocated + pending; ignored for parents (sum of children)
    creation: float  # seconds; older queues win remainder ties, then the name (KAI's UID)


@dataclass(frozen=True, slots=True)
class QueueShare:
    """What a queue is entitled to this cycle."""

    name: str
    deserved: Resources  # quota, unlimited resolved to the amount its level divided
    fair_share: Resources
    request: Resources  # of the whole subtree


@dataclass(slots=True, eq=False)
class _Slot:
    """One queue's figures for one resource while it and its siblings divide an amount."""

    queue: QueueShareInput
    deserved: float
    requestable: float
    weight: float
    share: float = 0.0
    rest: float = 0.0  # fraction floored off in the latest round it took part in; 0 = none

    @property
    def wanted(self) -> float:
        """How much more the queue could use."""
        return self.requestable - self.share


def compute_fair_shares(
    queues: Sequence[QueueShareInput], total: Resources
) -> dict[str, QueueShare]:
    """Divide ``total`` (the cluster's schedulable capacity) among the queue tree.

    A queue whose parent is missing, or that sits in a parent cycle, is an orphan: it and its
    subtree get no entry.
    """
    children = _children_by_parent(queues)
    top_down = _top_down(children)
    requests = _subtree_requests(top_down, children)
    result: dict[str, QueueShare] = {}
    for parent in [None, *(q.name for q in top_down)]:
        siblings = children.get(parent)
        if siblings:
            budget = total if parent is None else result[parent].fair_share
            result.update(_divide_among(siblings, budget, requests))
    return result


def _children_by_parent(
    queues: Sequence[QueueShareInput],
) -> dict[str | None, list[QueueShareInput]]:
    """Queues grouped by parent name (None = top level), each group sorted by name."""
    by_name = {q.name: q for q in queues}
    children: dict[str | None, list[QueueShareInput]] = {}
    for name in sorted(by_name):
        queue = by_name[name]
        children.setdefault(queue.parent or None, []).append(queue)
    return children


def _top_down(children: dict[str | None, list[QueueShareInput]]) -> list[QueueShareInput]:
    """The queues reachable from the top level, level by level; orphans and cycles are not."""
    order: list[QueueShareInput] = []
    level = children.get(None, [])
    while level:
        order.extend(level)
        level = [child for q in level for child in children.get(q.name, [])]
    return order


def _subtree_requests(
    top_down: list[QueueShareInput], children: dict[str | None, list[QueueShareInput]]
) -> dict[str, Resources]:
    """A leaf's own request; a parent's is the sum of its children's."""
    requests: dict[str, Resources] = {}
    for queue in reversed(top_down):
        kids = children.get(queue.name)
        requests[queue.name] = (
            sum((requests[k.name] for k in kids), Resources.ZERO) if kids else queue.request
        )
    return requests


def _divide_among(
    siblings: list[QueueShareInput], budget: Resources, requests: dict[str, Resources]
) -> dict[str, QueueShare]:
    """Each sibling's share of ``budget``, every resource divided independently."""
    columns = [
        _divide_resource(siblings, name, budget.get(name), requests) for name in RESOURCE_NAMES
    ]
    return {
        queue.name: QueueShare(
            name=queue.name,
            deserved=Resources(*(column[i].deserved for column in columns)),
            fair_share=Resources(*(column[i].share for column in columns)),
            request=requests[queue.name],
        )
        for i, queue in enumerate(siblings)
    }


def _divide_resource(
    siblings: list[QueueShareInput], resource: str, amount: float, requests: dict[str, Resources]
) -> list[_Slot]:
    """One resource's division among siblings; the slots are in the siblings' order."""
    slots = [_slot(q, resource, amount, requests[q.name]) for q in siblings]
    for slot in slots:
        slot.share = min(slot.deserved, slot.requestable)
    left = amount - sum(slot.share for slot in slots)
    for level in _by_priority(slots):
        if left <= EPS:
            break
        left = _hand_out_rests(level, _over_quota_rounds(level, left))
    return slots


def _slot(queue: QueueShareInput, resource: str, amount: float, request: Resources) -> _Slot:
    quota = queue.deserved.get(resource)
    return _Slot(
        queue=queue,
        deserved=amount if math.isinf(quota) else quota,
        requestable=min(queue.limit.get(resource), request.get(resource)),
        weight=queue.over_quota_weight.get(resource),
    )


def _by_priority(slots: list[_Slot]) -> list[list[_Slot]]:
    """Slots grouped by queue priority, highest first."""
    ordered = sorted(slots, key=lambda s: -s.queue.priority)
    return [list(group) for _, group in groupby(ordered, key=lambda s: s.queue.priority)]


def _over_quota_rounds(slots: list[_Slot], amount: float) -> float:
    """Weighted rounds within one priority level; returns what is left."""
    while amount > EPS:
        hungry = [s for s in slots if s.weight > 0 and s.wanted > EPS]
        weights = _round_weights(hungry)
        weight_sum = sum(weights)
        if weight_sum <= 0:
            break
        offered = amount
        another_round = False
        for slot, weight in zip(hungry, weights, strict=True):
            offer = offered * weight / weight_sum
            wanted = slot.wanted
            if wanted <= offer + EPS:
                slot.share, slot.rest = slot.requestable, 0.0
                amount -= wanted
                another_round = another_round or wanted < offer - EPS
            else:
                whole = math.floor(offer + EPS)
                slot.share += whole
                amount -= whole
                if offer - whole > EPS:
                    slot.rest = offer - whole
        if not another_round:
            break
    return amount


def _round_weights(hungry: list[_Slot]) -> list[float]:
    """The unsatisfied queues' weights for one over-quota round.

    Time-based fairshare would adjust them here: with nw = w/sum(w) and past usage (a fraction
    of the cluster), KAI uses max(0, nw + kValue x (nw - usage)).
    """
    return [slot.weight for slot in hungry]


def _hand_out_rests(slots: list[_Slot], amount: float) -> float:
    """Up to one unit each (never past its request or limit) to the queues with the largest
    recorded rest; returns what is left."""
    for slot in sorted((s for s in slots if s.rest > 0), key=_rest_order):
        if amount <= EPS:
            break
        extra = min(1.0, amount, slot.wanted)
        slot.share += extra
        amount -= extra
    return amount


def _rest_order(slot: _Slot) -> tuple[float, float, str]:
    """Largest rest first, then the older queue, then the name (KAI's queue UID is its name,
    queue_info.go; a real apiserver's uid is random)."""
    return (-round(slot.rest, 9), slot.queue.creation, slot.queue.name)
