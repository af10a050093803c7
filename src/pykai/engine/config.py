"""Scheduler configuration: actions, placement strategy, min-runtime defaults and limits.

It can be written as KAI's SchedulingShard (kai.scheduler/v1) or as a plain mapping with the
same field names as ``SchedulerConfig``.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator
from pydantic import ValidationError as PydanticError

from pykai.model.duration import parse_duration
from pykai.model.errors import FieldProblem, ValidationError
from pykai.model.pydantic_errors import problems_from
from pykai.model.shard import SchedulingShardSpec

ACTION_NAMES = ("allocate", "consolidation", "reclaim", "preempt", "stalegangeviction")
DEFAULT_ACTION_PRIORITY = {name: 500 - 100 * i for i, name in enumerate(ACTION_NAMES)}
Strategy = Literal["binpack", "spread"]
# KAI's two, the FGD paper's policies, and pykai's (engine/policies/)
GpuStrategy = Literal[
    "binpack", "spread", "random", "dotprod", "clustering", "packing", "bestfit", "fgd", "pykai"
]


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
    """Where to put pods. ``gpu``: KAI's binpack / spread, one of the FGD paper's policies
    (random, dotprod, clustering, packing, bestfit, fgd) or pykai's; ``cpu``: binpack or
    spread, for CPU-only pods under binpack / spread (the other policies place every pod)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    gpu: GpuStrategy = "binpack"
    cpu: Strategy = "binpack"
    typical_pods: TypicalPodsConfig = Field(default_factory=TypicalPodsConfig, alias="typicalPods")


class SchedulerConfig(BaseModel):
    """The scheduler's settings."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    actions: list[str] = Field(default_factory=lambda: list(ACTION_NAMES))
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

    @field_validator("actions")
    @classmethod
    def _known_actions(cls, actions: list[str]) -> list[str]:
        unknown = [a for a in actions if a not in ACTION_NAMES]
        if unknown:
            raise ValueError(
                f"unknown action(s) {', '.join(unknown)}; known: {', '.join(ACTION_NAMES)}"
            )
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
            "consolidation" in self.actions
            and self.placement.gpu == "binpack"
            and self.placement.cpu == "binpack"
        )


def config_from_mapping(data: dict[str, Any], source: str = "scheduler config") -> SchedulerConfig:
    """Read a plain config mapping or a SchedulingShard object; errors name the field."""
    if data.get("kind") == "SchedulingShard":
        return _from_shard(data)
    try:
        return SchedulerConfig.model_validate(data)
    except PydanticError as exc:
        raise ValidationError(problems_from(exc, "SchedulerConfig", source, "")) from exc


def config_from_documents(documents: list[dict[str, Any]], source: str) -> SchedulerConfig:
    """One configuration from several (plain mappings or SchedulingShards), each overriding
    the fields it sets in the ones before it: the Helm chart writes pykai's schedulerConfig,
    then a SchedulingShard made of KAI's scheduler values."""
    config = SchedulerConfig()
    for document in documents:
        layer = config_from_mapping(document, source)
        config = config.model_copy(update={f: getattr(layer, f) for f in layer.model_fields_set})
    return config


_NOT_YET = {  # KAI's fields pykai does not act on yet, and what it would need to
    "kValue": "time-based fair share (pykai's fair share does not weigh past usage)",
    "usageDBConfig": "time-based fair share (pykai reads no usage history)",
    "queueDepthPerAction": "a depth per action (every action tries every pending job)",
}


def _from_shard(shard: dict[str, Any]) -> SchedulerConfig:
    """Map KAI's SchedulingShard spec (placementStrategy, actions, minRuntime, args, the
    proportion plugin's arguments); an error names the shard's own field."""
    name = str((shard.get("metadata") or {}).get("name", "default"))
    spec = shard.get("spec") or {}
    try:
        SchedulingShardSpec.model_validate(spec)  # KAI's field types first
    except PydanticError as exc:
        raise ValidationError(problems_from(exc, "SchedulingShard", name, "spec")) from exc
    unsupported = [
        FieldProblem(
            "SchedulingShard",
            name,
            f"spec.{field}",
            f"is not supported yet: {what}",
            f"remove spec.{field}",
        )
        for field, what in _NOT_YET.items()
        if spec.get(field) is not None
    ]
    if unsupported:
        raise ValidationError(unsupported)
    data, fields = _shard_settings(spec)
    try:
        return SchedulerConfig.model_validate(data)
    except PydanticError as exc:
        problems = problems_from(exc, "SchedulingShard", name, "")
        raise ValidationError([_in_shard(p, fields) for p in problems]) from exc


def _shard_settings(spec: dict[str, Any]) -> tuple[dict[str, Any], dict[str, str]]:
    """A shard's settings as the plain config's fields (values as written: the config's own
    validation reads them), and where in the shard each field was written."""
    data: dict[str, Any] = {}
    fields = {"placementStrategy": "spec.placementStrategy", "actions": "spec.actions"}
    if "placementStrategy" in spec:
        data["placementStrategy"] = spec["placementStrategy"]
    actions = spec.get("actions")
    if isinstance(actions, dict):
        enabled = []
        for action, raw in actions.items():
            settings = raw or {}
            if settings.get("enabled") is not False:  # unset: enabled, as KAI reads it
                priority = settings.get("priority")
                if priority is None:
                    priority = DEFAULT_ACTION_PRIORITY.get(action, 0)
                enabled.append((-int(priority), action))
        for action in ACTION_NAMES:
            if action not in actions:
                enabled.append((-DEFAULT_ACTION_PRIORITY[action], action))
        data["actions"] = [a for _, a in sorted(enabled)]
    written = (
        ("minRuntime", "preemptMinRuntime", "defaultPreemptMinRuntime"),
        ("minRuntime", "reclaimMinRuntime", "defaultReclaimMinRuntime"),
        ("args", "default-staleness-grace-period", "staleGangGracePeriod"),
        ("args", "max-consolidation-preemptees", "maxConsolidationPreemptees"),
    )
    for section, key, field in written:
        values = spec.get(section) or {}
        if key in values:
            data[field], fields[field] = values[key], f"spec.{section}.{key}"
    proportion = ((spec.get("plugins") or {}).get("proportion") or {}).get("arguments") or {}
    for key in ("relcaimerSaturationMultiplier", "reclaimerSaturationMultiplier"):  # KAI's first
        if key in proportion:
            data["reclaimerSaturationMultiplier"] = proportion[key]
            fields["reclaimerSaturationMultiplier"] = f"spec.plugins.proportion.arguments.{key}"
    return data, fields


def _in_shard(problem: FieldProblem, fields: dict[str, str]) -> FieldProblem:
    """A problem of the plain config's field, named as the shard wrote it."""
    first, dot, rest = problem.field.removeprefix(".").partition(".")
    return replace(problem, field=fields.get(first, f"spec.{first}") + dot + rest)
