"""The object cache of ``pykai run`` (kube/cache.py) against late answers: the answer to one of
pykai's own writes never brings back an object the informers reported deleted, nor replaces a
newer version (a phantom pod would hold its node's GPUs for good)."""

from __future__ import annotations

import threading
import time
from typing import cast

import pytest

from pykai.engine.decisions import Bind
from pykai.engine.jobs import HOLDS_NODE
from pykai.kube.api import KubeApi
from pykai.kube.binding import bind_request
from pykai.kube.cache import WRITTEN
from pykai.kube.host import KubeHost
from pykai.kube.informer import Change
from pykai.model import builders
from pykai.model.meta import Obj
from tests.inline import InlineExecutor


def version(obj: Obj, resource_version: int) -> Obj:
    return {**obj, "metadata": {**obj["metadata"], "resourceVersion": str(resource_version)}}


def host_with(pod: Obj) -> KubeHost:
    host = KubeHost(cast(KubeApi, None), InlineExecutor())
    host.apply(Change("Node", "SYNC", None, (builders.node("n1"),)))
    host.apply(Change("Pod", "SYNC", None, (pod,)))
    return host


def bound_pod() -> Obj:
    pod = builders.pod("p", gpus=8, node_name="n1", uid="uid-p")
    return version(pod, 5)


def test_a_late_answer_never_brings_a_deleted_pod_back() -> None:
    pod = bound_pod()
    host = host_with(pod)
    host.apply(Change("Pod", "DELETED", version(pod, 7)))
    host.apply(Change("Pod", WRITTEN, version(pod, 6)))  # the kubelet's patch, answered late
    assert host.get("Pod", "p", "default") is None
    assert host.state.task_by_key("default", "p") is None


def test_a_late_answer_never_replaces_a_newer_version() -> None:
    pod = bound_pod()
    host = host_with(pod)
    newer = version({**pod, "status": {"phase": "Running"}}, 9)
    host.apply(Change("Pod", "MODIFIED", newer))
    host.apply(Change("Pod", WRITTEN, version(pod, 8)))
    assert host.get("Pod", "p", "default") == newer
    host.apply(Change("Pod", WRITTEN, version(pod, 10)))  # a newer answer is taken
    assert host.get("Pod", "p", "default") == version(pod, 10)


def test_waiting_for_a_change_ends_when_one_comes() -> None:
    """Before the first cycle the loop waits for the informers' lists, not for its period."""
    host = KubeHost(cast(KubeApi, None), InlineExecutor())
    listed = Change("Node", "SYNC", None, (builders.node("n1"),))
    timer = threading.Timer(0.05, host.changes.put, (listed,))
    timer.start()
    started = time.monotonic()
    host.wait_for_change(120)
    assert "Node" in host.synced
    assert time.monotonic() - started < 60  # woken by the change, not by the timeout
    host.wait_for_change(0.01)  # nothing queued: returns after the timeout


@pytest.mark.parametrize(
    ("phase", "holds_node"), [("", True), ("Succeeded", True), ("Failed", False)]
)
def test_a_pod_counts_as_bound_until_its_bind_request_is_given_up(
    phase: str, holds_node: bool
) -> None:
    """The binder marks a BindRequest Succeeded after the pod's bind, but the two arrive on
    separate watches: until the pod's own event says it is bound, its Succeeded request still
    shows it on the selected node and GPU group (else the engine places it, and its group,
    twice)."""
    pod = builders.pod("half", uid="uid-half", annotations={"gpu-fraction": "0.5"})
    host = host_with(version(pod, 3))
    request = bind_request(Bind("default", "half", "uid-half", "n1", ("g1",), 0.5))
    request["metadata"]["uid"] = "uid-request"
    if phase:
        request["status"] = {"phase": phase}
    host.apply(Change("BindRequest", "SYNC", None, (request,)))
    task = host.state.task_by_key("default", "half")
    assert task is not None
    assert (task.status in HOLDS_NODE) is holds_node
    assert (task.node == "n1") is holds_node


def test_what_an_owner_owns_follows_its_objects_references() -> None:
    """``owned`` from the owner index: an object counts for the owners its latest version
    names, and not once it is gone."""
    job = {"kind": "Job", "metadata": {"name": "j", "namespace": "default", "uid": "uid-j"}}
    other = {"kind": "Job", "metadata": {"name": "k", "namespace": "default", "uid": "uid-k"}}

    def pod(name: str, owner: str) -> Obj:
        made = builders.pod(name, uid=f"uid-{name}")
        made["metadata"]["ownerReferences"] = [
            {"kind": "Job", "name": owner, "uid": f"uid-{owner}"}
        ]
        return made

    host = host_with(pod("a", "j"))
    host.apply(Change("Pod", "ADDED", pod("b", "j")))
    host.apply(Change("Pod", "ADDED", builders.pod("c", uid="uid-c")))  # owned by no one
    assert [p["metadata"]["name"] for p in host.owned(job, "Pod")] == ["a", "b"]
    host.apply(Change("Pod", "MODIFIED", pod("b", "k")))  # its owner changed
    assert [p["metadata"]["name"] for p in host.owned(job, "Pod")] == ["a"]
    assert [p["metadata"]["name"] for p in host.owned(other, "Pod")] == ["b"]
    host.apply(Change("Pod", "DELETED", pod("a", "j")))
    assert host.owned(job, "Pod") == [] and host.owned(job, "Job") == []
    host.apply(Change("Pod", "SYNC", None, (pod("d", "j"),)))  # a relist: only what it holds
    assert [p["metadata"]["name"] for p in host.owned(job, "Pod")] == ["d"]
    assert host.owned(other, "Pod") == []
