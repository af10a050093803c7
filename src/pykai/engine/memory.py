"""The garbage-collection policy of a process that keeps a large cluster state.

A ``ClusterState`` keeps several objects per pod, job and node for as long as the process runs.
CPython's cyclic collector walks every live object in each collection of its oldest generation,
and a scheduling cycle allocates enough to set one off: at 10,000 pods one such collection
takes about a tenth of a second, every time. ``settle`` runs one full collection and then moves
every object that survived into the permanent generation (``gc.freeze``), which collections
never walk; those objects are still freed by reference counting when the state lets them go.
The permanent generation is emptied first, so reference cycles that became garbage since the
last ``settle`` are collected too.

The backends call it once their initial load is in (the embedded cluster after loading the
store, ``pykai run`` once every informer has listed), and the engine benchmark before each
timed cycle. A small state is left alone: its collections cost little, and a full one would
cost more than it saves.
"""

from __future__ import annotations

import gc

from pykai.engine.state import ClusterState

LARGE_STATE = 5_000  # pods from which a state is settled


def settle(state: ClusterState) -> bool:
    """Collect, then freeze what is left, if ``state`` holds at least ``LARGE_STATE`` pods;
    whether it did."""
    if len(state.tasks) < LARGE_STATE:
        return False
    gc.unfreeze()
    gc.collect()
    gc.freeze()
    return True
