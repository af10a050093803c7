"""Objects that got into the store anyway (written before a validation existed, by a controller,
or straight into the store as here) never stop the embedded cluster: each is reported once per
version with an ``InvalidObject`` Warning event and skipped, and whatever holds a node still
counts against it (issue 10: per-object fault isolation).

The bad objects are written with ``cluster.create`` / ``cluster.update``, which bypass apply's
validation as an object stored by another client would; the rest goes through ``apply``.
"""

from __future__ import annotations

from typing import Any

import pytest

from pykai.controllers.faults import INVALID
from pykai.embedded.cluster import EmbeddedCluster
from pykai.model import constants as c
from pykai.model.builders import node, pod, podgroup, queue
from pykai.model.meta import Obj
from pykai.model.names import MAX_NAME


@pytest.fixture
def cluster() -> EmbeddedCluster:
    """Two 8-GPU nodes and an unlimited queue ``team``."""
    cluster = EmbeddedCluster.open(None)
    cluster.apply([node("n1"), node("n2"), queue("team")])
    return cluster


def stored(cluster: EmbeddedCluster, obj: Obj) -> None:
    """Put ``obj`` in the store as another client would (no validation), then settle."""
    cluster.create(obj)
    cluster.settle()


def node_of(cluster: EmbeddedCluster, name: str) -> str:
    found = cluster.get("Pod", name, "default")
    assert found is not None, name
    return str(found["spec"].get("nodeName") or "")


def invalid_events(
    cluster: EmbeddedCluster, kind: str, name: str, namespace: str = ""
) -> list[Obj]:
    return [
        e
        for e in cluster.events_for(kind, name, namespace)
        if e["reason"] == INVALID and e["type"] == "Warning"
    ]


def reasons(cluster: EmbeddedCluster, name: str) -> list[dict[str, Any]]:
    group = cluster.get("PodGroup", name, "default")
    assert group is not None
    conditions = (group.get("status") or {}).get("schedulingConditions") or [{}]
    return list(conditions[0].get("reasons") or [])


def gang(name: str, gpus: int, **pod_args: Any) -> list[Obj]:
    return [podgroup(name, queue="team"), pod(name, group=name, gpus=gpus, **pod_args)]


def test_a_bound_pod_with_an_overflowing_gpu_request_fills_its_node(
    cluster: EmbeddedCluster,
) -> None:
    hog = pod("hog", group="hog", node_name="n1", phase="Running")
    hog["spec"]["containers"][0]["resources"] = {"limits": {c.GPU_RESOURCE: "1e400"}}
    cluster.apply([podgroup("hog", queue="team")])
    stored(cluster, hog)
    cluster.apply(gang("next", gpus=1))
    assert node_of(cluster, "next") == "n2"  # n1 is full: the hog counts
    [event] = invalid_events(cluster, "Pod", "hog", "default")
    assert "limits[nvidia.com/gpu]" in event["message"]


def test_a_pending_pod_with_an_unreadable_fraction_waits_and_says_why(
    cluster: EmbeddedCluster,
) -> None:
    cluster.apply([podgroup("bad", queue="team")])
    stored(cluster, pod("bad", group="bad", annotations={c.GPU_FRACTION_ANNOTATION: "abc"}))
    cluster.apply(gang("good", gpus=1))
    assert node_of(cluster, "bad") == ""
    assert node_of(cluster, "good") in ("n1", "n2")
    [event] = invalid_events(cluster, "Pod", "bad", "default")
    assert f"metadata.annotations[{c.GPU_FRACTION_ANNOTATION}]" in event["message"]
    [reason] = reasons(cluster, "bad")
    assert reason["reason"] == "NotReady"
    assert "pod default/bad cannot be scheduled as written" in reason["message"]
    held = cluster.get("Pod", "bad", "default")
    assert held is not None
    [condition] = [c for c in held["status"]["conditions"] if c["type"] == "PodScheduled"]
    assert condition["status"] == "False" and condition["reason"] == "Unschedulable"
    assert f"metadata.annotations[{c.GPU_FRACTION_ANNOTATION}]" in condition["message"]


