"""pykai.compare.scenario: ``under_parents`` gives exactly the top-level leaf queues a parent of
their own, a clone of the leaf's spec."""

from __future__ import annotations

from pathlib import Path

from pykai.compare.scenario import Scenario, Step, under_parents
from pykai.model import builders
from pykai.model.meta import Obj


def queue(name: str, parent: str = "", gpu_quota: int = 2) -> Obj:
    return builders.queue(name, parent=parent, gpu=(gpu_quota, 9, 3), priority=7)


def scenario(*steps: Step) -> Scenario:
    return Scenario("s", Path("."), {}, steps)


def names(objects: tuple[Obj, ...]) -> list[tuple[str, str | None]]:
    return [(o["metadata"]["name"], (o.get("spec") or {}).get("parentQueue")) for o in objects]


def test_each_top_level_leaf_gets_a_parent_with_its_own_spec_and_departments_stay() -> None:
    pod: Obj = {"kind": "Pod", "metadata": {"name": "p"}}
    found = under_parents(
        scenario(
            Step("advance", seconds=1.0),
            Step("apply", ("a.yaml",), (queue("dept"), queue("team", "dept"), queue("b"), pod)),
            Step("apply", ("b.yaml",), (queue("late", gpu_quota=5),)),
        )
    )
    first, second = found.steps[1].objects, found.steps[2].objects
    assert names(first) == [
        ("dept", None),
        ("team", "dept"),
        ("b-parent", None),
        ("b", "b-parent"),
        ("p", None),
    ]
    assert names(second) == [("late-parent", None), ("late", "late-parent")]
    assert second[0]["spec"] == {k: v for k, v in second[1]["spec"].items() if k != "parentQueue"}
    assert second[0]["spec"]["resources"]["gpu"]["quota"] == 5
    assert found.steps[0] == Step("advance", seconds=1.0)


def test_a_scenario_without_top_level_leaves_is_unchanged() -> None:
    kept = scenario(Step("apply", ("a.yaml",), (queue("dept"), queue("team", "dept"))))
    assert under_parents(kept) is kept
    rejected_only = scenario(Step("reject", ("bad.yaml",), (queue("bad"),)))
    assert under_parents(rejected_only) is rejected_only
