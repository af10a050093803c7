"""Typed view of scheduling.k8s.io/v1 PriorityClass, and KAI's built-in classes."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from pykai.model import constants as c
from pykai.model.errors import FieldProblem, ValidationError
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


# Kubernetes' limits (pkg/apis/scheduling): user classes up to a billion; the system- prefix is
# kept for the two classes Kubernetes creates itself, with exactly these values
HIGHEST_USER_PRIORITY = 1_000_000_000
SYSTEM_PREFIX = "system-"
SYSTEM_CLASSES = {"system-cluster-critical": 2_000_000_000, "system-node-critical": 2_000_001_000}
_PREEMPTION_POLICIES = ("PreemptLowerPriority", "Never")


def parse_priority_class(obj: Obj) -> PriorityClassView:
    """Read and validate a PriorityClass."""
    meta = parse_meta(obj, KIND)
    value = obj.get("value")
    if isinstance(value, bool) or not isinstance(value, int) or not -(2**31) <= value < 2**31:
        raise ValidationError.single(
            KIND, meta.name, "value", f"must be a 32-bit integer, got {value!r}"
        )
    return PriorityClassView(meta=meta, value=value, global_default=bool(obj.get("globalDefault")))


def default_priority(classes: Iterable[PriorityClassView]) -> int:
    """The priority of a job whose class is not given or does not exist: the global default
    class's value (the highest, should there be several), else KAI's DefaultPodGroupPriority."""
    defaults = [pc.value for pc in classes if pc.global_default]
    return max(defaults) if defaults else c.DEFAULT_PRIORITY


def priority_class_problems(obj: Obj) -> list[FieldProblem]:
    """What Kubernetes refuses in a PriorityClass written by a user: a value above a billion,
    a reserved ``system-`` name, a non-boolean globalDefault, an unknown preemptionPolicy."""
    try:
        view = parse_priority_class(obj)
    except ValidationError as exc:
        return exc.problems
    name, problems = view.name, []
    if name.startswith(SYSTEM_PREFIX):
        if SYSTEM_CLASSES.get(name) != view.value or view.global_default:
            problems.append(
                FieldProblem(
                    KIND,
                    name,
                    "metadata.name",
                    f"names with the '{SYSTEM_PREFIX}' prefix are reserved for Kubernetes",
                    "choose another name",
                )
            )
    elif view.value > HIGHEST_USER_PRIORITY:
        problems.append(
            FieldProblem(
                KIND,
                name,
                "value",
                f"must be at most {HIGHEST_USER_PRIORITY} for a user-defined class, "
                f"got {view.value}",
            )
        )
    default = obj.get("globalDefault")
    if default is not None and not isinstance(default, bool):
        problems.append(
            FieldProblem(KIND, name, "globalDefault", f"must be true or false, got {default!r}")
        )
    policy = obj.get("preemptionPolicy")
    if policy is not None and policy not in _PREEMPTION_POLICIES:
        problems.append(
            FieldProblem(
                KIND,
                name,
                "preemptionPolicy",
                f"must be {' or '.join(_PREEMPTION_POLICIES)}, got {policy!r}",
            )
        )
    return problems


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
