"""Min-runtime: a job that started less than its queue's min-runtime ago is not a victim.

The preempt value comes from the victim's queue, walking up the tree; the reclaim value (KAI's
``lca`` method) from the queue one step below the lowest common ancestor of the two queues on
the victim's side, walking up. Unset everywhere: the configured default.
"""

from __future__ import annotations

from pykai.engine.jobs import Job
from pykai.engine.session import Session
from pykai.model.duration import parse_duration


def _walk_up(session: Session, start: list[str], field: str) -> float | None:
    queues = session.state.queues
    for name in start:
        value: str | None = getattr(queues[name].spec, field)
        if value is not None:
            return parse_duration(value)
    return None


def preempt_min_runtime(session: Session, victim: Job) -> float:
    """How long the victim must have run before it may be preempted."""
    chain = list(session.state.queue_chain(victim.queue))
    value = _walk_up(session, chain, "preempt_min_runtime")
    return session.config.default_preempt_min_runtime if value is None else value


def reclaim_min_runtime(session: Session, victim: Job, reclaimer_queue: str) -> float:
    """How long the victim must have run before another queue may reclaim from it."""
    victim_chain = list(session.state.queue_chain(victim.queue))
    reclaimer_chain = set(session.state.queue_chain(reclaimer_queue))
    below_lca = [q for q in victim_chain if q not in reclaimer_chain]
    value = _walk_up(
        session, below_lca[-1:] + victim_chain[len(below_lca) :], "reclaim_min_runtime"
    )
    return session.config.default_reclaim_min_runtime if value is None else value


def is_protected(session: Session, victim: Job, min_runtime: float) -> bool:
    """True if the victim started less than ``min_runtime`` seconds ago."""
    started = victim.last_start
    return started is not None and min_runtime > 0 and session.now - started < min_runtime
