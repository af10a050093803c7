"""The comparison of two records (pykai.compare.diff): identical nodes and twin pods are
interchangeable, everything else recorded is compared."""

from __future__ import annotations

from pykai.compare.diff import differences
from pykai.compare.record import Eviction, GroupStatus, QueueStatus, Record, StepRecord

NODES = {"n1": "node-big", "n2": "node-big", "n3": "node-small"}
PODS = {"default/a-0": "twin-a", "default/a-1": "twin-a", "default/b-0": "default/b-0"}


def record(side: str, *steps: StepRecord, failure: str = "") -> Record:
    return Record(side, steps, NODES, PODS, failure)


def step(placed: dict[str, str], **kwargs: object) -> StepRecord:
    return StepRecord(1, placed, **kwargs)  # type: ignore[arg-type]


def test_identical_nodes_and_twin_pods_are_interchangeable() -> None:
    kai = record("kai", step({"default/a-0": "n1", "default/a-1": "", "default/b-0": "n2"}))
    pykai = record("pykai", step({"default/a-0": "", "default/a-1": "n2", "default/b-0": "n1"}))
    assert differences(kai, pykai) == []


def test_a_different_node_class_or_pod_is_a_difference() -> None:
    kai = record("kai", step({"default/a-0": "n1", "default/b-0": "n1"}))
    pykai = record("pykai", step({"default/a-0": "n1", "default/b-0": "n3"}))
    assert [d.field for d in differences(kai, pykai)] == ["packing"]
    pending = record("pykai", step({"default/a-0": "n1", "default/b-0": ""}))
    assert [d.field for d in differences(kai, pending)] == ["bound", "packing"]


def test_evictions_compare_by_pod_class_node_class_and_action() -> None:
    placed = {"default/b-0": "n1"}
    kai = record("kai", step(placed, evictions=(Eviction("default/a-0", "n1", ("reclaim",)),)))
    twin = record("pykai", step(placed, evictions=(Eviction("default/a-1", "n2", ("reclaim",)),)))
    assert differences(kai, twin) == []
    other = record("pykai", step(placed, evictions=(Eviction("default/a-1", "n2", ("preempt",)),)))
    found = differences(kai, other)
    assert [d.field for d in found] == ["evicted"]
    assert found[0].peer == [("twin-a", "node-big", ("reclaim",))]


def test_queue_and_podgroup_status_are_compared_field_by_field() -> None:
    queue = QueueStatus({"gpu": 2.0}, {}, {"gpu": 4.0})
    group = GroupStatus(("OverLimit",), {})
    kai = record("kai", step({}, queues={"q": queue}, podgroups={"default/b": group}))
    same = record("pykai", step({}, queues={"q": queue}, podgroups={"default/b": group}))
    assert differences(kai, same) == []
    other = record(
        "pykai",
        step(
            {},
            queues={"q": QueueStatus({"gpu": 2.0}, {}, {"gpu": 3.0})},
            podgroups={"default/b": GroupStatus(("NonPreemptibleOverQuota",), {})},
        ),
    )
    assert [d.field for d in differences(kai, other)] == [
        "queue q requested",
        "podgroup default/b reasons",
    ]


def test_a_failed_side_is_one_failure() -> None:
    kai = record("kai", failure="KaiStackError: did not start")
    found = differences(kai, record("pykai", step({})))
    assert [(d.field, d.peer) for d in found] == [("failure", "KaiStackError: did not start")]
