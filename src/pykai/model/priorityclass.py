"""Typed view of scheduling.k8s.io/v1 PriorityClass, and KAI's built-in classes."""

from __future__ import annotations

from dataclasses import dataclass

from pykai.model import constants as c
from pykai.model.errors import ValidationError
from pykai.model.meta import Meta, Obj, parse_meta

KIND = "PriorityClass"


@dataclass(frozen=True, slots=True)
class PriorityClassView:
    """A priority class: name, value, and whether it is the cluster default."""

    meta: Meta
    value: int
    global_default: bool

    @property
    def name(self) -> str:
        """The class name."""
        return self.meta.name


def parse_priority_class(obj: Obj) -> PriorityClassView:
    """Read and validate a PriorityClass."""
    meta = parse_meta(obj, KIND)
    value = obj.get("value")
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValidationError.single(KIND, meta.name, "value", f"must be an integer, got {value!r}")
    return PriorityClassView(meta=meta, value=value, global_default=bool(obj.get("globalDefault")))


def builtin_priority_classes() -> list[Obj]:
    """KAI's shipped classes (train 50, build-preemptible 75, build 100, inference 125)."""
    return [
        {
            "apiVersion": c.PRIORITYCLASS_API,
            "kind": KIND,
            "metadata": {"name": name},
            "value": value,
            "preemptionPolicy": "PreemptLowerPriority",
            "description": f"KAI built-in class {name}",
        }
        for name, value in c.BUILTIN_PRIORITY_CLASSES.items()
    ]
