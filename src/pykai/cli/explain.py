"""``pykai explain``'s answers, from any reader (the embedded store or a live cluster): the
engine's state is built from the objects and the engine's own code answers (engine/whatif.py,
engine/positions.py); events say why a pod is on its node and who evicted it.

Each answer is a plain mapping (what ``-o json|yaml`` prints) and ``text`` renders it."""

from __future__ import annotations

import math
from typing import Any

from pykai.cli.kueue_explain import explain_kueue, kueue_text, managed_job, managed_owner
from pykai.cli.related import Reader, podgroup_pods
from pykai.engine.config import config_from_mapping
from pykai.engine.positions import recorded_reasons
from pykai.engine.session import Session
from pykai.engine.settings import SchedulerConfig
from pykai.engine.state import STATE_KINDS
from pykai.engine.whatif import (
    JobExplanation,
    QueueFigures,
    Trial,
    explain_job,
)
from pykai.model import constants as c
from pykai.model.meta import Obj
from pykai.model.positions import Position
from pykai.model.resources import Resources, format_cpu, format_gpu, format_memory

Answer = dict[str, Any]


def config_of(reader: Reader) -> SchedulerConfig:
    """The scheduler's configuration: the SchedulingShard ``default``, else the defaults."""
    shard = reader.get("SchedulingShard", "default")
    if shard is None:
        return SchedulerConfig()
    try:
        return config_from_mapping(shard)
    except ValueError:
        return SchedulerConfig()  # one the scheduler cannot read either: it runs on defaults


def _objects(reader: Reader) -> list[Obj]:
    return [obj for kind in STATE_KINDS for obj in reader.list(kind)]


def amounts(value: Resources) -> dict[str, str]:
    """Engine units as people read them (``unlimited`` for no bound)."""
    return {
        "cpu": "unlimited" if math.isinf(value.cpu) else format_cpu(value.cpu),
        "memory": "unlimited" if math.isinf(value.memory) else format_memory(value.memory),
        "gpu": format_gpu(value.gpu),
    }


def _position(position: Position | None) -> Answer | None:
    if position is None:
        return None
    return {
        "inQueue": position.in_queue,
        "inCycle": position.in_cycle,
        "queue": position.queue,
        "priority": position.priority,
    }


def _trial(trial: Trial) -> Answer:
    return {
        "change": trial.change or "none",
        "runs": trial.runs,
        "bound": trial.bound,
        "evictions": list(trial.evictions),
        "reasons": [{"reason": r.reason, "message": r.message} for r in trial.reasons],
    }


def _queue(figures: QueueFigures) -> Answer:
    return {
        "name": figures.name,
        "deserved": amounts(figures.deserved),
        "fairShare": amounts(figures.fair_share),
        "limit": amounts(figures.limit),
        "allocated": amounts(figures.allocated),
    }


def _job(found: JobExplanation, podgroup: Obj) -> Answer:
    return {
        "podGroup": found.job,
        "queue": found.queue,
        "state": "pending",
        "pendingPods": found.pending_pods,
        "request": amounts(found.request),
        "rule": found.rule,
        "verdict": found.verdict,
        "position": _position(found.position),
        "lastReasons": [
            {"reason": r.reason, "message": r.message} for r in recorded_reasons(podgroup)
        ],
        "asItIs": _trial(found.now),
        "onAnEmptyCluster": _trial(found.ever),
        "wouldRunWith": [_trial(t) for t in found.alternatives],
        "queues": [_queue(q) for q in found.queues],
    }


def _events(reader: Reader, kind: str, obj: Obj, reason: str) -> list[str]:
    meta = obj["metadata"]
    found = reader.events_for(kind, meta["name"], meta.get("namespace") or "")
    return [str(e.get("message", "")) for e in found if e.get("reason") == reason]


def _placed(reader: Reader, pod: Obj) -> Answer:
    """A pod that is on a node: where, and how the scheduler chose it; or who evicted it."""
    meta = pod["metadata"]
    evicted = _events(reader, "Pod", pod, "Evict")
    answer: Answer = {
        "pod": f"{meta.get('namespace') or 'default'}/{meta['name']}",
        "node": (pod.get("spec") or {}).get("nodeName") or "",
        "state": "evicted" if evicted or meta.get("deletionTimestamp") else "placed",
        "scheduled": _events(reader, "Pod", pod, "Scheduled")[-1:],
        "evicted": evicted,
    }
    return answer


