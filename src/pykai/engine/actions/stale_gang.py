"""stalegangeviction: a job running below its minimum for longer than the grace period is
evicted as a whole (KAI's default grace: 60 s; negative means never)."""

from __future__ import annotations

from pykai.engine.jobs import EVICTABLE
from pykai.engine.session import Session


def stale_gang_eviction(session: Session) -> None:
    """Evict stale gangs; note when a job became stale (None when it recovered), for the
    backend to keep in the PodGroup annotation."""
    state = session.state
    grace = session.config.stale_gang_grace_period
    for key in sorted(state.indexes.below_minimum | state.indexes.stale_marked):
        job = state.jobs[key]
        if not job.running_below_minimum():
            if job.stale_since is not None:
                state.indexes.mark_stale(job, None)
                session.stale[key] = None
            continue
        if job.stale_since is None:
            state.indexes.mark_stale(job, session.now)
            session.stale[key] = session.now
        since = job.stale_since if job.stale_since is not None else session.now
        if grace < 0 or session.now - since < grace:
            continue
        statement = session.statement()
        message = (
            f"gang {key} ran with {job.running} of its minimum {job.min_member} pods "
            f"for {session.now - since:g}s (grace {grace:g}s)"
        )
        for task in sorted(job.tasks.values(), key=lambda t: t.order_key):
            if task.status in EVICTABLE:
                statement.evict(task, "StaleGang", message, action="stalegangeviction")
        statement.commit()
        state.indexes.mark_stale(job, None)
        session.stale[key] = None
