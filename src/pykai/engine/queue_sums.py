"""Per-queue sums over the jobs: each queue's own, and its whole subtree's."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from pykai.model.resources import Resources


@dataclass(slots=True)
class QueueUsage:
    """Sums over a queue's jobs (its subtree's, for ``QueueSums.subtree``)."""

    allocated: Resources = Resources.ZERO
    allocated_non_preemptible: Resources = Resources.ZERO
    requested: Resources = Resources.ZERO  # allocated + pending + pipelined


class QueueSums:
    """The sums of every queue, own and subtree, given the queue tree as ``chain`` (a queue
    and its ancestors, leaf first). The dictionaries are never replaced, only updated."""

    def __init__(self, chain: Callable[[str], tuple[str, ...]]) -> None:
        self._chain = chain
        self.own: dict[str, QueueUsage] = {}  # per queue, its own jobs
        self.subtree: dict[str, QueueUsage] = {}  # per queue, its whole subtree
        # queue -> its own sums and its chain's subtree sums (until the tree changes)
        self._targets: dict[str, list[QueueUsage]] = {}

    def add(self, queue: str, request: Resources, allocated: bool, non_preemptible: bool) -> None:
        """Add a request to a queue's sums and its ancestors' (``allocated``: also to the
        allocation, and to the non-preemptible allocation if ``non_preemptible``)."""
        targets = self._targets.get(queue)
        if targets is None:
            own = self.own.setdefault(queue, QueueUsage())
            chain = self._chain(queue)
            targets = [own, *(self.subtree.setdefault(q, QueueUsage()) for q in chain)]
            self._targets[queue] = targets
        for usage in targets:
            usage.requested += request
            if allocated:
                usage.allocated += request
                if non_preemptible:
                    usage.allocated_non_preemptible += request

    def recount(self) -> None:
        """Recount subtree sums after the tree changed (``chain`` answers for the new one)."""
        self._targets.clear()
        self.subtree.clear()
        for name, own in self.own.items():
            for q in self._chain(name):
                sums = self.subtree.setdefault(q, QueueUsage())
                sums.allocated += own.allocated
                sums.allocated_non_preemptible += own.allocated_non_preemptible
                sums.requested += own.requested
