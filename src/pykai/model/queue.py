"""Typed view of a scheduling.run.ai/v2 Queue, with KAI's units and special values."""

from __future__ import annotations

import math
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field, field_validator
from pydantic import ValidationError as PydanticError

from pykai.model import constants as c
from pykai.model.apitypes import API_CONFIG, ResourceList, Timestamp
from pykai.model.duration import parse_duration
from pykai.model.errors import FieldProblem, ValidationError
from pykai.model.meta import Meta, Obj, parse_meta
from pykai.model.pydantic_errors import problems_from
from pykai.model.quantity import format_number
from pykai.model.resources import MB, Resources

KIND = "Queue"


class ResourceSpec(BaseModel):
    """Quota, limit and over-quota weight of one resource. Missing fields take the values of
    KAI's Helm default queues: quota 0, limit -1, weight 1."""

    model_config = ConfigDict(
        extra="forbid",
        populate_by_name=True,
        strict=True,
        allow_inf_nan=False,
        use_attribute_docstrings=True,
    )

    quota: float = 0.0
    """The amount the queue deserves: it gets it first, and reclaims it from queues above
    theirs. -1: unlimited (the parent's whole amount)."""
    limit: float = -1.0
    """The most the queue may use, its children included. -1: no limit; 0: none at all."""
    over_quota_weight: float = Field(1.0, alias="overQuotaWeight")
    """The queue's weight when what is left over the quotas is divided among queues of the
    same priority. 0: no share over the quota."""

    @field_validator("quota", "limit")
    @classmethod
    def _minus_one_or_positive(cls, value: float) -> float:
        if value < 0 and value != -1:
            raise ValueError(f"must be -1 (unlimited) or at least 0, got {format_number(value)}")
        return value

    @field_validator("over_quota_weight")
    @classmethod
    def _non_negative(cls, value: float) -> float:
        if value < 0:
            raise ValueError(f"must be at least 0, got {format_number(value)}")
        return value


class QueueResources(BaseModel):
    """The queue's quota, limit and over-quota weight for CPU, memory and GPUs."""

    model_config = ConfigDict(extra="forbid", strict=True, use_attribute_docstrings=True)

    cpu: ResourceSpec = ResourceSpec()
    """CPU, in millicores (1000 = one CPU)."""
    gpu: ResourceSpec = ResourceSpec()
    """GPUs, in devices; fractions are allowed (0.5 = half a GPU)."""
    memory: ResourceSpec = ResourceSpec()
    """Memory, in megabytes (1 = 10^6 bytes)."""


class QueueSpec(BaseModel):
    """The queue's place in the queue tree, its priority and its resources."""

    model_config = ConfigDict(
        extra="forbid", populate_by_name=True, strict=True, use_attribute_docstrings=True
    )

    display_name: str = Field("", alias="displayName")
    """A name for people; the scheduler's logs and events use it."""
    parent_queue: str = Field("", alias="parentQueue")
    """The queue this one divides the resources of; none for a top-level queue."""
    priority: int = Field(c.DEFAULT_QUEUE_PRIORITY, ge=-(2**31), le=2**31 - 1)
    """Queues of higher priority get their share over the quota first, are considered first
    for allocation and last for reclaim. Default 100."""
    preempt_min_runtime: str | None = Field(None, alias="preemptMinRuntime")
    """How long a job of the queue runs before it may be preempted (a duration: 20s, 5m)."""
    reclaim_min_runtime: str | None = Field(None, alias="reclaimMinRuntime")
    """How long a job of the queue runs before it may be reclaimed (a duration: 20s, 5m)."""
    resources: QueueResources
    """Quota, limit and over-quota weight for CPU, memory and GPUs."""

    @field_validator("preempt_min_runtime", "reclaim_min_runtime")
    @classmethod
    def _duration(cls, value: str | None) -> str | None:
        if value is not None:
            parse_duration(value)
        return value


class QueueCondition(BaseModel):
    """A condition of the queue: KAI's own (Orphan, OverQuota) or an application's (pykai's
    FairShare, whose message holds its fair share, deserved amounts and eviction total as
    JSON)."""

    model_config = API_CONFIG

    type: str
    """The condition's name."""
    status: str
    """True, False or Unknown."""
    reason: str | None = None
    """Why, in one CamelCase word."""
    message: str | None = None
    """Details for people (for FairShare, JSON)."""
    last_probe_time: Timestamp | None = Field(None, alias="lastProbeTime")
    """When the condition was last checked."""
    last_transition_time: Timestamp | None = Field(None, alias="lastTransitionTime")
    """When the status last changed."""


