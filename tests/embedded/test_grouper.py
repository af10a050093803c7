"""The pod-grouper on the embedded cluster: a bare pod's PodGroup, as KAI makes it."""

from __future__ import annotations

from pathlib import Path

import pytest

from pykai.model.builders import pod, podgroup, queue
from pykai.model.meta import Obj

from .conftest import ScriptedScheduler, scripted


def group_of(path: Path, *objects: Obj) -> Obj:
    """Apply ``objects`` (the last one a pod) and return the pod's PodGroup."""
    cluster = scripted(path, ScriptedScheduler())
    cluster.apply([queue("team-a"), queue("proj"), *objects])
    bare = cluster.get("Pod", objects[-1]["metadata"]["name"], "default")
    assert bare is not None
    name = bare["metadata"]["annotations"]["pod-group-name"]
    group = cluster.get("PodGroup", name, "default")
    assert group is not None
    assert name == f"pg-{bare['metadata']['name']}-{bare['metadata']['uid']}"
    assert group["metadata"]["ownerReferences"][0]["uid"] == bare["metadata"]["uid"]
    return group


def test_a_bare_pod_gets_a_podgroup_of_one_in_default_queue_with_priority_train(
    tmp_path: Path,
) -> None:
    group = group_of(tmp_path / "c.db", pod("p"))
    assert group["spec"] == {"minMember": 1, "queue": "default-queue", "priorityClassName": "train"}


@pytest.mark.parametrize(
    ("labels", "queue_name"),
    [
        ({"kai.scheduler/queue": "team-a", "project": "proj"}, "team-a"),
        ({"project": "proj"}, "proj"),
    ],
)
def test_queue_comes_from_the_queue_label_then_project(
    tmp_path: Path, labels: dict[str, str], queue_name: str
) -> None:
    assert group_of(tmp_path / "c.db", pod("p", labels=labels))["spec"]["queue"] == queue_name


@pytest.mark.parametrize(
    ("label", "spec_class", "expected"),
    [
        ("inference", "build", "inference"),  # the label first
        ("no-such-class", "build", "build"),  # a class that does not exist is skipped
        ("", "", "train"),  # nothing usable: train (apply refuses a spec naming no class)
    ],
)
def test_priority_class_comes_from_the_label_then_the_spec_if_it_exists(
    tmp_path: Path, label: str, spec_class: str, expected: str
) -> None:
    bare = pod("p", labels={"priorityClassName": label} if label else {})
    bare["spec"]["priorityClassName"] = spec_class
    assert group_of(tmp_path / "c.db", bare)["spec"]["priorityClassName"] == expected


def test_preemptibility_comes_from_its_label(tmp_path: Path) -> None:
    labelled = pod("p", labels={"kai.scheduler/preemptibility": "non-preemptible"})
    assert group_of(tmp_path / "c.db", labelled)["spec"]["preemptibility"] == "non-preemptible"


def test_pods_of_other_schedulers_and_user_made_groups_are_left_alone(tmp_path: Path) -> None:
    cluster = scripted(tmp_path / "c.db", ScriptedScheduler())
    cluster.apply(
        [
            pod("other", scheduler="default-scheduler"),
            podgroup("mine", queue="default-queue", min_member=2),
            pod("m0", group="mine"),
        ]
    )
    assert [g["metadata"]["name"] for g in cluster.list("PodGroup")] == ["mine"]
    other = cluster.get("Pod", "other", "default")
    assert other is not None and "pod-group-name" not in other["metadata"]["annotations"]


def test_a_bare_pods_group_goes_when_the_pod_goes(tmp_path: Path) -> None:
    cluster = scripted(tmp_path / "c.db", ScriptedScheduler())
    cluster.apply([pod("p")])
    assert len(cluster.list("PodGroup")) == 1
    assert cluster.delete("Pod", "p")
    assert cluster.list("PodGroup") == []
    assert cluster.state.jobs == {}
