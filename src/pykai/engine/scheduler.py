"""One scheduling cycle: open a session on the state, run the configured actions, close."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from pykai.engine.actions.registry import ACTIONS
from pykai.engine.decisions import Bind, CycleResult
from pykai.engine.kueue.place import place_admitted
from pykai.engine.session import Session
from pykai.engine.settings import SchedulerConfig
from pykai.engine.state import ClusterState

log = logging.getLogger("pykai.engine")


class Scheduler:
    """Runs cycles with a fixed configuration."""

    def __init__(self, config: SchedulerConfig | None = None) -> None:
        self.config = config or SchedulerConfig()

    def run_cycle(
        self, state: ClusterState, now: float, on_bind: Callable[[Bind], None] | None = None
    ) -> CycleResult:
        """Run one cycle at time ``now`` (seconds). Committed binds stay in ``state`` as
        assumed (status Binding) until the backend confirms them; evicted tasks stay
        Releasing until their pods are deleted. ``on_bind`` is told each bind as soon as it
        is committed (a backend may start binding while the cycle goes on)."""
        started = time.perf_counter()
        session = Session.open(state, self.config, now, on_bind)
        opened = time.perf_counter()
        place_admitted(session)
        action_timings: dict[str, float] = {}
        configured = self.config.actions
        for name in list(ACTIONS) if configured is None else configured:
            action = ACTIONS.get(name)
            if action is not None:
                begun = time.perf_counter()
                action(session)
                action_timings[name] = time.perf_counter() - begun
        acted = time.perf_counter()
        result = session.close()
        for spent, skipped in result.out_of_budget.items():
            log.warning(
                "%s spent its search budget (%gs): %d pending job(s) not tried this cycle",
                spent,
                self.config.action_search_budget,
                skipped,
            )
        result.timings = {
            "session_open": opened - started,
            "actions": acted - opened,
            "close": time.perf_counter() - acted,
        }
        result.action_timings = action_timings
        return result
