"""The scheduler's settings: actions, placement strategy, min-runtime defaults and limits, as
the engine reads them. How users write them (KAI's SchedulingShard, a plain mapping) is read by
engine/config.py, which checks every action's and policy's name against the names registered at
those extension points (engine/actions/registry.py, engine/policies/): it gives them to the
validation as its context (``Registered``); a configuration built in code is taken as given.
"""

from __future__ import annotations

from typing import Any, Literal, TypedDict

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator
from pydantic_core import PydanticCustomError

from pykai.model.duration import parse_duration

Strategy = Literal["binpack", "spread"]


class Registered(TypedDict):
    """The names registered at the engine's extension points, as a validation's context:
    ``actions`` in their default order, and the placement ``policies``."""

    actions: tuple[str, ...]
    policies: tuple[str, ...]


def _registered(info: ValidationInfo, point: str) -> tuple[str, ...] | None:
    """The names registered at an extension point, if the validation was given them."""
    context = info.context
    return None if context is None else tuple(context[point])


class TypicalShape(BaseModel):
    """One typical pod shape, given rather than learnt (e.g. counted in a trace)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    cpu_milli: int = Field(alias="cpuMilli", ge=0)
    gpu_milli: int = Field(0, alias="gpuMilli", ge=0, le=1000)  # per device
    gpus: int = Field(0, ge=0)  # devices
    gpu_models: list[str] = Field(default_factory=list, alias="gpuModels")  # empty: any
    count: int = Field(gt=0)  # how many pods it stands for


class TypicalPodsConfig(BaseModel):
    """Where the typical pods of fragmentation-aware placement come from: the last ``window``
    pods the cluster has seen, or the ``shapes`` given."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    window: int = Field(1000, ge=1)
    coverage: float = Field(0.95, gt=0, le=1)
    shapes: list[TypicalShape] | None = None


class PlacementStrategy(BaseModel):
    """Where to put pods. ``gpu``: a registered placement policy's name (engine/policies: KAI's
    binpack / spread, the FGD paper's random, dotprod, clustering, packing, bestfit and fgd, or
    pykai's); ``cpu``: binpack or spread, for CPU-only pods under binpack / spread (the other
    policies place every pod)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    gpu: str = "binpack"
    cpu: Strategy = "binpack"
    typical_pods: TypicalPodsConfig = Field(default_factory=TypicalPodsConfig, alias="typicalPods")

    @field_validator("gpu", mode="before")
    @classmethod
    def _registered_policy(cls, name: Any, info: ValidationInfo) -> Any:
        """A registered policy's name, refused as a Literal of them would refuse it."""
        names = _registered(info, "policies")
        if names is not None and name not in names:
            quoted = [repr(n) for n in names]
            expected = f"{', '.join(quoted[:-1])} or {quoted[-1]}"
            raise PydanticCustomError(
                "literal_error", "Input should be {expected}", {"expected": expected}
            )
        return name


class SchedulerConfig(BaseModel):
    """The scheduler's settings."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    # the actions to run, in order, by their registered names (None: every registered action,
    # in its order: engine/actions/registry.py)
    actions: list[str] | None = None
    placement: PlacementStrategy = Field(
        default_factory=PlacementStrategy, alias="placementStrategy"
    )
    default_preempt_min_runtime: float = Field(0.0, alias="defaultPreemptMinRuntime", ge=0)
    default_reclaim_min_runtime: float = Field(0.0, alias="defaultReclaimMinRuntime", ge=0)
    stale_gang_grace_period: float = Field(60.0, alias="staleGangGracePeriod")
    max_consolidation_preemptees: int = Field(16, alias="maxConsolidationPreemptees", ge=0)
    reclaimer_saturation_multiplier: float = Field(1.0, alias="reclaimerSaturationMultiplier", ge=1)
    # seconds the victim searches of one action may take; once spent, the action stops and
    # the cycle's result says so (KAI's scenario search budgets)
    action_search_budget: float = Field(10.0, alias="actionSearchBudget", gt=0)
    # simulate every scenario, without bounds, memo or budget (the reference the fast search
    # must agree with; for tests and benchmarks)
    exhaustive_search: bool = Field(False, alias="exhaustiveSearch")
    # the scheduling shard's partition: the value of the node-pool label of the nodes, queues
    # and PodGroups it schedules ("": those without the label; None: no partition, every
    # object); read by `pykai run` (model/partition.py); the embedded cluster, which has one
    # scheduler, refuses a value
    partition_label_value: str | None = Field(
        None,
        alias="partitionLabelValue",
        max_length=63,
        pattern=r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$",
    )

    @field_validator("actions")
    @classmethod
    def _known_actions(cls, actions: list[str] | None, info: ValidationInfo) -> list[str] | None:
        known = _registered(info, "actions")
        unknown = [a for a in actions or [] if known is not None and a not in known]
        if known is not None and unknown:
            raise ValueError(f"unknown action(s) {', '.join(unknown)}; known: {', '.join(known)}")
        return actions

    @field_validator(
        "default_preempt_min_runtime",
        "default_reclaim_min_runtime",
        "stale_gang_grace_period",
        "action_search_budget",
        mode="before",
    )
    @classmethod
    def _duration(cls, value: Any) -> Any:
        return parse_duration(value) if isinstance(value, str) else value

    @property
    def consolidation_enabled(self) -> bool:
        """KAI turns consolidation off when either strategy is spread."""
        return (
            (self.actions is None or "consolidation" in self.actions)
            and self.placement.gpu == "binpack"
            and self.placement.cpu == "binpack"
        )
