"""Typed view of a scheduling.run.ai/v2alpha2 PodGroup: the gang, its queue and priority."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator
from pydantic import ValidationError as PydanticError

from pykai.model.errors import FieldProblem, ValidationError
from pykai.model.meta import Meta, Obj, parse_meta
from pykai.model.pydantic_errors import problems_from

KIND = "PodGroup"


class SubGroupSpec(BaseModel):
    """One entry of spec.subGroups: a named part of the gang with its own minimum."""

    model_config = ConfigDict(extra="ignore", populate_by_name=True, strict=True)

    name: str
    min_member: int = Field(1, alias="minMember", ge=1, le=2**31 - 1)
    parent: str | None = None


class PodGroupSpec(BaseModel):
    """spec of a PodGroup (fields the scheduler uses; others are kept in the stored object)."""

    model_config = ConfigDict(extra="ignore", populate_by_name=True, strict=True)

    min_member: int = Field(1, alias="minMember", ge=1, le=2**31 - 1)
    queue: str = ""
    priority_class_name: str = Field("", alias="priorityClassName")
    preemptibility: Literal["", "preemptible", "non-preemptible"] = ""
    mark_unschedulable: bool | None = Field(None, alias="markUnschedulable")
    sub_groups: list[SubGroupSpec] = Field(default_factory=list, alias="subGroups")

    @field_validator("sub_groups")
    @classmethod
    def _tree(cls, groups: list[SubGroupSpec]) -> list[SubGroupSpec]:
        names = [g.name for g in groups]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise ValueError(f"subgroup names must be unique; repeated: {', '.join(duplicates)}")
        by_name = {g.name: g for g in groups}
        for group in groups:
            if group.parent is not None and group.parent not in by_name:
                raise ValueError(
                    f'subgroup "{group.name}": parent "{group.parent}" is not a subgroup'
                )
            seen, parent = {group.name}, group.parent
            while parent is not None:
                if parent in seen:
                    raise ValueError(f'subgroup "{group.name}" is part of a parent cycle')
                seen.add(parent)
                parent = by_name[parent].parent
        return groups


@dataclass(frozen=True, slots=True)
class PodGroupView:
    """The scheduler's view of a PodGroup."""

    meta: Meta
    spec: PodGroupSpec

    @property
    def key(self) -> str:
        """``namespace/name``."""
        return self.meta.key


def parse_podgroup(obj: Obj) -> PodGroupView:
    """Read and validate a PodGroup."""
    meta = parse_meta(obj, KIND)
    try:
        spec = PodGroupSpec.model_validate(obj.get("spec") or {})
    except PydanticError as exc:
        raise ValidationError(problems_from(exc, KIND, meta.name, "spec")) from exc
    if not spec.queue:
        raise ValidationError(
            [
                FieldProblem(
                    KIND, meta.name, "spec.queue", "is required", "name the queue the gang runs in"
                )
            ]
        )
    return PodGroupView(meta=meta, spec=spec)
