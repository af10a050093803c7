"""The engine's view of a cluster for the reading commands: its state built from the objects a
reader gives (the embedded store, or a live cluster), and where each pending job stands.

This loads the engine: only the columns and sections that show positions, and ``explain``,
come here."""

from __future__ import annotations

from pykai.cli.related import Reader
from pykai.engine.positions import Position, pending_positions, recorded_reasons, under_queue
from pykai.engine.state import ClusterState
from pykai.engine.whatif import STATE_KINDS, load_state
from pykai.model.meta import Obj


def engine_state(reader: Reader) -> ClusterState:
    """A new engine state holding the reader's objects of the kinds the engine reads."""
    return load_state(obj for kind in STATE_KINDS for obj in reader.list(kind))


def job_key(podgroup: Obj) -> str:
    """A PodGroup's key as the engine names its job: ``namespace/name``."""
    meta = podgroup["metadata"]
    return f"{meta.get('namespace') or 'default'}/{meta['name']}"


def positions(reader: Reader, state: ClusterState | None = None) -> dict[str, Position]:
    """Each pending job's position by job key, with the reasons its PodGroup records."""
    state = state or engine_state(reader)
    reasons = {job_key(group): recorded_reasons(group) for group in reader.list("PodGroup")}
    return {p.job: p for p in pending_positions(state, reader.now(), reasons)}


def pending_under(reader: Reader, queue: str) -> list[Position]:
    """The pending jobs of a queue and of the queues below it, in the order the scheduler will
    try them; those it will not try last."""
    state = engine_state(reader)
    return under_queue(positions(reader, state).values(), queue, state.queue_chain)