def explain_podgroup(reader: Reader, podgroup: Obj) -> Answer:
    """A PodGroup: why it waits and what would let it run, or where its pods run; for the
    pods of a job Kueue manages, where its Workload stands in Kueue too."""
    meta = podgroup["metadata"]
    key = f"{meta.get('namespace') or 'default'}/{meta['name']}"
    pods = podgroup_pods(reader, podgroup)
    found = explain_job(_objects(reader), key, config_of(reader), reader.now())
    if found is not None:
        return _job(found, podgroup) | _kueue_of(reader, pods[0] if pods else podgroup)
    return {
        "podGroup": key,
        "queue": (podgroup.get("spec") or {}).get("queue", ""),
        "state": "not pending",
        "evicted": _events(reader, "PodGroup", podgroup, "Evict"),
        "pods": [_placed(reader, p) for p in pods],
    } | _kueue_of(reader, pods[0] if pods else podgroup)


def explain_managed(reader: Reader, obj: Obj) -> Answer:
    """A job Kueue may manage (RayJob, RayCluster, Job) or a Workload: where the Workload
    stands in Kueue and why; for a job Kueue leaves alone, that it does."""
    target = obj
    if obj.get("kind") == "Workload":
        namespace = obj["metadata"].get("namespace") or "default"
        target = managed_owner(reader, obj, namespace) or obj
    answer = _kueue_of(reader, target)
    if answer or target.get("kind") == "Workload":
        return answer or {"kueue": explain_kueue(reader, obj, obj)}
    meta = obj["metadata"]
    return {
        "kueue": {
            "job": f"{obj['kind']} {meta.get('namespace') or 'default'}/{meta['name']}",
            "localQueue": "",
            "state": "not managed",
            "rule": "not managed by Kueue",
            "verdict": "it names no LocalQueue (label kueue.x-k8s.io/queue-name): Kueue "
            "leaves it alone; pykai schedules its pods (explain them one by one)",
        }
    }


def _kueue_of(reader: Reader, obj: Obj) -> Answer:
    """``{"kueue": ...}`` for an object of a job Kueue manages, else nothing."""
    found = managed_job(reader, obj)
    return {} if found is None else {"kueue": explain_kueue(reader, *found)}


def explain_pod(reader: Reader, pod: Obj) -> Answer:
    """A pod: its PodGroup's explanation while it waits, else where it runs and why, or who
    evicted it; for a pod of a job Kueue manages, where its Workload stands in Kueue too."""
    meta = pod["metadata"]
    spec = pod.get("spec") or {}
    if spec.get("nodeName") or meta.get("deletionTimestamp"):
        return _placed(reader, pod) | _kueue_of(reader, pod)
    namespace = meta.get("namespace") or "default"
    group_name = (meta.get("annotations") or {}).get(c.POD_GROUP_ANNOTATION)
    group = reader.get("PodGroup", group_name, namespace) if group_name else None
    if group is None:
        return {
            "pod": f"{namespace}/{meta['name']}",
            "state": "pending",
            "rule": "not grouped",
            "verdict": "its PodGroup does not exist yet: the pod-grouper makes it "
            f"(schedulerName must be {c.SCHEDULER_NAME}; the queue comes from the "
            f"{c.QUEUE_LABEL} label)",
        } | _kueue_of(reader, pod)
    return {"pod": f"{namespace}/{meta['name']}", **explain_podgroup(reader, group)}


def explain_queue(reader: Reader, queue: Obj) -> Answer:
    """A queue: its figures this cycle and its pending PodGroups in the scheduler's order."""
    from pykai.cli.pending import engine_state, positions_of

    name = queue["metadata"]["name"]
    state = engine_state(reader)
    session = Session.open(state, config_of(reader), reader.now())
    info = session.queues.get(name)
    answer: Answer = {"queue": name, "parent": (queue.get("spec") or {}).get("parentQueue", "")}
    if info is None:
        answer["problem"] = "the scheduler cannot use it (an ancestor is missing or unreadable)"
    else:
        answer["children"] = list(info.children)
        answer.update(
            {
                "deserved": amounts(info.deserved),
                "fairShare": amounts(info.fair_share),
                "limit": amounts(info.limit),
                "allocated": amounts(info.usage.allocated),
                "requested": amounts(info.usage.requested),
            }
        )
    answer["pending"] = [
        {"podGroup": p.job, "reason": p.reason, **(_position(p) or {})}
        for p in positions_of(reader, state).under(name)
    ]
    return answer


# ---- text ---------------------------------------------------------------------------------


