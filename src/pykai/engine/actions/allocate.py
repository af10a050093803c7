"""allocate: place pending jobs on free resources, gang by gang, in queue and job order.

A job below its minimum gets all its missing pods up to the minimum at once (all or nothing,
per subgroup and for the whole PodGroup); once the minimum is met, one extra pod per pass, and
the job goes back into its queue so that elastic growth interleaves with other jobs by fairness.
"""

from __future__ import annotations

from collections.abc import Collection

from pykai.engine.actions.gang import FitKey, fit_key, place_gang
from pykai.engine.capacity import over_capacity
from pykai.engine.decisions import Reason
from pykai.engine.jobs import Job, Task, TaskStatus
from pykai.engine.ordering import JobQueue
from pykai.engine.placement import explain
from pykai.engine.session import Session
from pykai.model.positions import NOT_READY
from pykai.model.resources import Resources


def allocate(session: Session) -> None:
    """Run the allocate action."""
    plans: dict[str, tuple[list[Task], Resources]] = {}  # job -> its next pods, their sum
    no_fit: dict[FitKey, str] = {}  # allocate only fills nodes: what did not fit stays so

    def plan(job: Job) -> tuple[list[Task], Resources]:
        found = plans.get(job.key)
        if found is None:
            tasks = tasks_to_allocate(job)
            total = Resources.ZERO
            for task in tasks:
                total += task.request
            found = plans[job.key] = (tasks, total)
        return found

    def request_of(job: Job) -> Resources:
        return plan(job)[1]

    queue = JobQueue(session, schedulable_jobs(session), request_of, memo={})
    while (job := queue.pop()) is not None:
        tasks = plan(job)[0]
        del plans[job.key]
        if not tasks:
            continue
        if allocate_job(session, job, tasks, no_fit) and job.pending and job.gang_satisfied():
            queue.push(job)


def schedulable_jobs(session: Session, *, note: bool = True) -> list[Job]:
    """Jobs with pending pods whose queue exists and that have enough pods to start;
    the others (and jobs whose only waiting pods are held back as invalid) get a reason when
    ``note``."""
    state = session.state
    jobs = []
    for key in sorted(state.pending_jobs.union(state.held_jobs)):
        job = state.jobs[key]
        if job.kueue_admitted:
            continue  # admitted by Kueue: placed by engine/kueue/place.py
        blocker = _blocker(session, job)
        if blocker is None:
            jobs.append(job)
        elif note:
            session.note(job, blocker)
    return jobs


def _blocker(session: Session, job: Job) -> Reason | None:
    """Why a pending job cannot be tried at all, or None."""
    if not session.chain(job):
        return Reason("QueueDoesNotExist", _unusable_queue(session, job.queue))
    children = session.queues[job.queue].children
    if children:
        return Reason(
            "QueueDoesNotExist",
            f'queue "{job.queue}" is a parent queue; jobs run only in leaf queues. '
            f"Set the kai.scheduler/queue label to one of: {', '.join(children)}",
        )
    if not job.ready_for_scheduling():
        message = (
            f"waiting for pods: the gang needs {job.min_member} (minMember), {job.alive} exist"
        )
        held = sorted((t for t in job.tasks.values() if t.problem), key=lambda t: t.name)
        if held:
            message += f"; pod {held[0].pod.meta.key} cannot be scheduled as written: "
            message += held[0].problem + (f" (and {len(held) - 1} more)" if len(held) > 1 else "")
        return Reason(NOT_READY, message)
    return None


def _unusable_queue(session: Session, queue: str) -> str:
    """Why a queue cannot take jobs: it, or an ancestor, is missing or unreadable, or the
    parents form a cycle."""
    queues, problems = session.state.queues, session.state.problems
    chain: list[str] = []
    name = queue
    while name in queues and name not in chain:
        chain.append(name)
        name = queues[name].parent
    if name in chain:
        cycle = " -> ".join([*chain[chain.index(name) :], name])
        return (
            f'queue "{queue}" cannot be used: its parents form a cycle ({cycle}). '
            "Fix spec.parentQueue so the queues form a tree"
        )
    problem = problems.get(("Queue", "", name))
    whose = f'queue "{name}"' + (f' (an ancestor of "{queue}")' if chain else "")
    if problem is not None:
        return f"{whose} cannot be used as written: {problem.message}"
    if not chain:
        return (
            f'queue "{queue}" does not exist. Create it, or set the kai.scheduler/queue '
            "label to an existing queue"
        )
    return f'queue "{queue}" has a missing ancestor "{name}". Create queue "{name}"'


def tasks_to_allocate(
    job: Job, evicted: Collection[Task] = (), *, pending_too: bool = True
) -> list[Task]:
    """The pods to try now: the gang up to every minimum, or one extra pod. ``evicted`` are
    pods a victim search has just evicted, which may be placed again like pending ones (KAI's
    ShouldAllocate with a virtual Releasing status); ``pending_too=False`` leaves out the
    pending ones."""
    pending = sorted(
        (
            t
            for t in job.tasks.values()
            if (pending_too and t.status == TaskStatus.PENDING) or t in evicted
        ),
        key=lambda t: t.order_key,
    )
    if not pending:
        return []
    if job.gang_satisfied():
        return pending[:1]
    chosen: list[Task] = []
    taken: set[int] = set()
    for group in sorted(job.subgroups.values(), key=lambda g: g.name):
        members = _subtree(job, group.name)
        short = group.min_member - group.active - sum(1 for t in chosen if t.subgroup in members)
        for task in pending:
            if short <= 0:
                break
            if id(task) not in taken and task.subgroup in members:
                chosen.append(task)
                taken.add(id(task))
                short -= 1
    short = job.min_member - job.active - len(chosen)
    for task in pending:
        if short <= 0:
            break
        if id(task) not in taken:
            chosen.append(task)
            taken.add(id(task))
            short -= 1
    return sorted(chosen, key=lambda t: t.order_key)


def _subtree(job: Job, name: str) -> set[str]:
    """A subgroup's name and the names of its descendants."""
    names = {name}
    changed = True
    while changed:
        changed = False
        for group in job.subgroups.values():
            if group.parent in names and group.name not in names:
                names.add(group.name)
                changed = True
    return names


def allocate_job(
    session: Session, job: Job, tasks: list[Task], no_fit: dict[FitKey, str] | None = None
) -> bool:
    """Try to place ``tasks`` of ``job`` atomically; True if committed (allocated or pipelined).
    ``no_fit`` remembers task shapes that found no node, to skip them while nodes only fill."""
    no_fit = {} if no_fit is None else no_fit
    request = Resources.ZERO
    for task in tasks:
        request += task.request
    reason = over_capacity(job, session.chain(job), request)
    if reason is not None:
        session.note(job, reason)
        return False
    statement = session.statement()
    failed = place_gang(
        session, statement, tasks, job.gang_satisfied(), lambda t: fit_key(t) in no_fit
    )
    if failed is not None:
        task = tasks[failed]
        key = fit_key(task)
        message = no_fit.get(key) or explain(session.state.nodes, task)
        if failed == 0:  # later tasks saw nodes held by this gang's earlier pods
            no_fit[key] = message
        where = f"pod {task.pod.meta.key}"
        if len(tasks) > 1:
            where += f" ({failed + 1} of {len(tasks)} the gang needs together)"
        # KAI's code for "resources were not found" (podgroup_info.PodSchedulingErrors, written
        # to the PodGroup's scheduling condition by actions/common/allocate.go)
        session.note(job, Reason("PodSchedulingErrors", f"{where}: {message}"))
        return False
    statement.commit()
    session.reasons.pop(job.key, None)
    return True
