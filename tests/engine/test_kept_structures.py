"""What the victim solver keeps across the searches of an action equals a fresh rebuild.

A solver keeps, from one search to the next and across commits: the leaf queues that have
victims, each leaf's victim list, each leaf's stream of victim units and every queue's entry in
the victim order before the first pop (shared by the searches over the same leaves), reclaim's
verdicts by the two sides' allocations and its layout of victim queues by sibling, and the
pending jobs' order. The exhaustive solver builds each of them afresh every time. On random
contended clusters, after every commit of a sequence of searches, the kept ones must give what
fresh ones give.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings

from pykai.bench.contended import build, reclaim_heavy
from pykai.engine.actions.allocate import schedulable_jobs, tasks_to_allocate
from pykai.engine.actions.reclaim import Layouts, Verdicts, _candidates
from pykai.engine.actions.simulation import request_of
from pykai.engine.actions.solver import Solver
from pykai.engine.actions.victims import VictimQueue
from pykai.engine.jobs import Job
from pykai.engine.ordering import job_order_key
from pykai.engine.session import Session
from pykai.engine.settings import SchedulerConfig
from pykai.engine.state import ClusterState
from pykai.model.meta import Obj

from .test_search_exact import contended

LAST: tuple[int, int, float, str] = (1 << 30, 3, float("inf"), "~")  # after every job


def _any(_: Job) -> bool:
    return True


def _protected(job: Job) -> bool:
    """Min-runtime stand-in that protects some gangs (their last unit is then skipped)."""
    return job.uid.endswith(("1", "4", "7"))


def _units(queue: VictimQueue) -> list[tuple[str, tuple[str, ...]]]:
    """Every unit the queue hands out, in order."""
    return [(unit.job.key, tuple(t.name for t in unit.tasks)) for unit in iter(queue.pop, None)]


def _compare(
    session: Session, kept: Solver, verdicts: Verdicts, layouts: Layouts, job: Job
) -> list[str]:
    """Check the kept structures against fresh ones for one job; its victim leaves."""
    fresh = Solver(session, "reclaim", "Reclaimed", exhaustive=True)
    assert kept.victim_queues() == fresh.victim_queues()
    leaves = [queue for queue in fresh.victim_queues() if queue != job.queue]
    for leaf in {job.queue, *leaves}:
        assert kept.victims_in(leaf) == fresh.victims_in(leaf)
        assert kept.pending_before(leaf, LAST) == fresh.pending_before(leaf, LAST)
    request = request_of(tasks_to_allocate(job))
    assert _candidates(session, kept, verdicts, layouts, job, request) == _candidates(
        session, fresh, {}, {}, job, request
    )
    for subset in (leaves, leaves[::2]):  # two leaf sets, each with its own kept start
        first = _units(kept.victim_order(subset, _any, _protected, shared=True))
        again = _units(kept.victim_order(subset, _any, _protected, shared=True))
        assert first == again == _units(fresh.victim_order(subset, _any, _protected))
    return leaves


def _searches(state: ClusterState) -> int:
    """Reclaim-like searches (no validator) for every pending job, checking the kept
    structures before each and after the last; how many searches committed."""
    session = Session.open(state, SchedulerConfig(), 1_000_000.0)
    kept = Solver(session, "reclaim", "Reclaimed")
    verdicts: Verdicts = {}
    layouts: Layouts = {}
    commits = 0
    for job in sorted(schedulable_jobs(session, note=False), key=job_order_key):
        tasks = tasks_to_allocate(job)
        if not tasks:
            continue
        leaves = _compare(session, kept, verdicts, layouts, job)
        if leaves and kept.solve(job, tasks, leaves, _any, _protected, "test", shared=True):
            commits += 1
    for job in sorted(schedulable_jobs(session, note=False), key=job_order_key):
        _compare(session, kept, verdicts, layouts, job)
    return commits


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(contended())
def test_kept_structures_equal_a_fresh_rebuild_after_every_commit(objs: list[Obj]) -> None:
    state = ClusterState()
    for obj in objs:
        state.upsert(obj)
    _searches(state)


def test_the_property_sees_commits() -> None:
    """The comparison runs between commits: on a small reclaim-heavy cluster (every GPU held
    by half the departments, the other half pending) most searches commit."""
    assert _searches(build(reclaim_heavy(3))) >= 5
