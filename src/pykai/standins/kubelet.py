"""A stand-in kubelet (as kwok is one): pods bound to a node that exists start Running; a running
pod with a ``pykai.io/duration`` annotation succeeds once it has run that long on the cluster's
clock (an unreadable duration: it runs on); and a pod being deleted is removed once its grace
period is over (its deletionTimestamp, which the deleter set to that moment) unless finalizers
hold it."""

from __future__ import annotations

from pykai.controllers.host import Host
from pykai.engine.jobs import TaskStatus
from pykai.model import constants as c
from pykai.model.conditions import Condition, with_conditions
from pykai.model.duration import parse_duration
from pykai.model.meta import Obj, format_time, mapping, parse_time

_CONDITIONS = ("PodScheduled", "Initialized", "ContainersReady", "Ready")
_PLACED = frozenset({TaskStatus.BOUND, TaskStatus.RELEASING})  # to start, or to end


def run_pods(host: Host) -> None:
    """Start the bound pods that wait, complete those that ran their duration, remove the
    terminated ones."""
    now = host.now()
    starting, ending, done = [], [], []
    running, placed = TaskStatus.RUNNING, _PLACED  # every task, every round: kept cheap
    for task in list(host.state.tasks.values()):
        status = task.status
        if status is running:
            if c.DURATION_ANNOTATION in task.pod.meta.annotations:
                pod = host.get("Pod", task.name, task.namespace)
                if pod is not None and _ran_its_duration(pod, now):
                    done.append(pod)
            continue
        if status not in placed:
            continue
        pod = host.get("Pod", task.name, task.namespace)
        if pod is None or not mapping(pod.get("spec")).get("nodeName"):
            continue  # the engine counts it bound, the bind is not done yet (a BindRequest)
        if pod["metadata"].get("deletionTimestamp"):
            if terminated(pod, now):
                ending.append(pod)
        elif mapping(pod.get("status")).get("phase", "Pending") == "Pending" and host.get(
            "Node", pod["spec"]["nodeName"]
        ):
            starting.append(pod)  # a pod on a node that does not exist stays Pending
    stamp = format_time(now)
    host.each("the kubelet", starting, lambda pod: _start(host, pod, stamp))
    host.each("the kubelet", ending, lambda pod: host.delete(pod, grace=0))
    host.each("the kubelet", done, lambda pod: _succeed(host, pod))


def _ran_its_duration(pod: Obj, now: float) -> bool:
    """True once a running pod has run for its ``pykai.io/duration``."""
    try:
        duration = parse_duration(pod["metadata"]["annotations"][c.DURATION_ANNOTATION])
        started = parse_time(mapping(pod.get("status")).get("startTime"))
    except (KeyError, TypeError, ValueError):
        return False
    return started + duration <= now


def _succeed(host: Host, pod: Obj) -> None:
    conditions = with_conditions(pod, host.now(), Condition("Ready", "False"))
    host.patch(pod, {"status": {"phase": "Succeeded", "conditions": conditions}}, status=True)


def terminated(pod: Obj, now: float) -> bool:
    """True once a pod being deleted is past its grace period and no finalizer holds it."""
    meta = pod["metadata"]
    try:
        ends = parse_time(meta["deletionTimestamp"])
    except (TypeError, ValueError):
        ends = now  # an unreadable time: the grace is taken as over
    return ends <= now and not meta.get("finalizers")


def _start(host: Host, pod: Obj, stamp: str) -> None:
    conditions = [
        {"type": kind, "status": "True", "lastTransitionTime": stamp} for kind in _CONDITIONS
    ]
    status = {"phase": "Running", "startTime": stamp, "conditions": conditions}
    host.patch(pod, {"status": status}, status=True)
