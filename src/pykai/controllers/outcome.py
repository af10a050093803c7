"""Carrying out what a scheduling cycle decided: binds, evictions, and the PodGroup annotations
they ask for (last start, stale since), with KAI's events:

- a bind: ``Scheduled`` (Normal) on the pod, saying how the node was chosen (the scorer, its
  score, the runner-up node and its score), which is also logged; a refused bind:
  ``FailedBinding`` (Warning), the engine stops assuming it and the pod waits out its backoff;
- an eviction: ``Evict`` (Normal) on the pod and on its PodGroup, saying which action evicted it
  and for whom (pykai's finer reason leads the message: Preempted, Reclaimed, ...), in words
  and as the event's fields: ``action``, and ``related``, the preemptor's PodGroup;
- an action stopped by its search budget: ``SearchBudgetSpent`` (Warning) on each queue with
  pending jobs it did not try. On the queue, not the jobs: those jobs were not judged (no reason
  about them would be true), there may be thousands of them while the scheduler is already
  behind, and the budget is the operator's setting, whom a queue's events reach; a job's owner
  finds it on the job's queue.

Why a job stays pending (``Unschedulable``) is the status controller's (controllers/status.py):
it is said when the PodGroup's scheduling condition changes.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field

from pykai.controllers.events import NORMAL, WARNING, EventFacts, reference
from pykai.controllers.host import Host
from pykai.engine.decisions import Bind, CycleResult, Evict
from pykai.model import constants as c
from pykai.model.errors import PykaiError
from pykai.model.kinds import BY_KIND
from pykai.model.meta import Obj, format_time, mapping

log = logging.getLogger("pykai.outcome")
_EVICTION_MESSAGE = re.compile(r"^(?P<why>.*) \(action: (?P<action>[a-z]+)\)$", re.DOTALL)


class BindFailed(PykaiError, RuntimeError):
    """A bind the backend could not make (the message says why)."""


@dataclass
class _Binds:
    """What became of a cycle's binds (filled from the workers; acted on afterwards)."""

    done: list[tuple[Bind, Obj]] = field(default_factory=list)
    failed: list[tuple[Bind, Obj, str]] = field(default_factory=list)
    stale: list[Bind] = field(default_factory=list)  # the pod is gone, replaced or bound


def carry_out(host: Host, result: CycleResult, *, scheduled_events: bool = True) -> None:
    """Binds (in parallel where the host can; a bind still under way is answered in a later
    round, with those of earlier rounds answered since), then evictions, then PodGroup
    annotations."""
    binds = _Binds()
    for decision, error in host.bind_answers():  # binds of earlier rounds, answered since
        pod = host.get("Pod", decision.name, decision.namespace)
        if pod is None or pod["metadata"].get("uid") != decision.uid:
            binds.stale.append(decision)
        elif error:
            binds.failed.append((decision, pod, error))
        else:
            binds.done.append((decision, pod))

    def bind(decision: Bind) -> None:
        pod = host.get("Pod", decision.name, decision.namespace)
        if (
            pod is None
            or pod["metadata"].get("uid") != decision.uid
            or mapping(pod.get("spec")).get("nodeName")
        ):
            binds.stale.append(decision)
            return
        try:
            if not host.bind(decision):
                return  # under way: its answer comes in a later round
        except BindFailed as exc:
            binds.failed.append((decision, pod, str(exc)))
            return
        binds.done.append((decision, pod))

    host.each("the binder", [(_pod_ref(d), d) for d in result.binds], lambda item: bind(item[1]))
    for decision in binds.stale:
        host.state.forget_assumed(decision.namespace, decision.name)
    for decision, pod, error in binds.failed:
        host.state.forget_assumed(decision.namespace, decision.name)
        delay = host.hold(decision)
        retry = f", retrying in {delay:g}s" if delay else ""
        message = f"Failed to bind pod {decision.namespace}/{decision.name} to node "
        host.record(pod, "FailedBinding", f"{message}{decision.node}{retry}: {error}", WARNING)
    for decision, pod in binds.done:
        message = scheduled_message(decision)
        log.info("%s", message)
        if scheduled_events:
            host.record(pod, "Scheduled", message, NORMAL)
    host.each(
        "the evictor", list(_victims(host, result.evictions)), lambda item: _evict(host, *item)
    )
    annotate_podgroups(host, result)
    _budget_spent(host, result)


