"""The seeded generator (pykai.compare.generator): pure, bounded, replayable."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from pykai.compare.expressible import plan
from pykai.compare.generator import MAX_JOBS, MAX_NODES, MAX_QUEUES, PRIORITIES, generate, write
from pykai.model.meta import Obj

SEEDS = range(200)


def objects(seed: int) -> list[Obj]:
    return [o for step in generate(seed) for o in step.objects]


def test_the_same_seed_gives_the_same_scenario() -> None:
    assert all(generate(seed) == generate(seed) for seed in range(50))
    assert generate(1) != generate(2)


def test_a_seed_stays_within_the_bounds() -> None:
    for seed in SEEDS:
        kinds = Counter(o["kind"] for o in objects(seed))
        assert 1 <= kinds["Node"] <= MAX_NODES, seed
        assert 2 <= kinds["Queue"] <= MAX_QUEUES, seed
        assert 1 <= kinds["PodGroup"] <= MAX_JOBS, seed


def test_seeds_mix_gangs_elastic_jobs_priorities_and_two_steps() -> None:
    gangs = elastic = two_steps = 0
    priorities = set()
    for seed in SEEDS:
        found = objects(seed)
        pods = Counter(
            p["metadata"]["annotations"]["pod-group-name"] for p in found if p["kind"] == "Pod"
        )
        for group in (o for o in found if o["kind"] == "PodGroup"):
            replicas, minimum = pods[group["metadata"]["name"]], group["spec"]["minMember"]
            assert 1 <= minimum <= replicas
            gangs += minimum == replicas
            elastic += minimum < replicas
            priorities.add(group["spec"]["priorityClassName"])
        two_steps += len(generate(seed)) == 2
    assert gangs and elastic and two_steps > len(SEEDS) // 2
    assert priorities == set(PRIORITIES)


def test_every_leaf_queue_has_a_parent_and_every_resource_its_three_figures() -> None:
    for seed in SEEDS:
        queues = {o["metadata"]["name"]: o for o in objects(seed) if o["kind"] == "Queue"}
        for queue in queues.values():
            parent = queue["spec"].get("parentQueue")
            assert parent is None or parent in queues
            for figures in queue["spec"]["resources"].values():
                assert set(figures) == {"quota", "limit", "overQuotaWeight"}


def test_jobs_are_named_in_creation_order() -> None:
    for seed in SEEDS:
        names = [o["metadata"]["name"] for o in objects(seed) if o["kind"] == "PodGroup"]
        assert names == sorted(names)


def test_a_written_seed_reads_back_and_is_expressible(tmp_path: Path) -> None:
    scenario = write(7, tmp_path / "seed-7")
    assert list(scenario.steps) == generate(7)
    assert not plan(scenario).problems
