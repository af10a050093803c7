"""Queue positions served by ``pykai run``: ``GET /apis/pykai.io/v1/queues/NAME/pendingpodgroups``
answers a ``PendingPodGroupsSummary`` shaped like Kueue's ``PendingWorkloadsSummary`` (its
visibility API): the queue's pending PodGroups (its subtree's, for a parent queue) in the order
the scheduler tries them, with their place in their own queue and in the whole cycle (from 0,
as Kueue counts), their priority and why they waited; ``limit`` (default 1000) and ``offset``
page them, as in Kueue.

The engine's state belongs to the run loop, so the loop works the positions out between two
cycles when a request waits for them (``PendingBoard``); a request is answered with the last
ones if the loop does not come round in time (a standby replica never does: 503 until then).
"""

from __future__ import annotations

import threading

from pykai.engine.decisions import CycleResult, Reason
from pykai.engine.positions import board
from pykai.engine.state import ClusterState
from pykai.kube.endpoints import Answer, Page, failure, page
from pykai.model.meta import format_time
from pykai.model.positions import Board, Position

PREFIX = "/apis/pykai.io/v1/queues/"
SUFFIX = "/pendingpodgroups"
DEFAULT_LIMIT = 1000  # Kueue's default


class PendingBoard:
    """Positions handed from the run loop to the HTTP threads that ask for them."""

    def __init__(self, wait: float = 5.0) -> None:
        self._wait = wait
        self._lock = threading.Lock()
        self._wanted = threading.Event()
        self._published = threading.Condition(self._lock)
        self._board: Board | None = None

    def wanted(self) -> bool:
        """True when a request waits for positions (the loop then calls ``publish``)."""
        return self._wanted.is_set()

    def observe(self, state: ClusterState, result: CycleResult, now: float) -> None:
        """A run-loop observer: publish after a cycle when a request waits for positions."""
        if self.wanted():
            self.publish(state, now, result.unschedulable)

    def answer(self, target: str) -> Answer | None:
        """A metrics-server route: the answer to a request for ``target`` (path and query;
        None: not this route's)."""
        path, _, query = target.partition("?")
        return route(self, path, query)

    def publish(self, state: ClusterState, now: float, reasons: dict[str, list[Reason]]) -> None:
        """Work the positions out from the loop's state (between cycles) and hand them over."""
        self._wanted.clear()
        found = board(state, now, reasons)
        with self._lock:
            self._board = found
            self._published.notify_all()

    def latest(self) -> Board | None:
        """Fresh positions if the loop comes round within the wait, else the last ones (None
        if it never published)."""
        with self._lock:
            before = self._board
            self._wanted.set()
            self._published.wait_for(lambda: self._board is not before, self._wait)
            return self._board


def route(board: PendingBoard, path: str, query: str) -> Answer | None:
    """The answer to a request for ``path`` (None: not this route's)."""
    if not (path.startswith(PREFIX) and path.endswith(SUFFIX)):
        return None
    name = path[len(PREFIX) : -len(SUFFIX)]
    asked = page(query, DEFAULT_LIMIT)
    if not isinstance(asked, Page):
        return asked
    limit, offset = asked
    if limit < 0 or offset < 0:
        return failure(400, "BadRequest", "limit and offset must not be negative")
    found = board.latest()
    if found is None:
        return failure(
            503, "ServiceUnavailable", "no positions yet: this replica has not scheduled"
        )
    if name not in found.chains:
        return failure(404, "NotFound", f'queues.scheduling.run.ai "{name}" not found')
    return 200, summary(found.under(name)[offset : offset + limit], found.at)


def summary(positions: list[Position], at: float) -> dict[str, object]:
    """A ``PendingPodGroupsSummary`` of ``positions``."""
    return {
        "kind": "PendingPodGroupsSummary",
        "apiVersion": "pykai.io/v1",
        "metadata": {"creationTimestamp": format_time(at)},
        "items": [_item(p) for p in positions],
    }


def _item(position: Position) -> dict[str, object]:
    namespace, name = position.job.split("/", 1)
    return {
        "metadata": {"name": name, "namespace": namespace},
        "priority": position.priority,
        "queueName": position.queue,
        "positionInQueue": position.in_queue,
        "positionInCycle": position.in_cycle,
        "reasons": [{"reason": r.reason, "message": r.message} for r in position.reasons],
    }
