"""The dashboard of a backend whose engine state changes in its own loop (``pykai run``):
the loop hands each cycle to ``CyclePages.observe``, which remembers evictions, reasons and
a history sample and, while someone is looking, builds the page there (the state is only
read in the loop's thread); HTTP threads serve the last page built."""

from __future__ import annotations

import json
import logging
import threading
import time

from pykai.dashboard.memory import Memory, from_decision
from pykai.dashboard.model import allocated_gpus, build_page
from pykai.engine.decisions import CycleResult, Reason
from pykai.engine.settings import SchedulerConfig
from pykai.engine.state import ClusterState

log = logging.getLogger("pykai.dashboard")
WATCHED_FOR = 30.0  # seconds after the last request during which pages are built
_WAITING = json.dumps({"waiting": "no scheduling cycle has run yet"}).encode()


class CyclePages:
    """Pages built from a loop's cycles, served from other threads."""

    def __init__(self, config: SchedulerConfig) -> None:
        self.config = config
        self.memory = Memory()
        self._reasons: dict[str, list[Reason]] = {}
        self._lock = threading.Lock()
        self._page = _WAITING
        self._asked = time.monotonic()  # the first cycle builds a page

    def observe(self, state: ClusterState, result: CycleResult, now: float) -> None:
        """After a cycle, in the loop's thread."""
        for evict in result.evictions:
            self.memory.evicted(from_decision(evict, now))
        self.memory.sample(now, allocated_gpus(state))
        self._reasons = {  # the last reasons of each job still pending
            key: reasons
            for key, reasons in {**self._reasons, **result.unschedulable}.items()
            if key in state.pending_jobs
        }
        if time.monotonic() - self._asked > WATCHED_FOR:
            return
        try:
            model = build_page(
                state,
                self.config,
                now,
                reasons=self._reasons,
                evictions=self.memory.evictions(),
                history=self.memory.history(),
            )
        except Exception:  # a dashboard bug must not stop scheduling: the last page stays
            log.exception("the dashboard page could not be built")
            return
        with self._lock:
            self._page = json.dumps(model).encode()

    def page(self) -> bytes:
        """The last page built (from another thread)."""
        self._asked = time.monotonic()
        with self._lock:
            return self._page
