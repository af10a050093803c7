"""Victims in KAI's victim order, handed out lazily one unit at a time.

KAI (actions/utils/job_order_by_queue.go in VictimQueue mode) walks the queue tree from the
root and takes, at each level, the child that queue order ranks *last*; queue order there
judges a queue by its share after subtracting the victims already taken from it and the next
one it would give. Inside a leaf queue, jobs come in reverse job order. A job gives one unit at
a time (api/podgroup_info/eviction_info.go): first its pods beyond its minimum, one by one,
newest first; then the rest of its gang as a whole (unless min-runtime protects it). A job with
more to give goes back into its queue, judged again by what it has left.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from pykai.engine.jobs import EVICTABLE, Job, Task
from pykai.engine.ordering import QueueKey, victim_order_key
from pykai.engine.session import Session
from pykai.model.resources import Resources


@dataclass(frozen=True, slots=True)
class VictimUnit:
    """Pods evicted together: one elastic pod, or a gang's remaining pods."""

    job: Job
    tasks: tuple[Task, ...]


@dataclass(slots=True, eq=False)
class _Offer:
    """A job's pods still on offer as victims, newest (reverse task order) first."""

    job: Job
    tasks: list[Task]
    protected: bool

    def key(self) -> tuple[int, int, float, str]:
        """Job order of what is left (KAI re-queues a clone of the job with its other pods)."""
        job = self.job
        left = len(self.tasks)
        state = 0 if left < job.min_member else 1 if left == job.min_member else 2
        return (-job.priority, state, job.creation, job.uid)

    def amount(self) -> Resources:
        """What the job still holds (KAI's AllocatedVector of the job or its clone)."""
        total = Resources.ZERO
        for task in self.tasks:
            total += task.request
        return total

    def take(self) -> tuple[Task, ...]:
        """The next unit: one pod beyond the minimum, else the rest of the gang."""
        extra = len(self.tasks) - self.job.min_member
        if extra > 0:
            return (self.tasks.pop(0),)
        if self.protected:
            self.tasks = []
            return ()
        unit, self.tasks = tuple(self.tasks), []
        return unit


class _Reversed:
    """Heap entry ordering a job-order key from last to first."""

    __slots__ = ("key", "offer", "seq")

    def __init__(self, key: tuple[int, int, float, str], seq: int, offer: _Offer) -> None:
        self.key, self.seq, self.offer = key, seq, offer

    def __lt__(self, other: _Reversed) -> bool:
        return (self.key, -self.seq) > (other.key, -other.seq)


@dataclass(slots=True)
class _Leaf:
    heap: list[_Reversed] = field(default_factory=list)
    taken: Resources = Resources.ZERO  # Σ of what popped offers held when popped


def offers(job: Job) -> list[Task]:
    """A victim job's evictable pods, newest (reverse task order) first."""
    return sorted(
        (t for t in job.tasks.values() if t.status in EVICTABLE),
        key=lambda t: t.order_key,
        reverse=True,
    )


class VictimQueue:
    """Victim units in KAI's victim order, produced on demand."""

    def __init__(
        self, session: Session, jobs: Iterable[Job], protected: Callable[[Job], bool]
    ) -> None:
        self._session = session
        self._leaves: dict[str, _Leaf] = {}
        self._counts: dict[str, int] = {}
        self._keys: dict[str, QueueKey] = {}
        self._seq = itertools.count()
        self._allocated: dict[str, Resources] = {}  # before the search evicts anything
        for job in jobs:
            tasks = offers(job)
            if tasks:
                self._push(_Offer(job, tasks, protected(job)))
        self._roots = sorted(q for q in self._counts if not session.queues[q].parent)

    def _push(self, offer: _Offer) -> None:
        queue = offer.job.queue
        leaf = self._leaves.setdefault(queue, _Leaf())
        heapq.heappush(leaf.heap, _Reversed(offer.key(), next(self._seq), offer))
        for name in self._session.state.queue_chain(queue):
            self._counts[name] = self._counts.get(name, 0) + 1
            self._keys.pop(name, None)
            if name not in self._allocated:
                self._allocated[name] = self._session.queues[name].usage.allocated

    def pop(self) -> VictimUnit | None:
        """The next victim unit, or None when no victim is left."""
        while True:
            leaf_name = self._leaf()
            if leaf_name is None:
                return None
            leaf = self._leaves[leaf_name]
            offer = heapq.heappop(leaf.heap).offer
            leaf.taken += offer.amount()
            for name in self._session.state.queue_chain(leaf_name):
                self._counts[name] -= 1
                self._keys.pop(name, None)
            tasks = offer.take()
            if offer.tasks:
                self._push(offer)
            if tasks:
                return VictimUnit(offer.job, tasks)

    def _leaf(self) -> str | None:
        """The leaf queue the next victim comes from: at each level the child queue order
        ranks last."""
        level = self._roots
        chosen = None
        while level:
            candidates = [q for q in level if self._counts.get(q, 0) > 0]
            if not candidates:
                break
            chosen = max(candidates, key=self._key)
            level = self._session.queues[chosen].children
        return chosen

    def _key(self, name: str) -> QueueKey:
        key = self._keys.get(name)
        if key is None:
            leaf = self._leaves.get(name)
            if leaf is None:  # a parent queue: judged with its best child's victims
                children = [c for c in self._session.queues[name].children if self._counts.get(c)]
                leaf_name = self._best_leaf(max(children, key=self._key))
                leaf = self._leaves[leaf_name]
            victims = leaf.taken + leaf.heap[0].offer.amount()
            queue = self._session.queues[name]
            key = victim_order_key(queue, self._allocated[name], victims, self._session.total)
            self._keys[name] = key
        return key

    def _best_leaf(self, name: str) -> str:
        while name not in self._leaves:
            children = [c for c in self._session.queues[name].children if self._counts.get(c)]
            name = max(children, key=self._key)
        return name
