"""Node constraints a pod carries: nodeSelector, required node affinity, taints and tolerations."""

from __future__ import annotations

from dataclasses import dataclass

from pykai.model.errors import ValidationError
from pykai.model.meta import Obj

_OPERATORS = {"In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"}
_EFFECTS = {"NoSchedule", "PreferNoSchedule", "NoExecute", ""}


@dataclass(frozen=True, slots=True)
class Requirement:
    """One node-selector requirement (matchExpressions entry)."""

    key: str
    operator: str
    values: tuple[str, ...] = ()

    def matches(self, labels: dict[str, str]) -> bool:
        """True if the labels satisfy this requirement."""
        present = self.key in labels
        if self.operator == "Exists":
            return present
        if self.operator == "DoesNotExist":
            return not present
        if self.operator == "In":
            return present and labels[self.key] in self.values
        if self.operator == "NotIn":
            return not present or labels[self.key] not in self.values
        if not present:
            return False
        try:
            value, bound = int(labels[self.key]), int(self.values[0])
        except (ValueError, IndexError):
            return False
        return value > bound if self.operator == "Gt" else value < bound


@dataclass(frozen=True, slots=True)
class Taint:
    """A node taint."""

    key: str
    value: str = ""
    effect: str = "NoSchedule"


@dataclass(frozen=True, slots=True)
class Toleration:
    """A pod toleration."""

    key: str = ""
    operator: str = "Equal"
    value: str = ""
    effect: str = ""

    def tolerates(self, taint: Taint) -> bool:
        """True if this toleration tolerates the taint (Kubernetes' rule)."""
        if self.effect and self.effect != taint.effect:
            return False
        if not self.key:
            return self.operator == "Exists"
        if self.key != taint.key:
            return False
        return self.operator == "Exists" or self.value == taint.value


@dataclass(frozen=True, slots=True)
class NodeConstraints:
    """Everything that restricts which nodes a pod may use. Hashable, so masks can be cached."""

    node_selector: tuple[tuple[str, str], ...] = ()
    affinity_terms: tuple[tuple[Requirement, ...], ...] = ()  # OR of ANDs; empty = any node
    tolerations: tuple[Toleration, ...] = ()

    def selects(self, labels: dict[str, str]) -> bool:
        """True if the node labels pass nodeSelector and required node affinity."""
        if any(labels.get(k) != v for k, v in self.node_selector):
            return False
        if not self.affinity_terms:
            return True
        return any(all(r.matches(labels) for r in term) for term in self.affinity_terms)

    def untolerated(self, taints: tuple[Taint, ...]) -> list[Taint]:
        """The NoSchedule/NoExecute taints that no toleration covers."""
        return [
            t
            for t in taints
            if t.effect in ("NoSchedule", "NoExecute")
            and not any(tol.tolerates(t) for tol in self.tolerations)
        ]


def parse_taints(spec: Obj, kind: str, name: str) -> tuple[Taint, ...]:
    """Read node spec.taints."""
    taints = []
    for i, raw in enumerate(spec.get("taints") or []):
        if not isinstance(raw, dict) or not raw.get("key"):
            raise ValidationError.single(kind, name, f"spec.taints[{i}].key", "is required")
        effect = str(raw.get("effect") or "NoSchedule")
        if effect not in _EFFECTS:
            raise ValidationError.single(
                kind,
                name,
                f"spec.taints[{i}].effect",
                f"unknown effect {effect!r}",
                "use NoSchedule, PreferNoSchedule or NoExecute",
            )
        taints.append(Taint(str(raw["key"]), str(raw.get("value") or ""), effect))
    return tuple(taints)


def parse_constraints(spec: Obj, kind: str, name: str) -> NodeConstraints:
    """Read a pod spec's nodeSelector, tolerations and required node affinity."""
    selector = spec.get("nodeSelector") or {}
    if not isinstance(selector, dict):
        raise ValidationError.single(kind, name, "spec.nodeSelector", "must be a map of strings")
    tolerations = tuple(
        Toleration(
            key=str(t.get("key") or ""),
            operator=str(t.get("operator") or "Equal"),
            value=str(t.get("value") or ""),
            effect=str(t.get("effect") or ""),
        )
        for t in spec.get("tolerations") or []
        if isinstance(t, dict)
    )
    required = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    ) or {}
    terms = []
    for i, term in enumerate(required.get("nodeSelectorTerms") or []):
        reqs = []
        for j, expr in enumerate((term or {}).get("matchExpressions") or []):
            path = (
                "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
                f".nodeSelectorTerms[{i}].matchExpressions[{j}]"
            )
            op = str(expr.get("operator", ""))
            if op not in _OPERATORS:
                raise ValidationError.single(
                    kind,
                    name,
                    f"{path}.operator",
                    f"unknown operator {op!r}",
                    "use In, NotIn, Exists, DoesNotExist, Gt or Lt",
                )
            reqs.append(
                Requirement(str(expr.get("key", "")), op, tuple(map(str, expr.get("values") or [])))
            )
        terms.append(tuple(reqs))
    return NodeConstraints(
        node_selector=tuple(sorted((str(k), str(v)) for k, v in selector.items())),
        affinity_terms=tuple(terms),
        tolerations=tolerations,
    )
