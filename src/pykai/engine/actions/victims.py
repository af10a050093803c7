"""Victims in KAI's victim order, handed out lazily one unit at a time.

KAI (actions/utils/job_order_by_queue.go in VictimQueue mode) walks the queue tree from the
root and takes, at each level, the child that queue order ranks *last*; queue order there
judges a queue by its share after subtracting the victims already taken from it and the next
one it would give. Inside a leaf queue, jobs come in reverse job order. A job gives one unit at
a time (api/podgroup_info/eviction_info.go): first its pods beyond its minimum, one by one,
newest first; then the rest of its gang as a whole (unless min-runtime protects it). A job with
more to give goes back into its queue, judged again by what it has left.

Nothing is built for jobs that are never reached: each leaf queue hands out its jobs from a
list sorted once (shared by the searches of an action), skipping those the search may not
take, and only jobs given back after a first unit go into a heap.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable
from dataclasses import dataclass, field

from pykai.engine.jobs import EVICTABLE, Job, Task
from pykai.engine.ordering import JobKey, QueueKey, VictimKeys
from pykai.engine.session import Session
from pykai.model.resources import Resources


@dataclass(frozen=True, slots=True)
class VictimUnit:
    """Pods evicted together: one elastic pod, or a gang's remaining pods."""

    job: Job
    tasks: tuple[Task, ...]


def offers(job: Job) -> list[Task]:
    """A victim job's evictable pods, newest (reverse task order) first."""
    return sorted(
        (t for t in job.tasks.values() if t.status in EVICTABLE),
        key=lambda t: t.order_key,
        reverse=True,
    )


def victim_key(job: Job) -> JobKey:
    """A running job's place in job order, judged by what it can give (a leaf queue gives
    victims from the last place back)."""
    tasks = job.tasks
    if len(tasks) == 1:  # most jobs: no loop
        left = int(next(iter(tasks.values())).status in EVICTABLE)
    else:
        left = sum(1 for task in tasks.values() if task.status in EVICTABLE)
    return _left_key(job, left)


def _left_key(job: Job, left: int) -> JobKey:
    """Job order of a victim job with ``left`` pods on offer."""
    priority, least, creation, uid = job.order_parts or job.static_order()
    return (priority, 0 if left < least else 1 if left == least else 2, creation, uid)


@dataclass(slots=True, eq=False)
class _Offer:
    """A job's pods still on offer as victims, newest (reverse task order) first, and what
    they hold (KAI's AllocatedVector of the job or of its clone)."""

    job: Job
    tasks: list[Task]
    amount: Resources

    @classmethod
    def of(cls, job: Job, tasks: list[Task]) -> _Offer:
        return cls(job, tasks, _sum(tasks))

    def key(self) -> JobKey:
        """Job order of what is left (KAI re-queues a clone of the job with its other pods)."""
        return _left_key(self.job, len(self.tasks))

    def take(self, protected: Callable[[Job], bool]) -> tuple[Task, ...]:
        """The next unit: one pod beyond the minimum, else the rest of the gang (none if
        min-runtime protects the job)."""
        extra = len(self.tasks) - self.job.min_member
        if extra > 0:
            task = self.tasks.pop(0)
            self.amount = _sum(self.tasks)
            return (task,)
        unit = () if protected(self.job) else tuple(self.tasks)
        self.tasks, self.amount = [], Resources.ZERO
        return unit


def _sum(tasks: list[Task]) -> Resources:
    total = Resources.ZERO
    for task in tasks:
        total += task.request
    return total


class _Reversed:
    """Heap entry ordering a job-order key from last to first."""

    __slots__ = ("key", "offer", "seq")

    def __init__(self, key: JobKey, seq: int, offer: _Offer) -> None:
        self.key, self.seq, self.offer = key, seq, offer

    def __lt__(self, other: _Reversed) -> bool:
        return (self.key, -self.seq) > (other.key, -other.seq)


@dataclass(slots=True)
class _Leaf:
    name: str
    jobs: list[tuple[JobKey, Job]] | None = None  # in job order, shared, read from the end
    cursor: int = 0  # how many of them, from the end, were looked at
    again: list[_Reversed] = field(default_factory=list)  # jobs given back after a unit
    head: _Offer | None = None  # the next offer, once looked at
    taken: Resources = Resources.ZERO  # Σ of what popped offers held when popped
    touched: bool = False  # popped from in this search


Head = tuple[int, Job, tuple[Task, ...], Resources] | None  # cursor after it, job, pods, amount


@dataclass(slots=True)
class Start:
    """What every search over the same leaves (and the same eligibility) sees before its first
    pop: each leaf's first offer and each queue's key, kept by the caller between searches and
    forgotten for the queues a commit changes."""

    heads: dict[str, Head] = field(default_factory=dict)
    keys: dict[str, QueueKey] = field(default_factory=dict)
    has: dict[str, bool] = field(default_factory=dict)
    under: dict[str, str] = field(default_factory=dict)

    def forget(self, queues: set[str]) -> None:
        """Drop what depends on the given queues (leaves, and every queue above them)."""
        for table in (self.heads, self.keys, self.has, self.under):
            for name in queues & table.keys():
                del table[name]


