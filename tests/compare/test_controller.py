"""The harness's pods' controller (pykai.compare.controller) and the creation batches of
``ages: file-order`` (pykai.compare.run.age_batches, check_ages), without a cluster."""

from __future__ import annotations

import pytest

from pykai.compare.controller import PodController, controlled, pending
from pykai.compare.record import StepRecord
from pykai.compare.run import SideFailed, age_batches, check_ages
from pykai.model.meta import Obj

OWNER = {
    "apiVersion": "kai.test/v1",
    "kind": "TestJob",
    "name": "j",
    "uid": "u",
    "controller": True,
}


def pod(name: str, group: str = "", owner: bool = True, **spec: object) -> Obj:
    meta: Obj = {"name": name, "namespace": "default"}
    if group:
        meta["annotations"] = {"pod-group-name": group}
    if owner:
        meta["ownerReferences"] = [OWNER]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": dict(spec)}


def group(name: str) -> Obj:
    return {"kind": "PodGroup", "metadata": {"name": name, "namespace": "default"}}


class FakeApi:
    """What the controller writes: create_if_absent of pods."""

    def __init__(self, existing: set[str]) -> None:
        self.existing, self.created = existing, []  # type: ignore[var-annotated]

    def create_if_absent(self, kind: object, obj: Obj) -> Obj | None:
        key = f"{obj['metadata']['namespace']}/{obj['metadata']['name']}"
        if key in self.existing:
            return None
        self.existing.add(key)
        self.created.append(obj)
        return obj


def test_only_pods_with_a_controlling_owner_are_tracked() -> None:
    loose = pod("loose")
    loose["metadata"]["ownerReferences"] = [{**OWNER, "controller": False}]
    assert controlled(pod("a")) and not controlled(pod("bare", owner=False))
    assert not controlled(loose) and not controlled(group("a"))


def test_a_missing_controlled_pod_comes_back_pending_and_is_counted() -> None:
    running = pod("a-0", "a", nodeName="n1")
    running["status"] = {"phase": "Running"}
    running["metadata"]["deletionTimestamp"] = "2025-01-01T00:00:00Z"
    controller = PodController()
    controller.track([group("a"), running, pod("bare", owner=False), pod("b-0", "b")])
    api = FakeApi({"default/b-0"})
    assert controller.restore(api, {"default/b-0"}) == 1  # type: ignore[arg-type]
    (again,) = api.created
    assert "nodeName" not in again["spec"] and "status" not in again
    assert "deletionTimestamp" not in again["metadata"]
    assert again["metadata"]["annotations"] == {"pod-group-name": "a"}
    assert running["spec"]["nodeName"] == "n1"  # the manifest itself is kept as written
    # present again (or created meanwhile by another): nothing to do
    assert controller.restore(api, {"default/a-0", "default/b-0"}) == 0  # type: ignore[arg-type]
    assert controller.restore(api, {"default/b-0"}) == 0  # type: ignore[arg-type]
    assert controller.recreated == 1


def test_a_pod_the_scenario_deletes_is_not_recreated() -> None:
    controller = PodController()
    controller.track([pod("a-0", "a")])
    controller.forget("default/a-0")
    assert controller.restore(FakeApi(set()), set()) == 0  # type: ignore[arg-type]


def test_pending_drops_what_a_controller_does_not_write() -> None:
    made = pending({**pod("x", nodeName="n"), "status": {"phase": "Running"}})
    assert made["spec"] == {} and "status" not in made


def queue(name: str) -> Obj:
    return {"kind": "Queue", "metadata": {"name": name}}


def names(batches: list[list[Obj]]) -> list[list[str]]:
    return [[o["metadata"]["name"] for o in batch] for batch in batches]


def test_file_order_batches_each_podgroup_with_its_pods() -> None:
    jobs = [group("b"), pod("b-0", "b"), pod("b-1", "b"), pod("lone"), group("a"), pod("a-0", "a")]
    assert names(age_batches(jobs)) == [["lone"], ["b", "b-0", "b-1"], ["a", "a-0"]]
    # a pod listed before its PodGroup still goes with it, after it
    assert names(age_batches([pod("c-0", "c"), group("c")])) == [["c", "c-0"]]


def test_file_order_batches_take_the_queues_one_a_second_beside_the_podgroups() -> None:
    jobs = [group("b"), pod("b-0", "b"), group("a"), pod("a-0", "a")]
    queues = [queue("dept"), queue("q1"), queue("q0")]
    assert names(age_batches(jobs, queues)) == [["dept", "b", "b-0"], ["q1", "a", "a-0"], ["q0"]]
    assert names(age_batches([], [queue("q")])) == [["q"]]


def test_ages_must_follow_file_order_on_the_record() -> None:
    objects = [queue("q1"), queue("q0"), group("b"), group("a"), group("c")]
    good = {
        "Queue q1": "2026-11-28T16:00:01Z",
        "Queue q0": "2026-11-28T16:00:02Z",
        "Queue default-queue": "2026-11-28T15:00:00Z",  # not the scenario's: not checked
        "PodGroup default/b": "2026-11-28T16:00:01Z",  # a queue and a PodGroup may share one
        "PodGroup default/a": "2026-11-28T16:00:02Z",
    }
    check_ages(
        StepRecord(1, {}, created=good | {"PodGroup default/c": "2026-11-28T16:00:03Z"}), objects
    )
    same = good | {"PodGroup default/c": "2026-11-28T16:00:02Z"}
    with pytest.raises(SideFailed, match=r"PodGroup default/c .*not after PodGroup default/a"):
        check_ages(StepRecord(1, {}, created=same), objects)
    older = good | {"Queue q0": "2026-11-28T16:00:00Z"}
    with pytest.raises(SideFailed, match=r"Queue q0 .*not after Queue q1"):
        check_ages(StepRecord(1, {}, created=older), objects)
