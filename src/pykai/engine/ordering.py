"""Job order and queue order (KAI's priority, elastic and proportion plugins), and the
queue tree that hands out the next job to try."""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable, Iterable

from pykai.engine.jobs import Job
from pykai.engine.session import QueueInfo, Session
from pykai.model.resources import EPS, Resources


def job_order_key(job: Job) -> tuple[int, int, float, str]:
    """Higher priority first, then jobs below their minimum, then older, then by PodGroup name
    (KAI's job ID is the PodGroup's name: cluster_info.go; namespace and UID only part jobs of
    one name, which KAI cannot tell apart)."""
    return (-job.priority, job.elastic_state(), job.creation, job.tie)


def _dominant_share(
    used: tuple[float, float, float], allocatable: tuple[float, float, float]
) -> float:
    """max over resources of used / allocatable; a zero allocatable weighs used × 1000."""
    u0, u1, u2 = used
    s0, s1, s2 = allocatable
    return max(
        0.0,
        u0 * 1000 if s0 <= EPS else u0 / s0,
        u1 * 1000 if s1 <= EPS else u1 / s1,
        u2 * 1000 if s2 <= EPS else u2 / s2,
    )


QueueKey = tuple[bool, bool, int, bool, float, float, float, float, str]


def queue_order_key(
    queue: QueueInfo, job_request: Resources, total: Resources, allocated: Resources | None = None
) -> QueueKey:
    """KAI's queue order as a sort key (smaller goes first), given the request of the job the
    queue would run next: not over fair share, starved, priority, no zero-share penalty, DRF
    with the job, DRF without it, smaller allocatable share, older. ``allocated`` stands in for
    the queue's allocation (a simulation's figure), if given.

    KAI's seventh criterion is a partial order (smaller in every resource); the key uses the
    sum of the shares relative to the cluster total, which agrees with it wherever it decides.
    """
    used = queue.usage.allocated if allocated is None else allocated
    return _order_key(queue, used, job_request, job_request, total)


def victim_order_key(
    queue: QueueInfo, allocated: Resources, victims: Resources, total: Resources
) -> QueueKey:
    """Queue order when victims are taken (KAI's VictimQueue mode), given the queue's
    allocation before any victim is evicted: no job is added, and the DRF criterion counts the
    queue's share without the victims taken from it so far and the next one. Victims come first
    from the queue this key ranks *last*."""
    return _order_key(queue, allocated, Resources.ZERO, victims.scaled(-1.0), total)


class VictimKeys:
    """``victim_order_key`` of one queue for one search, where only the victims change: the
    rest of the key is worked out once."""

    def __init__(self, queue: QueueInfo, allocated: Resources, total: Resources) -> None:
        key = victim_order_key(queue, allocated, Resources.ZERO, total)
        self._prefix = key[:4]
        self._suffix = key[5:]
        self._allocated = tuple(allocated)
        self._share = tuple(queue.share or queue.allocatable_share(total))

    def key(self, victims: Resources) -> QueueKey:
        """The queue's key with ``victims`` taken from it (``_dominant_share`` written out:
        this runs for every victim taken)."""
        cpu, memory, gpu = self._allocated
        cpu -= victims.cpu
        memory -= victims.memory
        gpu -= victims.gpu
        s0, s1, s2 = self._share
        share = max(
            0.0,
            cpu * 1000 if s0 <= EPS else cpu / s0,
            memory * 1000 if s1 <= EPS else memory / s1,
            gpu * 1000 if s2 <= EPS else gpu / s2,
        )
        return (*self._prefix, share, *self._suffix)


def _order_key(
    queue: QueueInfo,
    used: Resources,
    job_request: Resources,
    drf_change: Resources,
    total: Resources,
) -> QueueKey:
    # the three resources written out: this runs for every queue-order key a cycle needs
    a0, a1, a2 = used.cpu, used.memory, used.gpu
    w0, w1, w2 = a0 + job_request.cpu, a1 + job_request.memory, a2 + job_request.gpu
    fair, deserved = queue.fair_share, queue.deserved
    if queue.share is None:
        queue.share = queue.allocatable_share(total)
    share = queue.share
    s0, s1, s2 = share.cpu, share.memory, share.gpu
    over = a0 > fair.cpu + EPS and a1 > fair.memory + EPS and a2 > fair.gpu + EPS
    starved = w0 <= deserved.cpu + EPS and w1 <= deserved.memory + EPS and w2 <= deserved.gpu + EPS
    zero_share = (w0 > EPS and s0 <= EPS) or (w1 > EPS and s1 <= EPS) or (w2 > EPS and s2 <= EPS)
    relative = sum(
        s / t for s, t in ((s0, total.cpu), (s1, total.memory), (s2, total.gpu)) if t > EPS
    )
    changed = (a0 + drf_change.cpu, a1 + drf_change.memory, a2 + drf_change.gpu)
    return (
        over,
        not starved,
        -queue.priority,
        zero_share,
        _dominant_share(changed, (s0, s1, s2)),
        _dominant_share((a0, a1, a2), (s0, s1, s2)),
        relative,
        queue.creation,
        queue.name,  # KAI's queue ID is its name (queue_info.go), its last tie-break
    )


