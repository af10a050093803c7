"""Kind names as users type them and as kubectl prints them."""

from __future__ import annotations

import pytest

from pykai.cli.kinds import UnknownKindError, display_name, info_for, resolve, resolve_target


@pytest.mark.parametrize(
    ("typed", "kind"),
    [
        *((name, "Pod") for name in ("pods", "pod", "po", "Pods", "POD")),
        *((name, "Node") for name in ("nodes", "node", "no")),
        *((name, "Queue") for name in ("queues", "queue", "q", "queues.scheduling.run.ai")),
        *((name, "PodGroup") for name in ("podgroups", "podgroup", "pg")),
        *((name, "PriorityClass") for name in ("priorityclasses", "priorityclass", "pc")),
        *((name, "Namespace") for name in ("namespaces", "namespace", "ns")),
        *((name, "Event") for name in ("events", "event", "ev")),
        *((name, "Deployment") for name in ("deployments", "deployment", "deploy")),
        *((name, "ReplicaSet") for name in ("replicasets", "replicaset", "rs")),
        ("jobs", "Job"),
        ("rayclusters", "RayCluster"),
        ("rayjobs", "RayJob"),
        ("rayservices", "RayService"),
    ],
)
def test_aliases(typed: str, kind: str) -> None:
    assert resolve(typed).kind == kind


def test_unknown_kind_is_kubectls_error() -> None:
    with pytest.raises(UnknownKindError) as caught:
        resolve("podz")
    assert str(caught.value) == 'the server doesn\'t have a resource type "podz"'


def test_kind_slash_name() -> None:
    info, name = resolve_target("pod/x", None)
    assert (info.kind, name) == ("Pod", "x")
    assert resolve_target("pods", None)[1] is None


def test_names_in_output_and_scope() -> None:
    assert display_name("Queue") == "queue.scheduling.run.ai"
    assert display_name("Pod") == "pod"
    assert display_name("Widget", "example.com/v1") == "widget.example.com"
    assert resolve("q").resource == "queues.scheduling.run.ai"
    assert not resolve("queues").namespaced and resolve("pg").namespaced
    assert info_for("Widget").plural == "widgets"
