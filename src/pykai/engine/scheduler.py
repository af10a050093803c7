"""One scheduling cycle: open a session on the state, run the configured actions, close."""

from __future__ import annotations

from pykai.engine.config import SchedulerConfig
from pykai.engine.decisions import CycleResult
from pykai.engine.state import ClusterState


class Scheduler:
    """Runs cycles with a fixed configuration."""

    def __init__(self, config: SchedulerConfig | None = None) -> None:
        self.config = config or SchedulerConfig()

    def run_cycle(self, state: ClusterState, now: float) -> CycleResult:
        """Run one cycle at time ``now`` (seconds). Committed binds stay in ``state`` as
        assumed (status Binding) until the backend confirms them; evicted tasks stay
        Releasing until their pods are deleted."""
        raise NotImplementedError("being written")
