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
take, and only jobs given back after a first unit go into a heap. What a leaf hands out does
not depend on the other queues: the searches over the same leaves share each leaf's stream of
units (as far as any of them read it), and each queue's entry before the first pop, until a
commit changes the queue.
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
    if len(job.tasks) == 1:  # most jobs: nothing to sort
        task = next(iter(job.tasks.values()))
        return [task] if task.status in EVICTABLE else []
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
    priority, least, creation, tie = job.order_parts or job.static_order()
    return (priority, 0 if left < least else 1 if left == least else 2, creation, tie)


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

    def take(self) -> tuple[tuple[Task, ...], bool]:
        """The next unit: one pod beyond the minimum, else the rest of the gang (which
        min-runtime may protect: the flag)."""
        extra = len(self.tasks) - self.job.min_member
        if extra > 0:
            task = self.tasks.pop(0)
            self.amount = _sum(self.tasks)
            return (task,), False
        unit = tuple(self.tasks)
        self.tasks, self.amount = [], Resources.ZERO
        return unit, True


def _sum(tasks: list[Task]) -> Resources:
    if len(tasks) == 1:
        return tasks[0].request
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


@dataclass(slots=True, eq=False)
class _Item:
    """One unit a leaf hands out (its job and pods), what the offer it comes from held when
    taken from, whether min-runtime may protect it (the rest of a gang), and all the leaf gave
    up to and with it (what its key is judged by)."""

    unit: VictimUnit
    amount: Resources
    whole: bool
    through: Resources
    keys: dict[int, tuple[VictimKeys, QueueKey]] | None = None  # by queue, once judged


class _Stream:
    """A leaf's units in victim order, worked out as far as a search reads them: the later in
    job order of its next listed job and of the jobs given back after a unit."""

    def __init__(
        self,
        name: str,
        jobs_of: Callable[[str], list[tuple[JobKey, Job]]],
        eligible: Callable[[Job], bool],
    ) -> None:
        self._name = name
        self._jobs_of = jobs_of
        self._eligible = eligible
        self._jobs: list[tuple[JobKey, Job]] | None = None  # in job order, read from the end
        self._cursor = 0  # how many of them, from the end, were looked at
        self._again: list[_Reversed] = []  # jobs given back after a unit
        self._seq = itertools.count()
        self._taken = Resources.ZERO  # Σ of what the offers taken from held when taken
        self._done = False
        self.items: list[_Item] = []

    def item(self, position: int) -> _Item | None:
        """The unit at ``position`` (None past the last)."""
        while len(self.items) <= position and not self._done:
            self._next()
        return self.items[position] if position < len(self.items) else None

    def _next(self) -> None:
        offer = self._head()
        if offer is None:
            self._done = True
            return
        amount = offer.amount
        self._taken += amount  # the leaf's taken before this unit, and this offer's amount
        tasks, whole = offer.take()
        if offer.tasks:
            heapq.heappush(self._again, _Reversed(offer.key(), next(self._seq), offer))
        self.items.append(_Item(VictimUnit(offer.job, tasks), amount, whole, self._taken))

    def _head(self) -> _Offer | None:
        if self._jobs is None:
            self._jobs = self._jobs_of(self._name)
        jobs = self._jobs
        listed = None
        while self._cursor < len(jobs) and listed is None:
            job = jobs[-1 - self._cursor][1]
            tasks = offers(job) if self._eligible(job) else []
            if tasks:
                listed = _Offer.of(job, tasks)
            else:
                self._cursor += 1
        if self._again and (listed is None or self._again[0].key > listed.key()):
            return heapq.heappop(self._again).offer
        if listed is not None:
            self._cursor += 1
        return listed


# a queue with victims as its parent sees it: its key, its place among its siblings (negated:
# the first of equal keys wins) and its index; None for a queue without victims
Entry = tuple[QueueKey, int, int] | None


@dataclass(frozen=True, slots=True)
class _Tree:
    """The queues above a set of leaves, by index: leaves first, every queue after its
    children (so a pass in index order works bottom-up)."""

    names: list[str]
    index: dict[str, int]
    parent: list[int]  # -1 for a root
    position: list[int]  # among its siblings (the roots are siblings, by name)
    children: list[list[int]]
    roots: list[int]
    leaves: int  # indexes below this are the leaves, in the order given

    @classmethod
    def of(cls, session: Session, leaves: list[str]) -> _Tree:
        chains = [session.state.queue_chain(name) for name in leaves]
        depth: dict[str, int] = {}
        parents: dict[str, str] = {}
        children: dict[str, list[str]] = {}
        for chain in chains:
            for level, name in enumerate(reversed(chain)):
                depth[name] = level
            for child, parent in itertools.pairwise(chain):
                parents[child] = parent
                siblings = children.setdefault(parent, [])
                if child not in siblings:
                    siblings.append(child)
        above = sorted((n for n in depth if n not in leaves), key=lambda n: -depth[n])
        names = [*leaves, *above]
        index = {name: i for i, name in enumerate(names)}
        roots = sorted(name for name in names if name not in parents)
        position = {name: p for p, name in enumerate(roots)}
        for siblings in children.values():
            position.update((name, p) for p, name in enumerate(siblings))
        return cls(
            names=names,
            index=index,
            parent=[index[parents[n]] if n in parents else -1 for n in names],
            position=[position[n] for n in names],
            children=[[index[c] for c in children.get(n, [])] for n in names],
            roots=[index[n] for n in roots],
            leaves=len(leaves),
        )


