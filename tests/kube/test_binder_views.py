"""The binder's pure parts: backoff arithmetic, how a pod is shown to the engine while its
BindRequest is pending or its bind backs off, and which GPU groups are in use."""

from __future__ import annotations

from pykai.engine.decisions import Bind
from pykai.kube.binder import (
    BACKOFF_GATE,
    BindBackoff,
    bind_request,
    bound_view,
    groups_in_use,
    held_view,
    pending_request,
    requested_for,
)
from pykai.model import builders


def pod_with_uid(name: str, uid: str) -> dict:  # type: ignore[type-arg]
    pod = builders.pod(name, annotations={"gpu-fraction": "0.5"})
    pod["metadata"]["uid"] = uid
    return pod


def test_backoff_doubles_up_to_the_cap_and_expires() -> None:
    backoff = BindBackoff(base=1.0, cap=5.0)
    assert [backoff.fail("u", 100.0) for _ in range(4)] == [1.0, 2.0, 4.0, 5.0]
    assert backoff.held("u", 104.9) and not backoff.held("u", 105.0)
    assert backoff.expired(104.0) == [] and backoff.expired(105.0) == ["u"]
    backoff.forget("u")
    assert backoff.fail("u", 0.0) == 1.0  # a bound pod starts over


def test_a_pending_request_shows_the_pod_bound_to_its_node_and_groups() -> None:
    pod = pod_with_uid("p", "uid-1")
    request = bind_request(Bind("default", "p", "uid-1", "n1", ("g1", "g2"), 0.5))
    assert pending_request(request) and requested_for(request, pod)
    view = bound_view(pod, request)
    assert view["spec"]["nodeName"] == "n1"
    assert view["metadata"]["labels"]["runai-gpu-group"] == "g1"
    assert view["metadata"]["labels"]["runai-gpu-group/g2"] == "g2"
    assert "nodeName" not in pod["spec"]  # the cached pod itself is untouched
    request["status"] = {"phase": "Failed"}
    assert not pending_request(request)
    assert not requested_for(request, pod_with_uid("p", "uid-2"))  # a newer pod, same name


def test_a_held_pod_is_gated_and_groups_in_use_count_only_bound_pods() -> None:
    pod = pod_with_uid("p", "u")
    assert held_view(pod)["spec"]["schedulingGates"] == [{"name": BACKOFF_GATE}]
    bound = pod_with_uid("b", "v")
    bound["spec"]["nodeName"] = "n1"
    bound["metadata"]["labels"]["runai-gpu-group"] = "g1"
    labelled_but_pending = pod_with_uid("q", "w")
    labelled_but_pending["metadata"]["labels"]["runai-gpu-group"] = "g9"
    asked = bind_request(Bind("default", "r", "x", "n2", ("g2",), 0.5))
    assert groups_in_use([bound, labelled_but_pending], [asked]) == {"g1", "g2"}
