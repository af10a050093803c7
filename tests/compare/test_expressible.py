"""What a real cluster can replay (pykai.compare.expressible), read from scenario folders."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from pykai.compare.expressible import FILE_ORDER, plan, served
from pykai.compare.scenario import read_scenario

SCENARIOS = Path(__file__).parents[1] / "scenarios"


def planned(name: str):  # type: ignore[no-untyped-def]
    return plan(read_scenario(SCENARIOS / name, name))


def test_a_one_step_scenario_runs_as_written() -> None:
    found = planned("01-gang-fits")
    assert not found.problems and not found.skipped and len(found.steps) == 1


def test_apply_and_delete_steps_run_in_order() -> None:
    found = planned("34-delete-frees-room")
    assert not found.problems
    assert [(n, s.action) for n, s in found.steps] == [(1, "apply"), (2, "delete")]


def test_a_long_advance_is_not_expressible_with_its_reason() -> None:
    found = planned("43-stale-gang-evicted")
    assert any("advance" in p and "no clock" in p for p in found.problems), found.problems


def test_a_longer_advance_limit_replays_the_advance_as_a_real_wait() -> None:
    scenario = read_scenario(SCENARIOS / "43-stale-gang-evicted", "43")
    assert not plan(scenario, advance_limit=31).problems
    assert plan(scenario, advance_limit=30.5).problems == (
        "step 4: advance 31s: a real cluster has no clock to advance (waits of up to 30.5s are "
        "replayed)",
    )


def test_reject_steps_are_skipped_and_listed() -> None:
    found = planned("35-reject-missing-parent")
    assert found.skipped and all("reject" in s for s in found.skipped)
    assert all(step.action != "reject" for _, step in found.steps)


def test_placement_goes_to_both_sides_and_unknown_config_is_not_expressible() -> None:
    spread = planned("24-spread-gpu")
    assert spread.placement.get("gpu") == "spread" and not spread.problems
    assert spread.pykai_config == read_scenario(SCENARIOS / "24-spread-gpu").config
    unknown = plan(read_scenario(SCENARIOS / "24-spread-gpu"))
    assert not unknown.problems
    for name in ("01-gang-fits",):
        scenario = read_scenario(SCENARIOS / name, name)
        odd = plan(replace(scenario, config={"exhaustiveSearch": True}))
        assert odd.problems == ("config exhaustiveSearch: KAI's scheduler has no setting for it",)


def test_shared_gpus_are_expressible() -> None:
    for name in ("72-gpu-fractions-share-a-group", "75-gpu-memory-requests"):
        assert not planned(name).problems, name


def test_ported_cases_run_with_the_controller_and_ages_in_file_order() -> None:
    found = planned("kai/preempt_test/02-1-train-job-running-1-build-job-pending-preempt")
    assert not found.problems, found.problems
    assert found.recreate and found.ages == FILE_ORDER
    assert not planned("01-gang-fits").recreate and not planned("01-gang-fits").ages


def test_a_ported_releasing_pod_held_by_a_finalizer_is_expressible() -> None:
    name = "kai/preempt_test/07-job-with-a-stuckinreleasing-pod-is-not-a-preempt-victim"
    assert not planned(name).problems


def test_a_terminating_pod_without_a_finalizer_is_not_expressible() -> None:
    name = "kai/preempt_test/07-job-with-a-stuckinreleasing-pod-is-not-a-preempt-victim"
    scenario = read_scenario(SCENARIOS / name, name)
    step = scenario.steps[0]
    objects = tuple(
        {**o, "metadata": {k: v for k, v in o["metadata"].items() if k != "finalizers"}}
        for o in step.objects
    )
    bare = replace(scenario, steps=(replace(step, objects=objects),))
    assert any("without a finalizer" in p for p in plan(bare).problems), plan(bare).problems


def test_a_pod_owned_by_a_kind_the_cluster_serves_is_not_expressible() -> None:
    """65's pods name a ReplicaSet that no manifest can create with their uid: the garbage
    collector deletes them on a real cluster; the ported cases' kai.test/v1 TestJob it cannot
    look up, and leaves alone."""
    found = planned("65-consolidation-moves-a-pod")
    assert any("garbage collector" in p and "ReplicaSet" in p for p in found.problems)
    assert served("apps/v1", "ReplicaSet") and served("v1", "ConfigMap")
    assert served("ray.io/v1", "RayCluster")
    assert not served("kai.test/v1", "TestJob")


def test_an_unknown_ages_value_is_not_expressible() -> None:
    scenario = read_scenario(SCENARIOS / "01-gang-fits", "01-gang-fits")
    odd = replace(scenario, document={**scenario.document, "ages": "by-name"})
    assert any("ages by-name" in p for p in plan(odd).problems)
