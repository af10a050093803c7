"""Typed view of a scheduling.run.ai/v2alpha2 PodGroup: the gang, its queue and priority."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator
from pydantic import ValidationError as PydanticError

from pykai.model.apitypes import API_CONFIG, Int32, ResourceList, Timestamp
from pykai.model.errors import FieldProblem, ValidationError
from pykai.model.meta import Meta, Obj, parse_meta
from pykai.model.pydantic_errors import problems_from

KIND = "PodGroup"


class TopologyConstraint(BaseModel):
    """Where in the cluster's topology the pods should land together (KAI's topology-aware
    scheduling; pykai keeps the fields and does not act on them yet)."""

    model_config = ConfigDict(
        extra="ignore", populate_by_name=True, strict=True, use_attribute_docstrings=True
    )

    preferred_topology_level: str | None = Field(None, alias="preferredTopologyLevel")
    """The level (rack, zone, ...) within which the pods should be placed when possible."""
    required_topology_level: str | None = Field(None, alias="requiredTopologyLevel")
    """The level within whose one domain all pods must be placed."""
    topology: str | None = None
    """The name of the Topology object that describes the cluster's layout."""


class SubGroupSpec(BaseModel):
    """A named part of the gang with its own minimum; parents make a tree of gangs."""

    model_config = ConfigDict(
        extra="ignore", populate_by_name=True, strict=True, use_attribute_docstrings=True
    )

    name: str = Field(min_length=1)
    """The subgroup's name, unique within the PodGroup (pods name it in the
    kai.scheduler/subgroup-name label)."""
    min_member: Int32 = Field(1, alias="minMember", ge=1, le=2**31 - 1)
    """The fewest pods of the subgroup that may run: fewer are never started."""
    parent: str | None = None
    """The subgroup this one is part of."""
    topology_constraint: TopologyConstraint | None = Field(None, alias="topologyConstraint")
    """Topology constraints of the subgroup."""


class PodGroupSpec(BaseModel):
    """The gang: its queue, priority and minimum; the scheduler starts all of its minimum or
    none. KAI's fields pykai does not act on yet (topology, backoff, completions) are kept."""

    model_config = ConfigDict(
        extra="ignore", populate_by_name=True, strict=True, use_attribute_docstrings=True
    )

    min_member: Int32 = Field(1, alias="minMember", ge=1, le=2**31 - 1)
    """The fewest pods that may run: with fewer placeable, none is started."""
    queue: str = ""
    """The queue whose resources the gang uses; a missing queue leaves it pending."""
    priority_class_name: str = Field("", alias="priorityClassName")
    """The gang's PriorityClass (KAI's: train 50, build-preemptible 75, build 100, inference
    125); none: the cluster's default class, else 50."""
    preemptibility: Literal["", "preemptible", "non-preemptible"] = ""
    """preemptible or non-preemptible; empty: by priority (below 100 is preemptible)."""
    mark_unschedulable: bool | None = Field(None, alias="markUnschedulable")
    """Whether pending pods get an Unschedulable event."""
    sub_groups: list[SubGroupSpec] = Field(default_factory=list, alias="subGroups")
    """Parts of the gang with their own minimums."""
    backoff_limit: Int32 | None = Field(None, alias="backoffLimit")
    """Failed pods after which the group counts as failed."""
    completions: Int32 | None = None
    """Succeeded pods after which the group counts as done."""
    parallelism: Int32 | None = None
    """Pods that may run at once."""
    scheduling_backoff: Int32 | None = Field(None, alias="schedulingBackoff")
    """Scheduling cycles to try before the group is marked unschedulable (1 or -1)."""
    topology_constraint: TopologyConstraint | None = Field(None, alias="topologyConstraint")
    """Topology constraints of the whole gang."""

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


