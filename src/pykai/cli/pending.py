"""Where each pending job stands, for the reading commands: on the embedded cluster as its last
round recorded it (the store keeps it; the engine is not loaded), elsewhere (a live cluster,
or a file written without a round since) worked out by the engine from the reader's objects.

Only ``positions_of`` loads the engine, and only when nothing current is recorded."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pykai.cli.related import Reader
from pykai.model.positions import Board

if TYPE_CHECKING:
    from pykai.engine.state import ClusterState


def engine_state(reader: Reader) -> ClusterState:
    """A new engine state holding the reader's objects of the kinds the engine reads."""
    from pykai.engine.state import STATE_KINDS
    from pykai.engine.whatif import load_state

    return load_state(obj for kind in STATE_KINDS for obj in reader.list(kind))


def positions_of(reader: Reader, state: ClusterState | None = None) -> Board:
    """Every pending job's position: recorded, when the reader keeps current ones; else
    worked out by the engine (on ``state`` if given) with the reasons the PodGroups record."""
    recorded = reader.positions()
    if recorded is not None:
        return recorded
    from pykai.engine.positions import board, reasons_of

    state = state or engine_state(reader)
    return board(state, reader.now(), reasons_of(reader.list("PodGroup")))