def test_another_schedulers_pod_with_unreadable_annotations_still_holds_its_gpus(
    cluster: EmbeddedCluster,
) -> None:
    foreign = pod(
        "foreign",
        gpus=8,
        node_name="n1",
        scheduler="default-scheduler",
        phase="Running",
        annotations={c.GPU_FRACTION_ANNOTATION: "abc"},
    )
    stored(cluster, foreign)
    cluster.apply(gang("whole", gpus=8))
    assert node_of(cluster, "whole") == "n2"
    cluster.apply(gang("more", gpus=8))
    assert node_of(cluster, "more") == ""  # never onto the full n1
    assert invalid_events(cluster, "Pod", "foreign", "default") == []  # not pykai's pod


def test_a_bound_pod_with_an_unreadable_share_holds_its_whole_device() -> None:
    cluster = EmbeddedCluster.open(None)
    cluster.apply([node("n1", gpus=1), queue("team")])
    cluster.apply([podgroup("half", queue="team")])
    shared = pod(
        "half",
        group="half",
        node_name="n1",
        phase="Running",
        labels={c.GPU_GROUP_LABEL: "g1"},
        annotations={c.GPU_FRACTION_ANNOTATION: "half"},
    )
    stored(cluster, shared)
    frac = pod("frac", group="frac", annotations={c.GPU_FRACTION_ANNOTATION: "0.5"})
    cluster.apply([podgroup("frac", queue="team"), frac])
    assert node_of(cluster, "frac") == ""  # the device is taken whole


def test_a_deployment_with_unreadable_replicas_is_skipped_and_the_rest_goes_on(
    cluster: EmbeddedCluster,
) -> None:
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {
            "replicas": "abc",
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"schedulerName": c.SCHEDULER_NAME, "containers": [{"name": "c"}]},
            },
        },
    }
    stored(cluster, deployment)
    cluster.apply(gang("after", gpus=1))
    assert node_of(cluster, "after") in ("n1", "n2")
    [event] = invalid_events(cluster, "Deployment", "web", "default")
    assert "Deployment controller" in event["message"]
    cluster.apply(gang("again", gpus=1))  # later applies do not fail either
    assert len(invalid_events(cluster, "Deployment", "web", "default")) == 1  # once per version


@pytest.mark.parametrize("parents", [("b", "a"), ("a", "a")])
def test_a_queue_cycle_holds_only_its_own_jobs(
    cluster: EmbeddedCluster, parents: tuple[str, str]
) -> None:
    stored(cluster, queue("a", parent=parents[0]))
    if parents[0] != "a":
        stored(cluster, queue("b", parent=parents[1]))
    cluster.apply([podgroup("looped", queue="a"), pod("looped", group="looped", gpus=1)])
    cluster.apply(gang("fine", gpus=1))
    assert node_of(cluster, "looped") == ""
    assert node_of(cluster, "fine") in ("n1", "n2")
    [reason] = reasons(cluster, "looped")
    assert reason["reason"] == "QueueDoesNotExist" and "cycle" in reason["message"]


def test_an_unreadable_queue_holds_its_jobs_with_the_queues_problem(
    cluster: EmbeddedCluster,
) -> None:
    broken = queue("broken")
    broken["spec"]["resources"]["gpu"]["quota"] = "lots"
    stored(cluster, broken)
    cluster.apply([podgroup("waits", queue="broken"), pod("waits", group="waits", gpus=1)])
    assert node_of(cluster, "waits") == ""
    [reason] = reasons(cluster, "waits")
    assert 'queue "broken" cannot be used as written' in reason["message"]
    assert "spec.resources.gpu.quota" in reason["message"]
    assert len(invalid_events(cluster, "Queue", "broken")) == 1