class QueueDetails(BaseModel):
    """The queue's figures when a gang was found over its limit or quota."""

    model_config = API_CONFIG

    name: str | None = None
    """The queue."""
    pod_group_requested_resources: ResourceList | None = Field(
        None, alias="podGroupRequestedResources"
    )
    """What the gang's minimum asks for."""
    pod_group_requested_non_preemptible_resources: ResourceList | None = Field(
        None, alias="podGroupRequestedNonPreemptibleResources"
    )
    """What it asks for that may not be preempted."""
    queue_allocated_resources: ResourceList | None = Field(None, alias="queueAllocatedResources")
    """What the queue holds."""
    queue_allocated_non_preemptible_resources: ResourceList | None = Field(
        None, alias="queueAllocatedNonPreemptibleResources"
    )
    """What the queue holds that may not be preempted."""
    queue_deserved_resources: ResourceList | None = Field(None, alias="queueDeservedResources")
    """The queue's deserved amounts."""
    queue_requested_resources: ResourceList | None = Field(None, alias="queueRequestedResources")
    """What the queue's jobs ask for."""
    queue_resource_limits: ResourceList | None = Field(None, alias="queueResourceLimits")
    """The queue's limits."""


class UnschedulableDetails(BaseModel):
    """Figures behind a reason, by kind of reason."""

    model_config = API_CONFIG

    queue_details: QueueDetails | None = Field(None, alias="queueDetails")
    """For OverLimit and NonPreemptibleOverQuota: the queue's figures."""


class UnschedulableReason(BaseModel):
    """One reason the gang cannot be scheduled."""

    model_config = API_CONFIG

    reason: str | None = None
    """The reason in one word: OverLimit, NonPreemptibleOverQuota, QueueDoesNotExist, ..."""
    message: str | None = None
    """The reason for people."""
    details: UnschedulableDetails | None = None
    """Figures behind the reason."""


class SchedulingCondition(BaseModel):
    """Why the gang is not scheduled in a node pool."""

    model_config = API_CONFIG

    type: str | None = None
    """UnschedulableOnNodePool."""
    node_pool: str | None = Field(None, alias="nodePool")
    """The node pool the condition is about."""
    status: str | None = None
    """True while it holds."""
    reason: str | None = None
    """The first reason in one word (the reasons list says more)."""
    message: str | None = None
    """The first reason for people (the reasons list says more)."""
    reasons: list[UnschedulableReason] | None = None
    """Every reason."""
    transition_id: str | None = Field(None, alias="transitionID")
    """Changes whenever the reasons change."""
    last_transition_time: Timestamp | None = Field(None, alias="lastTransitionTime")
    """When the reasons last changed."""


class PodGroupCondition(BaseModel):
    """A condition of the PodGroup."""

    model_config = API_CONFIG

    type: str | None = None
    """The condition's name."""
    status: str | None = None
    """True, False or Unknown."""
    reason: str | None = None
    """Why, in one CamelCase word."""
    message: str | None = None
    """Details for people."""
    transition_id: str | None = Field(None, alias="transitionID")
    """Changes with every transition."""
    last_transition_time: Timestamp | None = Field(None, alias="lastTransitionTime")
    """When the status last changed."""


class ResourcesStatus(BaseModel):
    """The resources of the gang's pods (GPUs in devices, fractions allowed)."""

    model_config = API_CONFIG

    allocated: ResourceList | None = None
    """What its running pods hold."""
    allocated_non_preemptible: ResourceList | None = Field(None, alias="allocatedNonPreemptible")
    """What its running pods hold that may not be preempted."""
    requested: ResourceList | None = None
    """What its pods that have not finished ask for."""


class PodGroupStatus(BaseModel):
    """The gang's phase, its pods by phase, its resources and why it is pending."""

    model_config = API_CONFIG

    phase: str | None = None
    """Pending, or Running once its minimum runs."""
    running: Int32 | None = None
    """Pods that hold a node."""
    pending: Int32 | None = None
    """Pods waiting for one."""
    succeeded: Int32 | None = None
    """Pods that succeeded."""
    failed: Int32 | None = None
    """Pods that failed."""
    resources_status: ResourcesStatus | None = Field(None, alias="resourcesStatus")
    """The resources of its pods."""
    scheduling_conditions: list[SchedulingCondition] | None = Field(
        None, alias="schedulingConditions"
    )
    """Why it is not scheduled, per node pool."""
    conditions: list[PodGroupCondition] | None = None
    """The PodGroup's conditions."""


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
