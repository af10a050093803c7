"""The shapes of ``pykai bench kube --shape``: KAI's scale tests as the issue sets them, the
same objects for every row but the scheduler's name, and sizes that cannot be bound refused."""

from __future__ import annotations

import pytest

from pykai.bench.shapes import (
    PARENT,
    QUEUE_A,
    QUEUE_B,
    QUEUE_LABEL,
    SHAPES,
    background,
    measured,
    probe,
    queues,
)
from pykai.model import constants as c


def gpus(pod: dict[str, object]) -> int:
    spec = pod["spec"]
    assert isinstance(spec, dict)
    return int(spec["containers"][0]["resources"]["limits"].get(c.GPU_RESOURCE, 0))


def test_the_shapes_are_kais_scale_tests_and_schedulingbasic() -> None:
    fill, reclaim, distributed, basic = (
        SHAPES[n] for n in ("fill", "reclaim", "distributed", "basic")
    )
    assert (fill.nodes, fill.jobs, fill.pods_per_job, fill.gpus_per_pod) == (500, 4000, 1, 1)
    assert (reclaim.nodes, reclaim.background, reclaim.pods) == (500, 4000, 2000)
    assert (distributed.nodes, distributed.jobs, distributed.pods) == (512, 1, 512)
    assert distributed.pods * distributed.gpus_per_pod == distributed.gpus  # every GPU, one gang
    assert (basic.nodes, basic.pods) == (1000, 5000)
    assert "kube-scheduler" in basic.rows and "kube-scheduler" not in distributed.rows
    for shape in SHAPES.values():
        shape.check()


def test_a_gang_is_one_podgroup_whose_min_member_is_every_pod() -> None:
    [job] = measured(SHAPES["distributed"], "kai")
    group, *pods = job
    assert group["kind"] == "PodGroup" and group["spec"]["minMember"] == len(pods) == 512
    assert all(
        p["metadata"]["annotations"]["pod-group-name"] == group["metadata"]["name"] for p in pods
    )
    assert {gpus(p) for p in pods} == {8}


def test_every_row_gets_the_same_objects_but_the_schedulers_name() -> None:
    shape = SHAPES["fill"].sized(nodes=4, pods=10)
    by_row = {row: measured(shape, row) for row in ("kai", "pykai", "kube-scheduler")}
    names = {
        row: [p["spec"].pop("schedulerName") for j in jobs for p in j if p["kind"] == "Pod"]
        for row, jobs in by_row.items()
    }
    assert set(names["kai"]) == set(names["pykai"]) == {"kai-scheduler"}
    assert set(names["kube-scheduler"]) == {"default-scheduler"}
    assert by_row["kai"] == by_row["pykai"] == by_row["kube-scheduler"]
    pods = [o for job in by_row["kai"] for o in job if o["kind"] == "Pod"]
    assert len(pods) == 10 and all(p["spec"]["terminationGracePeriodSeconds"] == 0 for p in pods)
    assert {p["metadata"]["labels"][QUEUE_LABEL] for p in pods} == {QUEUE_A}


def test_reclaim_fills_the_cluster_from_a_then_b_claims_its_half() -> None:
    shape = SHAPES["reclaim"].sized(nodes=4, pods=16)
    made = {q["metadata"]["name"]: q["spec"] for q in queues(shape)}
    assert "parentQueue" not in made[PARENT]
    assert made[QUEUE_A]["parentQueue"] == made[QUEUE_B]["parentQueue"] == PARENT
    assert (
        made[QUEUE_A]["resources"]["gpu"]["quota"]
        == made[QUEUE_B]["resources"]["gpu"]["quota"]
        == 16
    )
    filler = [o for job in background(shape, "pykai") for o in job if o["kind"] == "Pod"]
    assert sum(gpus(p) for p in filler) == shape.gpus == 32
    claims = [o for job in measured(shape, "pykai") for o in job]
    assert {o["spec"]["queue"] for o in claims if o["kind"] == "PodGroup"} == {QUEUE_B}
    assert sum(gpus(p) for p in claims if p["kind"] == "Pod") == 16


def test_other_shapes_have_one_leaf_queue_deserving_every_gpu_and_no_background() -> None:
    shape = SHAPES["fill"].sized(nodes=3)
    leaves = [q for q in queues(shape) if q["spec"].get("parentQueue")]
    assert [q["metadata"]["name"] for q in leaves] == [QUEUE_A]
    assert leaves[0]["spec"]["resources"]["gpu"]["quota"] == 24
    assert background(shape, "kai") == []


def test_the_probe_takes_no_gpu() -> None:
    group, pod = probe("kube-scheduler")
    assert group["kind"] == "PodGroup" and gpus(pod) == 0
    assert pod["spec"]["schedulerName"] == "default-scheduler"


def test_sizes_that_cannot_be_bound_are_refused() -> None:
    with pytest.raises(ValueError, match="do not fit in the cluster"):
        SHAPES["fill"].sized(nodes=2, pods=17).check()
    with pytest.raises(ValueError, match="queue B's share"):
        SHAPES["reclaim"].sized(nodes=2, pods=9).check()
    with pytest.raises(ValueError, match="do not fit"):
        SHAPES["distributed"].sized(nodes=4, pods=5).check()
    assert SHAPES["distributed"].sized(nodes=4, pods=4).pods_per_job == 4
