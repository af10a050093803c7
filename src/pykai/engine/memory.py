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

``pykai run`` also calls ``long_running`` first. At CPython's default (a young collection every
700 allocations, an old one every 100 young ones) decoding, loading and binding 5,000 pods set
off about 2,000 collections and 14 full ones, 0.1-0.27 s each: 2.0 s of the process's CPU,
0.6 s of it before the first bind (`pykai bench kube`, 1,000 nodes, 5,000 pods; measured
with ``gc.callbacks``). Collecting the young generation every ``YOUNG_EVERY`` allocations makes
that 24-28 collections and 2 full ones, 1.1-1.2 s; its first bind came 1.27-1.44 s after start
instead of 1.76-1.99 s.
"""

from __future__ import annotations

import gc
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # ``long_running`` is called before the engine is imported
    from pykai.engine.state import ClusterState

LARGE_STATE = 5_000  # pods from which a state is settled
YOUNG_EVERY = 50_000  # allocations between young collections in a long-running process


def long_running() -> None:
    """The collector's settings for a process that will hold a cluster's state: what it has
    imported so far is frozen (it lives as long as the process), and the young generation is
    collected every ``YOUNG_EVERY`` allocations (the older ones as often as before, relative
    to it)."""
    gc.freeze()
    gc.set_threshold(YOUNG_EVERY, *gc.get_threshold()[1:])


def settle(state: ClusterState) -> bool:
    """Collect, then freeze what is left, if ``state`` holds at least ``LARGE_STATE`` pods;
    whether it did."""
    if len(state.tasks) < LARGE_STATE:
        return False
    gc.unfreeze()
    gc.collect()
    gc.freeze()
    return True