def test_an_unreadable_podgroup_gets_a_condition_and_its_bound_pod_still_counts() -> None:
    cluster = EmbeddedCluster.open(None)
    cluster.apply([node("n1"), queue("team")])
    group = podgroup("odd", queue="team")
    group["spec"]["minMember"] = "several"
    stored(cluster, group)
    stored(cluster, pod("odd-0", group="odd", gpus=8, node_name="n1", phase="Running"))
    cluster.apply(gang("next", gpus=1))
    assert node_of(cluster, "next") == ""  # n1's 8 GPUs are held by the unreadable gang's pod
    [reason] = reasons(cluster, "odd")
    assert reason["reason"] == INVALID and "spec.minMember" in reason["message"]
    assert len(invalid_events(cluster, "PodGroup", "odd", "default")) == 1


def test_a_pod_with_a_very_long_name_gets_a_podgroup_within_the_name_limit(
    cluster: EmbeddedCluster,
) -> None:
    name = "p" * 250
    cluster.apply([pod(name, gpus=1)])
    [group] = cluster.list("PodGroup")
    assert len(group["metadata"]["name"]) <= MAX_NAME
    assert node_of(cluster, name) in ("n1", "n2")


def test_an_unreadable_scheduling_shard_falls_back_to_the_defaults(
    cluster: EmbeddedCluster,
) -> None:
    shard = {
        "apiVersion": "kai.scheduler/v1",
        "kind": "SchedulingShard",
        "metadata": {"name": "default"},
        "spec": {"placementStrategy": {"gpu": "sideways"}},
    }
    stored(cluster, shard)
    cluster.apply(gang("runs", gpus=1))
    assert node_of(cluster, "runs") in ("n1", "n2")
    assert len(invalid_events(cluster, "SchedulingShard", "default")) == 1


def test_a_raycluster_with_unreadable_replicas_is_skipped(cluster: EmbeddedCluster) -> None:
    ray = {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {"name": "ray", "namespace": "default", "labels": {c.QUEUE_LABEL: "team"}},
        "spec": {
            "headGroupSpec": {"template": {"spec": {"containers": [{"name": "head"}]}}},
            "workerGroupSpecs": [
                {"groupName": "w", "replicas": "many", "template": {"spec": {"containers": []}}}
            ],
        },
    }
    stored(cluster, ray)
    cluster.apply(gang("beside", gpus=1))
    assert node_of(cluster, "beside") in ("n1", "n2")
    assert len(invalid_events(cluster, "RayCluster", "ray", "default")) == 1


def test_a_node_with_unreadable_allocatable_takes_no_new_pods_but_counts() -> None:
    cluster = EmbeddedCluster.open(None)
    cluster.apply([node("n1", gpus=1), queue("team")])
    broken = node("n2")
    broken["status"]["allocatable"]["cpu"] = "plenty"
    stored(cluster, broken)
    cluster.apply(gang("one", gpus=1))
    cluster.apply(gang("two", gpus=1))
    assert sorted([node_of(cluster, "one"), node_of(cluster, "two")]) == ["", "n1"]
    [event] = invalid_events(cluster, "Node", "n2")
    assert "status.allocatable[cpu]" in event["message"]


def test_one_event_per_object_version(cluster: EmbeddedCluster) -> None:
    cluster.apply([podgroup("bad", queue="team")])
    bad = pod("bad", group="bad", annotations={c.GPU_FRACTION_ANNOTATION: "abc"})
    stored(cluster, bad)
    for _ in range(3):
        cluster.apply(gang(f"other-{_}", gpus=1))
    assert len(invalid_events(cluster, "Pod", "bad", "default")) == 1
    current = cluster.get("Pod", "bad", "default")
    assert current is not None
    current["metadata"]["annotations"][c.GPU_FRACTION_ANNOTATION] = "xyz"
    cluster.update(current)
    cluster.settle()
    assert len(invalid_events(cluster, "Pod", "bad", "default")) == 2