class VictimQueue:
    """Victim units in KAI's victim order, produced on demand from the leaf queues' jobs
    (``jobs_of``: a leaf's candidates in reverse job order) that ``eligible`` accepts."""

    def __init__(
        self,
        session: Session,
        leaves: list[str],
        jobs_of: Callable[[str], list[tuple[JobKey, Job]]],
        eligible: Callable[[Job], bool],
        protected: Callable[[Job], bool],
        orders: dict[tuple[str, Resources], VictimKeys] | None = None,
        start: Start | None = None,
    ) -> None:
        self._session = session
        self._jobs_of = jobs_of
        self._eligible = eligible
        self._protected = protected
        self._seq = itertools.count()
        self._leaves = {name: _Leaf(name) for name in leaves}
        self._start = Start() if start is None else start
        self._keys = dict(self._start.keys)
        self._has = dict(self._start.has)  # whether a queue still has victims
        self._under = dict(self._start.under)  # the leaf a queue's next victim comes from
        self._popped: set[str] = set()  # queues popped from (their start figures are stale)
        self._orders: dict[str, VictimKeys] = {}  # by queue, its allocation before the search
        known = {} if orders is None else orders  # kept by the caller, by queue and allocation
        self._children: dict[str, list[str]] = {}
        roots: set[str] = set()
        for name in leaves:
            chain = session.state.queue_chain(name)
            for child, parent in itertools.pairwise(chain):
                siblings = self._children.setdefault(parent, [])
                if child not in siblings:
                    siblings.append(child)
            for queue in chain:
                if queue not in self._orders:
                    info = session.queues[queue]
                    memo = (queue, info.usage.allocated)
                    if memo not in known:
                        known[memo] = VictimKeys(info, info.usage.allocated, session.total)
                    self._orders[queue] = known[memo]
            roots.add(chain[-1])
        self._roots = sorted(roots)

    def pop(self) -> VictimUnit | None:
        """The next victim unit, or None when no victim is left."""
        while True:
            name = self._next_leaf()
            if name is None:
                return None
            leaf = self._leaves[name]
            offer = self._head(leaf)
            assert offer is not None
            leaf.head = None
            leaf.touched = True
            leaf.taken += offer.amount
            for queue in self._session.state.queue_chain(name):
                self._keys.pop(queue, None)
                self._has.pop(queue, None)
                self._under.pop(queue, None)
                self._popped.add(queue)
            tasks = offer.take(self._protected)
            if offer.tasks:
                heapq.heappush(leaf.again, _Reversed(offer.key(), next(self._seq), offer))
            if tasks:
                return VictimUnit(offer.job, tasks)

    def _head(self, leaf: _Leaf) -> _Offer | None:
        """The leaf's next offer: the later in job order of its next listed job and of the
        jobs given back."""
        if leaf.head is not None:
            return leaf.head
        if not leaf.touched and leaf.name in self._start.heads:
            first = self._start.heads[leaf.name]
            if first is None:
                return None
            leaf.cursor, first_job, pods, amount = first
            leaf.head = _Offer(first_job, list(pods), amount)
            return leaf.head
        if leaf.jobs is None:
            leaf.jobs = self._jobs_of(leaf.name)
        listed = None
        while leaf.cursor < len(leaf.jobs) and listed is None:
            job = leaf.jobs[-1 - leaf.cursor][1]
            tasks = offers(job) if self._eligible(job) else []
            if tasks:
                listed = _Offer.of(job, tasks)
            else:
                leaf.cursor += 1
        if leaf.again and (listed is None or leaf.again[0].key > listed.key()):
            leaf.head = heapq.heappop(leaf.again).offer
        elif listed is not None:
            leaf.cursor += 1
            leaf.head = listed
        if not leaf.touched:
            head = leaf.head
            self._start.heads[leaf.name] = (
                None if head is None else (leaf.cursor, head.job, tuple(head.tasks), head.amount)
            )
        return leaf.head

    def _has_victims(self, name: str) -> bool:
        has = self._has.get(name)
        if has is None:
            leaf = self._leaves.get(name)
            if leaf is not None:
                has = self._head(leaf) is not None
            else:
                has = any(self._has_victims(c) for c in self._children.get(name, []))
            self._has[name] = has
            if name not in self._popped:
                self._start.has[name] = has
        return has

    def _next_leaf(self) -> str | None:
        """The leaf the next victim comes from: at each level the child queue order ranks
        last."""
        best = self._last(self._roots)
        return None if best is None else self._under_of(best)

    def _last(self, queues: list[str]) -> str | None:
        """Of the queues that still have victims, the one queue order ranks last."""
        best = None
        best_key: QueueKey | None = None
        for queue in queues:
            if self._has_victims(queue):
                key = self._key(queue)
                if best_key is None or key > best_key:
                    best, best_key = queue, key
        return best

    def _under_of(self, name: str) -> str:
        """The leaf a queue's next victim comes from."""
        leaf = self._under.get(name)
        if leaf is None:
            if name in self._leaves:
                leaf = name
            else:
                child = self._last(self._children[name])
                assert child is not None
                leaf = self._under_of(child)
            self._under[name] = leaf
            if name not in self._popped:
                self._start.under[name] = leaf
        return leaf

    def _key(self, name: str) -> QueueKey:
        """Victim order's key of a queue: a parent is judged with its next leaf's victims."""
        key = self._keys.get(name)
        if key is None:
            leaf = self._leaves[self._under_of(name)]
            head = self._head(leaf)
            assert head is not None
            key = self._orders[name].key(leaf.taken + head.amount)
            self._keys[name] = key
            if name not in self._popped:
                self._start.keys[name] = key
        return key
