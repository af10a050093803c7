"""pykai.compare.scenario: ``under_one_parent`` re-parents exactly the top-level queues."""

from __future__ import annotations

from pathlib import Path

from pykai.compare.scenario import Scenario, Step, under_one_parent
from pykai.model.meta import Obj


def queue(name: str, parent: str = "") -> Obj:
    spec: Obj = {"resources": {"gpu": {"quota": 2, "limit": -1, "overQuotaWeight": 1}}}
    if parent:
        spec["parentQueue"] = parent
    return {
        "apiVersion": "scheduling.run.ai/v2",
        "kind": "Queue",
        "metadata": {"name": name},
        "spec": spec,
    }


def scenario(*steps: Step) -> Scenario:
    return Scenario("s", Path("."), {}, steps)


def test_top_level_queues_go_under_the_new_parent_which_the_first_apply_creates() -> None:
    pod: Obj = {"kind": "Pod", "metadata": {"name": "p"}}
    found = under_one_parent(
        scenario(
            Step("advance", seconds=1.0),
            Step("apply", ("a.yaml",), (queue("dept"), queue("team", "dept"), pod)),
            Step("apply", ("b.yaml",), (queue("late"),)),
        ),
        "root",
    )
    first, second = found.steps[1].objects, found.steps[2].objects
    assert first[0]["metadata"]["name"] == "root"
    assert first[0]["spec"]["resources"]["gpu"] == {"quota": -1, "limit": -1, "overQuotaWeight": 1}
    assert "parentQueue" not in first[0]["spec"]
    assert [q["spec"].get("parentQueue") for q in first[1:3]] == ["root", "dept"]
    assert first[3] is pod
    assert second[0]["spec"]["parentQueue"] == "root"
    assert found.steps[0] == Step("advance", seconds=1.0)


def test_a_scenario_whose_queues_all_have_parents_is_unchanged() -> None:
    kept = scenario(Step("apply", ("a.yaml",), (queue("team", "dept"),)))
    assert under_one_parent(kept, "root") is kept
    rejected_only = scenario(Step("reject", ("bad.yaml",), (queue("bad"),)))
    assert under_one_parent(rejected_only, "root") is rejected_only