def _budget_spent(host: Host, result: CycleResult) -> None:
    """A warning on each queue whose pending jobs an action left untried (a repeat counts up)."""
    for action, queues in sorted(result.untried.items()):
        for name, count in sorted(queues.items()):
            queue = host.get("Queue", name)
            if queue is not None:
                message = (
                    f"{action} spent its search budget (actionSearchBudget) this cycle: "
                    f"{count} pending job(s) of this queue were not tried; they are tried "
                    f"again in the next cycle"
                )
                host.record(queue, "SearchBudgetSpent", message, WARNING)


def scheduled_message(decision: Bind) -> str:
    """What a ``Scheduled`` event says: KAI's words, then how the node was chosen."""
    message = f"Successfully assigned {decision.namespace}/{decision.name} to {decision.node}"
    if decision.choice is not None:
        message += f", chosen {decision.choice.describe()}"
    return message


def _pod_ref(decision: Bind) -> Obj:
    """The pod a decision is about, as far as a report needs it."""
    return {
        "kind": "Pod",
        "metadata": {"name": decision.name, "namespace": decision.namespace, "uid": decision.uid},
    }


def _victims(host: Host, evictions: list[Evict]) -> list[tuple[Obj, Evict]]:
    """(pod, eviction) for each eviction whose pod is still the one decided about."""
    found = []
    for eviction in evictions:
        pod = host.get("Pod", eviction.name, eviction.namespace)
        if pod is not None and pod["metadata"].get("uid") == eviction.uid:
            found.append((pod, eviction))
    return found


def eviction_message(eviction: Evict) -> str:
    """What an ``Evict`` event says: pykai's reason, then the KAI action."""
    return f"{eviction.message} (action: {eviction.action})"


def split_eviction_message(message: str) -> tuple[str, str]:
    """``eviction_message`` undone: the reason in words and the action of an ``Evict`` event's
    text (the text itself and "" when it names no action)."""
    matched = _EVICTION_MESSAGE.match(message)
    return (matched["why"], matched["action"]) if matched else (message, "")


def _evict(host: Host, pod: Obj, eviction: Evict) -> None:
    message = eviction_message(eviction)
    facts = EventFacts(eviction.action, _preemptor(host, eviction.preemptor))
    host.record(pod, "Evict", message, NORMAL, facts=facts)
    namespace, _, name = eviction.job.partition("/")
    group = host.get("PodGroup", name, namespace)
    if group is not None:
        host.record(group, "Evict", f"pod {eviction.name}: {message}", NORMAL, facts=facts)
    host.delete(pod, later=True)  # the engine holds the pod as releasing until the watch tells


def _preemptor(host: Host, key: str) -> Obj | None:
    """A reference to the preemptor's PodGroup (None for no preemptor)."""
    if not key:
        return None
    namespace, _, name = key.partition("/")
    group = host.get("PodGroup", name, namespace)
    if group is not None:
        return reference(group)
    podgroup = BY_KIND["PodGroup"]  # gone since the cycle: named as it was
    return {
        "apiVersion": podgroup.api_version,
        "kind": "PodGroup",
        "name": name,
        "namespace": namespace,
    }


def evictions_by_queue(host: Host, result: CycleResult) -> dict[str, int]:
    """How many pods each queue lost in this cycle (for the queues' status)."""
    counts: dict[str, int] = {}
    for eviction in result.evictions:
        job = host.state.jobs.get(eviction.job)
        if job is not None:
            counts[job.queue] = counts.get(job.queue, 0) + 1
    return counts


def annotate_podgroups(host: Host, result: CycleResult) -> None:
    """Last-start and stale-since times, kept on the PodGroup so that a restart remembers
    them (KAI's annotations); a value of None removes the annotation."""
    wanted: dict[str, dict[str, str | None]] = {
        key: {c.LAST_START_ANNOTATION: format_time(t)} for key, t in result.started.items()
    }
    for key, since in result.stale.items():
        wanted.setdefault(key, {})[c.STALE_ANNOTATION] = (
            None if since is None else format_time(since)
        )
    changes = []
    for key, values in sorted(wanted.items()):
        namespace, _, name = key.partition("/")
        group = host.get("PodGroup", name, namespace)
        if group is None:
            continue
        current = mapping(group["metadata"].get("annotations"))
        if any(current.get(k) != v for k, v in values.items()):
            changes.append((group, values))
    for group, values in changes:  # read back by no one this round: written in the background
        host.patch(group, {"metadata": {"annotations": values}}, later=True)
