"""The actions a cycle may run, registered once, by name (as KAI's actions/factory.go): the
configuration accepts these names and no others (engine/config.py derives them from here), and
their order is KAI's default order, the first of the highest priority."""

from __future__ import annotations

from collections.abc import Callable

from pykai.engine.actions.allocate import allocate
from pykai.engine.actions.consolidation import consolidation
from pykai.engine.actions.preempt import preempt
from pykai.engine.actions.reclaim import reclaim
from pykai.engine.actions.stale_gang import stale_gang_eviction
from pykai.engine.session import Session

Action = Callable[[Session], None]
"""An action: it may change the session's state only through statements it commits (binds,
pipelined placements, evictions: the cycle's decisions) or discards, say why a job waits
(``Session.note``) and what it left untried; it returns nothing and must not raise for any
objects the state holds."""

ACTIONS: dict[str, Action] = {
    "allocate": allocate,
    "consolidation": consolidation,
    "reclaim": reclaim,
    "preempt": preempt,
    "stalegangeviction": stale_gang_eviction,
}
"""Every action, by its KAI name, in KAI's default order."""