def text(answer: Answer) -> str:
    """An answer for people."""
    kueue = kueue_text(answer["kueue"]) if "kueue" in answer else []
    if answer.keys() == {"kueue"}:
        return "\n".join(kueue)
    if "pending" in answer and "queue" in answer and "podGroup" not in answer:
        return _queue_text(answer)
    if answer.get("state") == "pending":
        return "\n".join([_pending_text(answer), *kueue])
    if "pods" not in answer:
        return "\n".join([*_placed_text(answer), *kueue])
    lines = [_head(answer)]
    for pod in answer["pods"]:
        lines += _placed_text(pod)
    lines += [f"Evicted: {message}" for message in answer["evicted"]]
    return "\n".join([*lines, *kueue])


def _head(answer: Answer) -> str:
    what = f"PodGroup {answer['podGroup']}" if "podGroup" in answer else f"Pod {answer['pod']}"
    if "pod" in answer and "podGroup" in answer:
        what = f"Pod {answer['pod']} (PodGroup {answer['podGroup']})"
    queue = f" in queue {answer['queue']}" if answer.get("queue") else ""
    return f"{what}{queue}: {answer['state']}"


def _placed_text(pod: Answer) -> list[str]:
    lines = [f"Pod {pod['pod']}: {pod['state']}, on node {pod['node'] or '<none>'}"]
    lines += [f"  Scheduled: {message}" for message in pod["scheduled"]]
    lines += [f"  Evicted: {message}" for message in pod["evicted"]]
    if not pod["scheduled"] and not pod["evicted"] and pod["node"]:
        lines.append("  (no Scheduled event: bound by another scheduler, or before events)")
    return lines


def _pending_text(answer: Answer) -> str:
    lines = [_head(answer)]
    if "request" in answer:
        asks = ", ".join(f"{k} {v}" for k, v in answer["request"].items())
        lines.append(f"Asks:        {asks} ({answer['pendingPods']} pod(s) pending)")
    lines.append(f"Verdict:     {answer['verdict']}")
    lines.append(f"Rule:        {answer['rule']}")
    position = answer.get("position")
    if position is not None and position["inQueue"] is not None:
        lines.append(
            f"Position:    {position['inQueue'] + 1} in queue {position['queue']}, "
            f"{position['inCycle'] + 1} in the order the scheduler tries jobs"
        )
    for reason in answer.get("lastReasons", []):
        lines.append(f"Last cycle:  {reason['reason']}: {reason['message']}")
    if answer.get("queues"):
        lines.append("Queues (gpu):")
        rows = [
            f"  {q['name']}: deserved {q['deserved']['gpu']}, fair share {q['fairShare']['gpu']}, "
            f"limit {q['limit']['gpu']}, allocated {q['allocated']['gpu']}"
            for q in answer["queues"]
        ]
        lines += rows
    evictions = answer.get("asItIs", {}).get("evictions", [])
    lines += [f"Would evict: {e}" for e in evictions]
    alternatives = answer.get("wouldRunWith", [])
    if alternatives:
        lines.append("Would run now with:")
        for trial in alternatives:
            evicting = f" (evicting {len(trial['evictions'])} pod(s))" if trial["evictions"] else ""
            lines.append(f"  {trial['change']}{evicting}")
    elif "asItIs" in answer and answer["onAnEmptyCluster"]["runs"] and not answer["asItIs"]["runs"]:
        lines.append("Would run now with: no smaller gang, fewer GPUs or other queue")
    return "\n".join(lines)


def _queue_text(answer: Answer) -> str:
    lines = [
        f"Queue {answer['queue']}" + (f" (parent {answer['parent']})" if answer["parent"] else "")
    ]
    if "problem" in answer:
        lines.append(f"Problem:     {answer['problem']}")
    else:
        for label, key in (
            ("Deserved", "deserved"),
            ("Fair share", "fairShare"),
            ("Limit", "limit"),
            ("Allocated", "allocated"),
            ("Requested", "requested"),
        ):
            values = ", ".join(f"{k} {v}" for k, v in answer[key].items())
            lines.append(f"{label + ':':<12} {values}")
    if answer["pending"]:
        lines.append("Pending PodGroups (in the order the scheduler tries them):")
        for entry in answer["pending"]:
            if entry.get("inCycle") is None:
                place = "not tried"
            else:
                place = f"#{entry['inCycle'] + 1} (#{entry['inQueue'] + 1} in {entry['queue']})"
            reason = f": {entry['reason']}" if entry["reason"] else ""
            lines.append(f"  {place} {entry['podGroup']}{reason}")
    else:
        lines.append("Pending PodGroups: <none>")
    return "\n".join(lines)