@dataclass(slots=True)
class Start:
    """What every search over the same leaves (and the same eligibility) shares, kept by the
    caller between searches and forgotten for the queues a commit changes: each leaf's stream,
    each queue's entry before the first pop and the leaf its next victim comes from (by the
    tree's indexes, with the entries each parent reads); and the queue tree itself, with each
    queue's victim-order keys by the allocation they were made for."""

    streams: dict[str, _Stream] = field(default_factory=dict)
    tree: _Tree | None = None
    known: list[bool] = field(default_factory=list)
    entries: list[Entry] = field(default_factory=list)
    under: list[int] = field(default_factory=list)
    below: list[list[Entry]] = field(default_factory=list)
    top: list[Entry] = field(default_factory=list)
    orders: list[tuple[Resources, VictimKeys] | None] = field(default_factory=list)

    def forget(self, queues: set[str]) -> None:
        """Drop what depends on the given queues (leaves, and every queue above them)."""
        streams = self.streams
        index = {} if self.tree is None else self.tree.index
        for name in queues:  # (a commit changes a few queues: no pass over every leaf)
            streams.pop(name, None)
            at = index.get(name)
            if at is not None:
                self.known[at] = False

    def grow(self, session: Session, leaves: list[str]) -> _Tree:
        """The tree above the leaves, with nothing known yet (once)."""
        if self.tree is None:
            tree = self.tree = _Tree.of(session, leaves)
            count = len(tree.names)
            self.known = [False] * count
            self.entries = [None] * count
            self.under = [-1] * count
            self.below = [[None] * len(c) for c in tree.children]
            self.top = [None] * len(tree.roots)
            self.orders = [None] * count
        return self.tree


class VictimQueue:
    """Victim units in KAI's victim order, produced on demand from the leaf queues' jobs
    (``jobs_of``: a leaf's candidates in reverse job order) that ``eligible`` accepts.

    Every queue's entry (its victim-order key, judged with the next unit of the leaf below it
    that its own children rank last) is kept current: a pop changes only the entries on the
    popped leaf's chain, worked out again bottom-up from their children's."""

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
        self._protected = protected
        start = self._start = Start() if start is None else start
        tree = self._tree = start.grow(session, leaves)
        streams = start.streams
        self._streams: list[_Stream] = []
        for name in leaves:
            stream = streams.get(name)
            if stream is None:
                stream = streams[name] = _Stream(name, jobs_of, eligible)
            self._streams.append(stream)
        self._positions = [0] * len(leaves)  # units taken from each leaf in this search
        self._items = [stream.item(0) for stream in self._streams]  # each leaf's next unit
        known = {} if orders is None else orders  # kept by the caller, by queue and allocation
        kept = start.orders
        queues = session.queues
        for i, name in enumerate(tree.names):
            info = queues[name]
            allocated = info.usage.allocated
            order = kept[i]
            if order is None or order[0] is not allocated:
                memo = (name, allocated)
                if memo not in known:
                    known[memo] = VictimKeys(info, allocated, session.total)
                kept[i] = (allocated, known[memo])
        self._orders = [order[1] for order in kept if order is not None]
        self._entries = start.entries
        self._under = start.under
        self._below = start.below
        self._top = start.top
        if not all(start.known):
            for i, is_known in enumerate(start.known):  # bottom-up
                if not is_known:
                    self._refresh(i)
                    start.known[i] = True
        self._entries = list(start.entries)  # this search's own from here on
        self._under = list(start.under)
        below = start.below  # a leaf's (empty) list is never written: shared
        self._below = below[: tree.leaves] + [list(entries) for entries in below[tree.leaves :]]
        self._top = list(start.top)

    def pop(self) -> VictimUnit | None:
        """The next victim unit, or None when no victim is left."""
        parents = self._tree.parent
        while True:
            best = max(filter(None, self._top), default=None)
            if best is None:
                return None
            index = self._under[best[2]]
            item = self._items[index]
            assert item is not None
            position = self._positions[index] = self._positions[index] + 1
            stream = self._streams[index]
            worked_out = stream.items
            self._items[index] = (
                worked_out[position] if position < len(worked_out) else stream.item(position)
            )
            queue = index
            while queue >= 0:
                self._refresh(queue)
                queue = parents[queue]
            if not (item.whole and self._protected(item.unit.job)):
                return item.unit

    def _refresh(self, index: int) -> None:
        """Work a queue's entry out again from its leaf's next unit, or from its children's
        entries (the child ranked last gives next), and tell its parent."""
        tree = self._tree
        if index < tree.leaves:
            item = self._items[index]
            under = -1 if item is None else index
        else:
            best = max(filter(None, self._below[index]), default=None)
            under = -1 if best is None else self._under[best[2]]
            item = None if best is None else self._items[under]
        entry: Entry = None
        position = tree.position[index]
        if item is not None:
            order = self._orders[index]
            keys = item.keys
            if keys is None:
                keys = item.keys = {}
            cached = keys.get(index)
            if cached is not None and cached[0] is order:
                key = cached[1]
            else:
                key = order.key(item.through)
                keys[index] = (order, key)
            entry = (key, -position, index)
        self._entries[index] = entry
        self._under[index] = under
        parent = tree.parent[index]
        (self._top if parent < 0 else self._below[parent])[position] = entry
