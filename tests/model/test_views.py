"""Typed views: effective pod requests, GPU-sharing validation, nodes, queues, PodGroups."""

from __future__ import annotations

import math

import pytest

from pykai.model.builders import node, pod, podgroup, queue
from pykai.model.errors import ValidationError
from pykai.model.node import parse_node
from pykai.model.pod import parse_pod
from pykai.model.podgroup import parse_podgroup
from pykai.model.queue import parse_queue, validate_queue_tree
from pykai.model.resources import Resources


def test_requests_use_limits_when_missing_and_init_container_max() -> None:
    obj = pod("p")
    obj["spec"]["containers"] = [
        {"name": "a", "resources": {"limits": {"cpu": "2", "memory": "1Gi"}}},
        {"name": "b", "resources": {"requests": {"cpu": "500m"}, "limits": {"cpu": "4"}}},
    ]
    obj["spec"]["initContainers"] = [
        {"name": "init", "resources": {"requests": {"cpu": "3", "memory": "4Gi"}}}
    ]
    view = parse_pod(obj)
    assert view.requests == Resources(3000, 4 * 2**30, 0)


def test_gpu_request_needs_matching_limit() -> None:
    obj = pod("p")
    obj["spec"]["containers"][0]["resources"] = {"requests": {"nvidia.com/gpu": "1"}}
    with pytest.raises(
        ValidationError, match=r'Pod "p": spec.containers\[0\].resources.limits\[nvidia.com/gpu\]'
    ):
        parse_pod(obj)


def test_fraction_and_whole_gpu_together_are_rejected() -> None:
    with pytest.raises(ValidationError, match="cannot be combined"):
        parse_pod(pod("p", gpus=1, annotations={"gpu-fraction": "0.5"}))


@pytest.mark.parametrize("bad", ["1.5", "0", "-0.2", "half"])
def test_fraction_outside_range(bad: str) -> None:
    with pytest.raises(ValidationError, match=r"gpu-fraction\]: must be a number in \(0, 1\]"):
        parse_pod(pod("p", annotations={"gpu-fraction": bad}))


def test_fraction_and_memory_counted_as_devices() -> None:
    half = parse_pod(pod("p", annotations={"gpu-fraction": "0.5", "gpu-fraction-num-devices": "2"}))
    assert half.gpu.devices_equivalent(0) == 1.0
    mem = parse_pod(pod("m", annotations={"gpu-memory": "20480"}))
    assert mem.gpu.devices_equivalent(81920) == 0.25
    with pytest.raises(ValidationError, match="gpu-memory"):
        parse_pod(pod("x", annotations={"gpu-memory": "10", "gpu-fraction": "0.5"}))


def test_node_reads_gpu_memory_taints_and_readiness() -> None:
    obj = node("n", gpus=4, gpu_memory_mib=40960, taints=[{"key": "gpu", "effect": "NoSchedule"}])
    obj["status"]["conditions"] = [{"type": "Ready", "status": "False"}]
    view = parse_node(obj)
    assert view.allocatable.gpu == 4 and view.gpu_memory_mib == 40960
    assert not view.ready and view.taints[0].key == "gpu"


def test_queue_units_and_unlimited() -> None:
    view = parse_queue(queue("q", gpu=(2, -1, 3), memory=(1000, 2000, 1)))
    assert view.deserved.gpu == 2 and view.deserved.memory == 1000 * 1e6
    assert math.isinf(view.limit.gpu) and view.limit.memory == 2000 * 1e6
    assert view.over_quota_weight.gpu == 3 and view.spec.priority == 100


def test_queue_rejects_negative_values_unknown_resources_and_missing_resources() -> None:
    bad = queue("q", gpu=(-2, -1, 1))
    with pytest.raises(ValidationError, match=r'Queue "q": spec.resources.gpu.quota: must be -1'):
        parse_queue(bad)
    unknown = queue("q")
    unknown["spec"]["resources"]["gpus"] = {"quota": 1}
    with pytest.raises(ValidationError, match=r"spec.resources.gpus: is not a known field"):
        parse_queue(unknown)
    with pytest.raises(ValidationError, match=r"spec\.resources: is required"):
        parse_queue({"kind": "Queue", "metadata": {"name": "q"}, "spec": {}})


def test_queue_tree_missing_parent_and_cycle() -> None:
    queues = {
        q["metadata"]["name"]: parse_queue(q)
        for q in (queue("a", parent="b"), queue("b", parent="a"), queue("c", parent="zz"))
    }
    messages = [str(p) for p in validate_queue_tree(queues)]
    assert (
        'Queue "c": spec.parentQueue: queue "zz" does not exist '
        '(create queue "zz" first, or remove spec.parentQueue)' in messages
    )
    assert any("cycle" in m and m.startswith('Queue "a"') for m in messages)


def test_podgroup_validation() -> None:
    with pytest.raises(ValidationError, match=r'PodGroup "g": spec.minMember'):
        parse_podgroup(podgroup("g", queue="q", min_member=0))
    dup = podgroup("g", queue="q", sub_groups=[{"name": "a"}, {"name": "a"}])
    with pytest.raises(ValidationError, match="repeated: a"):
        parse_podgroup(dup)
    orphan = podgroup("g", queue="q", sub_groups=[{"name": "a", "parent": "zz"}])
    with pytest.raises(ValidationError, match='parent "zz" is not a subgroup'):
        parse_podgroup(orphan)
