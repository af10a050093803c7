"""Shared GPUs in a side-by-side record (pykai.compare.observe, record, diff): the GPU groups
each side's binder labels pods with, compared as a packing of devices, and the reservation
stand-in's choice of device (pykai.kube.reservations)."""

from __future__ import annotations

from pykai.compare.diff import differences
from pykai.compare.observe import amounts, gpu_groups
from pykai.compare.record import Record, StepRecord
from pykai.kube.reservations import (
    ANNOTATION,
    Devices,
    device_id,
    received_types,
    reservation_pods,
)
from pykai.model.meta import Obj

NODES = {"n1": "node-big", "n2": "node-big", "n3": "node-small"}
PODS = {"default/a": "default/a", "default/b": "default/b", "default/c": "default/c"}


def record(side: str, placed: dict[str, str], groups: dict[str, tuple[str, ...]]) -> Record:
    return Record(side, (StepRecord(1, placed, gpu_groups=groups),), NODES, PODS)


def labelled(labels: dict[str, str]) -> Obj:
    return {"metadata": {"name": "p", "namespace": "default", "labels": labels}}


def test_both_label_forms_name_groups() -> None:
    # KAI: one device in runai-gpu-group, further ones (multi-fraction) as runai-gpu-group/<g>
    assert gpu_groups(labelled({"runai-gpu-group": "g1"})) == ("g1",)
    multi = {"runai-gpu-group/g2": "g2", "runai-gpu-group/g1": "g1", "app": "x"}
    assert gpu_groups(labelled(multi)) == ("g1", "g2")
    both = {"runai-gpu-group": "g1", "runai-gpu-group/g2": "g2"}  # pykai's form
    assert gpu_groups(labelled(both)) == ("g1", "g2")
    assert gpu_groups(labelled({"app": "x"})) == ()


def test_group_names_and_identical_nodes_do_not_matter() -> None:
    placed = {"default/a": "n1", "default/b": "n1", "default/c": "n1"}
    kai = record("kai", placed, {"default/a": ("uuid-1",), "default/b": ("uuid-1",)})
    moved = {"default/a": "n2", "default/b": "n2", "default/c": "n2"}
    pykai = record("pykai", moved, {"default/a": ("x",), "default/b": ("x",)})
    assert differences(kai, pykai) == []
    assert kai.sharing(kai.steps[0]) == [("node-big", (("default/a", "default/b"),))]


def test_pods_on_one_device_or_two_differ() -> None:
    placed = {"default/a": "n1", "default/b": "n1"}
    together = record("kai", placed, {"default/a": ("g",), "default/b": ("g",)})
    apart = record("pykai", placed, {"default/a": ("g",), "default/b": ("h",)})
    found = differences(together, apart)
    assert [d.field for d in found] == ["sharing"]
    assert found[0].peer == [("node-big", (("default/a", "default/b"),))]
    assert found[0].pykai == [("node-big", (("default/a",), ("default/b",)))]


def test_a_pod_on_several_devices_is_in_each_and_unbound_pods_are_left_out() -> None:
    placed = {"default/a": "n3", "default/b": "n3", "default/c": ""}
    groups = {"default/a": ("g1", "g2"), "default/b": ("g2",), "default/c": ("g3",)}
    view = record("kai", placed, groups).sharing(StepRecord(1, placed, gpu_groups=groups))
    assert view == [("node-small", (("default/a",), ("default/a", "default/b")))]


def reservation(name: str, node: str, annotated: str = "", deleting: bool = False) -> Obj:
    meta: Obj = {"name": name, "namespace": "kai-resource-reservation"}
    if annotated:
        meta["annotations"] = {ANNOTATION: annotated}
    if deleting:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return {"metadata": meta, "spec": {"nodeName": node}}


def test_each_reservation_pod_gets_the_lowest_free_device_of_its_node() -> None:
    devices = Devices()
    assert devices.seen(reservation("r1", "n1")) == device_id("n1", 0)
    assert devices.seen(reservation("r1", "n1")) is None  # never twice
    assert devices.seen(reservation("r2", "n1")) == device_id("n1", 1)
    assert devices.seen(reservation("r3", "n2")) == device_id("n2", 0)
    assert devices.seen(reservation("r0", "")) is None  # not bound yet
    devices.gone(reservation("r1", "n1"))
    assert devices.seen(reservation("r4", "n1")) == device_id("n1", 0)


def test_annotated_or_terminating_pods_are_left_alone_and_hold_or_free_their_device() -> None:
    devices = Devices()
    assert devices.seen(reservation("old", "n1", annotated=device_id("n1", 0))) is None
    assert devices.seen(reservation("new", "n1")) == device_id("n1", 1)
    assert devices.seen(reservation("old", "n1", deleting=True)) is None
    assert devices.seen(reservation("newer", "n1")) == device_id("n1", 0)


def test_shared_pods_bound_already_get_the_reservation_pods_kai_made_for_them() -> None:
    def pod(name: str, node: str, labels: dict[str, str]) -> Obj:
        return {"metadata": {"name": name, "labels": labels}, "spec": {"nodeName": node}}

    pods = [
        pod("a", "node0", {"runai-gpu-group": "0"}),
        pod("b", "node0", {"runai-gpu-group": "0"}),  # same group: one reservation
        pod("c", "node1", {"runai-gpu-group/G1": "G1", "runai-gpu-group/g2": "g2"}),
        pod("d", "", {"runai-gpu-group": "9"}),  # not bound: the binder made nothing yet
        pod("e", "node0", {}),  # a whole-GPU or CPU pod
    ]
    made = reservation_pods(pods)
    assert [(p["spec"]["nodeName"], p["metadata"]["labels"]["runai-gpu-group"]) for p in made] == [
        ("node0", "0"),
        ("node1", "G1"),
        ("node1", "g2"),
    ]
    assert [p["metadata"]["name"] for p in made][1] == "gpu-reservation-node1-g1"
    for reserved in made:
        assert reserved["metadata"]["namespace"] == "kai-resource-reservation"
        assert reserved["metadata"]["labels"]["app"] == "kai-resource-reservation"
        limits = reserved["spec"]["containers"][0]["resources"]["limits"]
        assert limits == {"nvidia.com/gpu": "1"}


def test_kai_gpu_memory_requests_are_read_in_mib() -> None:
    # KAI's podgroupcontroller writes a gpu-memory pod's request as run.ai/gpu.memory
    # (requested.go), which reaches the queue's status.requested
    found = amounts({"cpu": "300m", "run.ai/gpu.memory": "60k", "example.com/x": "1"})
    assert found == {"cpu": 300.0, "gpu-memory": 60000.0}


def test_pods_bound_already_get_the_received_type_kai_binder_writes() -> None:
    def pod(name: str, node: str, annotations: dict[str, str]) -> Obj:
        meta = {"name": name, "namespace": "default", "annotations": annotations}
        return {"metadata": meta, "spec": {"nodeName": node}}

    pods = [
        pod("shared", "n1", {"gpu-fraction": "0.5"}),
        pod("memory", "n1", {"gpu-memory": "2000"}),
        pod("whole", "n1", {}),
        pod("pending", "", {"gpu-fraction": "0.5"}),
    ]
    assert received_types(pods) == {
        "default/shared": "Fraction",
        "default/memory": "Fraction",
        "default/whole": "Regular",
    }