def sides(session: Session, one: str, other: str) -> tuple[QueueInfo, QueueInfo] | None:
    """The queues on each side just below the lowest common ancestor of two queues (the
    top-level queues when they share none): where KAI compares them."""
    chain = session.state.queue_chain(one)
    other_chain = session.state.queue_chain(other)
    mine = [q for q in chain if q not in other_chain]
    theirs = [q for q in other_chain if q not in chain]
    if not mine or not theirs or mine[-1] not in session.queues or theirs[-1] not in session.queues:
        return None
    return session.queues[mine[-1]], session.queues[theirs[-1]]


JobKey = tuple[int, int, float, str]
KeyMemo = dict[tuple[str, Resources, Resources], QueueKey]


class JobQueue:
    """Pending jobs in leaf queues; ``pop`` walks the tree from the root, taking at each level
    the child queue that queue order ranks first, judged by the job it would run next.

    A simulation may give the jobs' order (``order_key``) and the queues' allocation
    (``allocated``, read after every pop) itself, and share a memo of queue keys."""

    def __init__(
        self,
        session: Session,
        jobs: Iterable[Job],
        request_of: Callable[[Job], Resources],
        *,
        order_key: Callable[[Job], JobKey] = job_order_key,
        allocated: Callable[[str], Resources] | None = None,
        memo: KeyMemo | None = None,
    ) -> None:
        self._session = session
        self._request_of = request_of
        self._order_key = order_key
        self._allocated = allocated
        self._memo = memo
        self._heaps: dict[str, list[tuple[tuple[int, int, float, str], int, Job]]] = {}
        self._counts: dict[str, int] = {}
        self._seq = itertools.count()
        self._keys: dict[str, QueueKey] = {}  # cached queue-order keys, dropped when they change
        self._roots = sorted(q.name for q in session.queues.values() if not q.parent)
        for job in jobs:
            self.push(job)

    def remaining(self) -> list[Job]:
        """The jobs not popped yet (in no particular order)."""
        return [job for heap in self._heaps.values() for _, _, job in heap]

    def push(self, job: Job) -> None:
        """Add (or re-add) a job to its leaf queue."""
        heapq.heappush(
            self._heaps.setdefault(job.queue, []), (self._order_key(job), next(self._seq), job)
        )
        for name in self._session.state.queue_chain(job.queue):
            self._counts[name] = self._counts.get(name, 0) + 1

    def pop(self) -> Job | None:
        """The next job to try, or None when every queue is empty."""
        level = self._roots
        chosen = ""
        heads: dict[str, Job] = {}
        counts = self._counts
        queues = self._session.queues
        while level:
            best = self._best([q for q in level if counts.get(q, 0) > 0], heads)
            if best is None:
                break
            chosen = best
            level = queues[chosen].children
        if not chosen or not self._heaps.get(chosen):
            return None
        _, _, job = heapq.heappop(self._heaps[chosen])
        for name in self._session.state.queue_chain(job.queue):
            self._counts[name] -= 1
            self._keys.pop(name, None)  # its head and (once the job runs) its usage change
        return job

    def _head(self, queue: str, heads: dict[str, Job]) -> Job:
        """The job a queue's subtree would hand out next."""
        if queue not in heads:
            heap = self._heaps.get(queue)
            if heap:
                heads[queue] = heap[0][2]
            else:
                children = [
                    c for c in self._session.queues[queue].children if self._counts.get(c, 0) > 0
                ]
                best = self._best(children, heads)
                assert best is not None
                heads[queue] = self._head(best, heads)
        return heads[queue]

    def _best(self, candidates: list[str], heads: dict[str, Job]) -> str | None:
        """The candidate queue order ranks first (None if there is none)."""
        if len(candidates) < 2:
            return candidates[0] if candidates else None
        best = candidates[0]
        best_key = self._key(best, heads)
        for name in candidates[1:]:
            key = self._key(name, heads)
            if key < best_key:
                best, best_key = name, key
        return best

    def _key(self, name: str, heads: dict[str, Job]) -> QueueKey:
        key = self._keys.get(name)
        if key is None:
            request = self._request_of(self._head(name, heads))
            queue = self._session.queues[name]
            used = queue.usage.allocated if self._allocated is None else self._allocated(name)
            memo_key = (name, used, request)
            key = self._memo.get(memo_key) if self._memo is not None else None
            if key is None:
                key = queue_order_key(queue, request, self._session.total, used)
                if self._memo is not None:
                    self._memo[memo_key] = key
            self._keys[name] = key
        return key
