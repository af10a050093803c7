"""The binder's pure parts: backoff arithmetic, how a pod is shown to the engine while its
BindRequest is pending or its bind backs off, and which GPU groups are in use."""

from __future__ import annotations

import re
from typing import cast

import pytest

from pykai.controllers.faults import Isolation
from pykai.engine.decisions import Bind
from pykai.kube.api import KubeApi
from pykai.kube.binder import Binder
from pykai.kube.binding import (
    BACKOFF_GATE,
    BindBackoff,
    bind_request,
    bound_view,
    groups_in_use,
    held_view,
    pending_request,
    read_bind_request,
    requested_for,
)
from pykai.kube.events import EventRecorder
from pykai.model import builders
from pykai.model.meta import Obj
from tests.inline import InlineExecutor


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
    view = bound_view(pod, read_bind_request(request))
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
    pods = {("default", p["metadata"]["name"]): p for p in (bound, labelled_but_pending)}
    assert groups_in_use(pods, [asked]) == {"g1", "g2"}


def test_a_succeeded_request_holds_its_groups_while_its_pod_lives() -> None:
    """The pod's bind may not have reached the cache yet: its reservation must stay."""
    pod = pod_with_uid("s", "uid-s")  # no nodeName in the cache yet
    done = bind_request(Bind("default", "s", "uid-s", "n1", ("g3",), 0.5))
    done["status"] = {"phase": "Succeeded"}
    pods = {("default", "s"): pod}
    assert groups_in_use(pods, [done]) == {"g3"}
    pod["status"] = {"phase": "Succeeded"}  # it ran to completion
    assert groups_in_use(pods, [done]) == set()
    assert groups_in_use({}, [done]) == set()  # gone
    replaced = {("default", "s"): pod_with_uid("s", "uid-newer")}
    assert groups_in_use(replaced, [done]) == set()
    done["status"] = {"phase": "Failed"}
    assert groups_in_use({("default", "s"): pod_with_uid("s", "uid-s")}, [done]) == set()


@pytest.mark.parametrize(
    ("spec", "field"),
    [
        ("not an object", "spec"),
        ({"podName": "p"}, "spec.selectedNode"),
        ({"selectedNode": "n1", "podName": 7}, "spec.podName"),
        ({"selectedNode": "n1", "selectedGPUGroups": "g1"}, "spec.selectedGPUGroups"),
        ({"selectedNode": "n1", "selectedGPUGroups": [{"g": 1}]}, "spec.selectedGPUGroups"),
        ({"selectedNode": "n1", "backoffLimit": "three"}, "spec.backoffLimit"),
        ({"selectedNode": "n1", "backoffLimit": -1}, "spec.backoffLimit"),
    ],
)
def test_a_bind_request_made_by_hand_is_read_with_its_field_named(spec: object, field: str) -> None:
    request = {"metadata": {"name": "p", "namespace": "default"}, "spec": spec}
    with pytest.raises(ValueError, match=re.escape(field)):
        read_bind_request(request)


def test_the_binder_reports_a_request_it_cannot_read_and_carries_out_the_others() -> None:
    reported: list[str] = []
    isolation = Isolation("the binder", lambda obj, problem: reported.append(problem.message))
    carried: list[str] = []

    class Recording(Binder):
        def _carry_out(self, request: Obj, *_: object) -> None:
            carried.append(request["metadata"]["name"])

    good = bind_request(Bind("default", "good", "uid-g", "n1", ("g1",), 0.5))
    good["metadata"]["uid"] = "r-good"
    bad = {"metadata": {"name": "bad", "namespace": "default", "uid": "r-bad"}, "spec": []}
    pods = {("default", name): pod_with_uid(name, f"uid-{name[0]}") for name in ("good", "bad")}
    binder = Recording(cast(KubeApi, None), InlineExecutor(), cast(EventRecorder, None))
    binder.reconcile([bad, good], pods, set(), isolation)
    assert carried == ["good"]
    assert len(reported) == 1 and "spec: must be an object" in reported[0]
