"""scheduling.run.ai/v1alpha2 BindRequest: the scheduler asks the binder to bind a pod whose
bind takes more than one write (a shared GPU); the binder reports how it went."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from pykai.model.apitypes import API_CONFIG, Int32


class ReceivedGPU(BaseModel):
    """The GPUs the pod receives."""

    model_config = API_CONFIG

    count: int | None = None
    """How many devices."""
    portion: str | None = None
    """The portion of each device, a decimal number written as a string ("0.50")."""


class ResourceClaimAllocation(BaseModel):
    """A dynamic resource claim of the pod and its allocation (pykai keeps it as written)."""

    model_config = API_CONFIG

    name: str | None = None
    """The claim's name in the pod spec."""
    allocation: dict[str, Any] | None = None
    """Kubernetes' AllocationResult of the claim."""


class BindRequestSpec(BaseModel):
    """Which pod to bind where, with which devices."""

    model_config = API_CONFIG

    pod_name: str | None = Field(None, alias="podName")
    """The pod, in the BindRequest's namespace."""
    selected_node: str | None = Field(None, alias="selectedNode")
    """The node to bind it to."""
    selected_gpu_groups: list[str] | None = Field(None, alias="selectedGPUGroups")
    """The shared GPU groups it gets a portion of (for Fraction)."""
    received_resource_type: str | None = Field(None, alias="receivedResourceType")
    """How it receives GPUs: Regular (whole devices) or Fraction."""
    received_gpu: ReceivedGPU | None = Field(None, alias="receivedGPU")
    """The GPUs it receives."""
    resource_claim_allocations: list[ResourceClaimAllocation] | None = Field(
        None, alias="resourceClaimAllocations"
    )
    """Its dynamic resource claims to allocate."""
    backoff_limit: Int32 | None = Field(None, alias="backoffLimit")
    """Failed attempts after which the binder gives up."""


class BindRequestStatus(BaseModel):
    """How the bind went."""

    model_config = API_CONFIG

    phase: str | None = None
    """Pending, Succeeded or Failed."""
    failed_attempts: Int32 | None = Field(None, alias="failedAttempts")
    """Attempts that failed so far."""
    reason: str | None = None
    """Why it is in this phase."""
