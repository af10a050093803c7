"""Conditions read and set as apimachinery's meta helpers do."""

from pykai.model import conditions as c
from pykai.model.meta import format_time

BEFORE, NOW = 1_000.0, 2_000.0


def _obj(*conditions: dict[str, str]) -> dict[str, object]:
    return {"metadata": {"name": "w"}, "status": {"conditions": list(conditions)}}


def test_read_by_type() -> None:
    obj = _obj({"type": "Ready", "status": "True"}, {"type": "Done", "status": "False"})
    assert c.condition_of(obj, "Done") == {"type": "Done", "status": "False"}
    assert c.is_true(obj, "Ready") and not c.is_true(obj, "Done") and not c.is_true(obj, "Other")
    assert c.condition_of({"metadata": {}}, "Ready") == {}
    assert c.find_condition(["not a condition", {"type": "A"}], "A") == {"type": "A"}


def test_status_kept_keeps_the_transition_time() -> None:
    old = {"type": "Ready", "status": "True", "reason": "A", "lastTransitionTime": "then"}
    [new] = c.with_conditions(_obj(old), NOW, c.Condition("Ready", "True", "B", "m"))
    assert new == {
        "type": "Ready",
        "status": "True",
        "reason": "B",
        "message": "m",
        "lastTransitionTime": "then",
    }
    assert old["reason"] == "A"  # the object is left as it was


def test_status_changed_or_new_is_stamped() -> None:
    conditions = [{"type": "Ready", "status": "True", "reason": "A", "lastTransitionTime": "x"}]
    c.set_condition(conditions, c.Condition("Ready", "False"), NOW)
    c.set_condition(conditions, c.Condition("Done", "True", "R", ""), BEFORE)
    assert conditions == [
        {"type": "Ready", "status": "False", "reason": "A", "lastTransitionTime": format_time(NOW)},
        {
            "type": "Done",
            "status": "True",
            "reason": "R",
            "message": "",
            "lastTransitionTime": format_time(BEFORE),
        },
    ]
