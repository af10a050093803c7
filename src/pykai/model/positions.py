"""Where pending jobs stand, as the scheduler last worked it out: the types the engine fills
(engine/positions.py) and the reading commands, ``pykai run``'s endpoint and the embedded
store's record use, with their JSON form. Nothing here imports the engine."""

from __future__ import annotations

import json
from dataclasses import dataclass

from pykai.model.meta import Obj

NOT_READY = "NotReady"  # a gang waiting for its pods to be created (KAI's NotReady event)


@dataclass(frozen=True, slots=True)
class Reason:
    """Why a job did not run: a KAI reason code and a message a user can act on."""

    reason: str  # OverLimit, NonPreemptibleOverQuota, QueueDoesNotExist, NotReady, Unschedulable
    message: str


@dataclass(frozen=True, slots=True)
class Position:
    """A pending job's standing. Positions count from 0 (as Kueue's visibility API);
    ``None`` when allocate will not try the job (``reasons`` say why)."""

    job: str  # "namespace/name" of its PodGroup
    queue: str
    priority: int
    in_queue: int | None  # jobs of its leaf queue tried before it
    in_cycle: int | None  # jobs of the whole cluster tried before it
    reasons: tuple[Reason, ...] = ()  # why it waited, as last recorded

    @property
    def reason(self) -> str:
        """The reason codes in one cell (``OverLimit,Unschedulable``), or ""."""
        return ",".join(r.reason for r in self.reasons)


@dataclass(frozen=True, slots=True)
class Board:
    """Every pending job's position, with the queue tree of that moment."""

    positions: tuple[Position, ...]
    chains: dict[str, tuple[str, ...]]  # queue -> it and its ancestors
    at: float  # when, in seconds since the epoch

    def by_job(self) -> dict[str, Position]:
        """Positions by job key (``namespace/name``)."""
        return {p.job: p for p in self.positions}

    def under(self, queue: str) -> list[Position]:
        """The positions of the jobs of ``queue`` and of the queues below it, in the order
        the scheduler tries them, untried ones last."""
        found = [
            p for p in self.positions if p.queue == queue or queue in self.chains.get(p.queue, ())
        ]
        return sorted(found, key=lambda p: (p.in_cycle is None, p.in_cycle or 0, p.job))


def job_key(podgroup: Obj) -> str:
    """A PodGroup's key as the engine names its job: ``namespace/name``."""
    meta = podgroup["metadata"]
    return f"{meta.get('namespace') or 'default'}/{meta['name']}"


def encode(board: Board) -> str:
    """A board as JSON (what ``decode`` reads back)."""
    positions = [
        [
            p.job,
            p.queue,
            p.priority,
            p.in_queue,
            p.in_cycle,
            [[r.reason, r.message] for r in p.reasons],
        ]
        for p in board.positions
    ]
    chains = {name: list(chain) for name, chain in sorted(board.chains.items())}
    return json.dumps({"at": board.at, "positions": positions, "chains": chains})


def decode(text: str) -> Board:
    """A board from its JSON (``encode``'s)."""
    data = json.loads(text)
    positions = tuple(
        Position(job, queue, priority, in_queue, in_cycle, tuple(Reason(*r) for r in reasons))
        for job, queue, priority, in_queue, in_cycle, reasons in data["positions"]
    )
    chains = {name: tuple(chain) for name, chain in data["chains"].items()}
    return Board(positions, chains, float(data["at"]))