class QueueStatus(BaseModel):
    """What the queue controller observes: the child queues and the resources the queue's jobs
    and its children's hold and ask for (GPUs in devices, fractions allowed)."""

    model_config = API_CONFIG

    child_queues: list[str] | None = Field(None, alias="childQueues")
    """The queues whose parentQueue is this one."""
    allocated: ResourceList | None = None
    """What the running jobs of the queue and its children hold."""
    allocated_non_preemptible: ResourceList | None = Field(None, alias="allocatedNonPreemptible")
    """What their non-preemptible jobs hold."""
    requested: ResourceList | None = None
    """What their running and pending jobs ask for."""
    conditions: list[QueueCondition] | None = None
    """The queue's conditions."""


def _amounts(spec: QueueResources, attr: str, unlimited: float) -> Resources:
    """Quota or limit in engine units (cpu milli, memory bytes, gpu); -1 becomes ``unlimited``."""

    def one(r: ResourceSpec, scale: float) -> float:
        value: float = getattr(r, attr)
        return unlimited if value == -1 else value * scale

    return Resources(one(spec.cpu, 1.0), one(spec.memory, MB), one(spec.gpu, 1.0))


@dataclass(frozen=True, slots=True)
class QueueView:
    """The scheduler's view of a queue (engine units: cpu milli, memory bytes, gpu devices)."""

    meta: Meta
    spec: QueueSpec

    @property
    def name(self) -> str:
        """The queue name."""
        return self.meta.name

    @property
    def parent(self) -> str:
        """The parent queue's name, or empty for a top-level queue."""
        return self.spec.parent_queue

    @property
    def deserved(self) -> Resources:
        """Quota; unlimited (-1) is ``math.inf``."""
        return _amounts(self.spec.resources, "quota", math.inf)

    @property
    def limit(self) -> Resources:
        """Limit; no limit (-1) is ``math.inf``, 0 forbids."""
        return _amounts(self.spec.resources, "limit", math.inf)

    @property
    def over_quota_weight(self) -> Resources:
        """Over-quota weight per resource."""
        r = self.spec.resources
        return Resources(
            r.cpu.over_quota_weight, r.memory.over_quota_weight, r.gpu.over_quota_weight
        )


def parse_queue(obj: Obj) -> QueueView:
    """Read and validate one queue (the tree is checked by ``validate_queue_tree``)."""
    meta = parse_meta(obj, KIND)
    spec = obj.get("spec")
    if not isinstance(spec, dict) or "resources" not in spec:
        raise ValidationError.single(
            KIND,
            meta.name,
            "spec.resources",
            "is required",
            "give quota, limit and overQuotaWeight for cpu, gpu and memory (-1 = unlimited)",
        )
    try:
        return QueueView(meta=meta, spec=QueueSpec.model_validate(spec))
    except PydanticError as exc:
        raise ValidationError(problems_from(exc, KIND, meta.name, "spec")) from exc


def validate_queue_tree(queues: dict[str, QueueView]) -> list[FieldProblem]:
    """Problems of the tree: parents that do not exist, and cycles."""
    problems: list[FieldProblem] = []
    for name, queue in sorted(queues.items()):
        parent = queue.parent
        if parent and parent not in queues:
            problems.append(
                FieldProblem(
                    KIND,
                    name,
                    "spec.parentQueue",
                    f'queue "{parent}" does not exist',
                    f'create queue "{parent}" first, or remove spec.parentQueue',
                )
            )
            continue
        seen = {name}
        while parent:
            if parent in seen:
                problems.append(
                    FieldProblem(
                        KIND,
                        name,
                        "spec.parentQueue",
                        f'forms a cycle through queue "{parent}"',
                        "make the parents form a tree",
                    )
                )
                break
            seen.add(parent)
            parent = queues[parent].parent if parent in queues else ""
    return problems


def default_queues() -> list[Obj]:
    """The queues KAI's Helm chart creates: ``default-parent-queue`` and its child
    ``default-queue`` (where pods without a queue label go), quota 0, limit -1, weight 1."""
    helm = {"quota": 0, "limit": -1, "overQuotaWeight": 1}
    resources = {"cpu": dict(helm), "gpu": dict(helm), "memory": dict(helm)}
    return [
        {
            "apiVersion": c.QUEUE_API,
            "kind": "Queue",
            "metadata": {"name": name},
            "spec": {"resources": resources, **({"parentQueue": parent} if parent else {})},
        }
        for name, parent in (
            (c.DEFAULT_PARENT_QUEUE, ""),
            (c.DEFAULT_QUEUE, c.DEFAULT_PARENT_QUEUE),
        )
    ]
