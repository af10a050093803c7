"""kai.scheduler/v1 SchedulingShard: the scheduler's settings for a partition of the cluster.
pykai reads ``placementStrategy``, ``actions``, ``minRuntime``, ``args`` and the proportion
plugin's arguments (engine/config.py); the other fields are KAI's, kept as written."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from pykai.model.apitypes import API_CONFIG, Int64, Timestamp


class ActionConfig(BaseModel):
    """One action's settings."""

    model_config = API_CONFIG

    enabled: bool | None = None
    """Whether the action runs (default true)."""
    priority: int | None = None
    """Actions of higher priority run first (allocate 500, consolidation 400, reclaim 300,
    preempt 200, stalegangeviction 100)."""


class PluginConfig(BaseModel):
    """One plugin's settings."""

    model_config = API_CONFIG

    enabled: bool | None = None
    """Whether the plugin runs (default true)."""
    priority: int | None = None
    """Plugins of higher priority run first."""
    arguments: dict[str, str] | None = None
    """The plugin's arguments; given, they replace its defaults."""


class MinRuntime(BaseModel):
    """How long a job runs before it may be evicted, unless its queue says otherwise."""

    model_config = API_CONFIG

    preempt_min_runtime: str | None = Field(None, alias="preemptMinRuntime")
    """Before it may be preempted (a duration)."""
    reclaim_min_runtime: str | None = Field(None, alias="reclaimMinRuntime")
    """Before it may be reclaimed (a duration)."""


class TypicalShape(BaseModel):
    """One typical pod shape, given rather than learnt (e.g. counted in a trace)."""

    model_config = API_CONFIG

    cpu_milli: Int64 | None = Field(None, alias="cpuMilli")
    """CPU of the pod, in millicores."""
    gpu_milli: Int64 | None = Field(None, alias="gpuMilli")
    """Its portion of each GPU, in thousandths."""
    gpus: Int64 | None = None
    """How many GPUs it takes."""
    gpu_models: list[str] | None = Field(None, alias="gpuModels")
    """The GPU models it may run on (empty: any)."""
    count: Int64 | None = None
    """How many pods it stands for."""


class TypicalPods(BaseModel):
    """The typical pods of fragmentation-aware placement (fgd, pykai): the last ``window`` pods
    the cluster has seen, or the ``shapes`` given (pykai's field)."""

    model_config = API_CONFIG

    window: Int64 | None = None
    """How many of the pods seen most recently make the distribution."""
    coverage: float | None = None
    """The share of those pods the most frequent shapes must cover (0 to 1)."""
    shapes: list[TypicalShape] | None = None
    """Shapes given instead of learnt."""


class PlacementStrategy(BaseModel):
    """Where pods go: binpack (fill nodes up), spread (keep them even), or a
    fragmentation-aware policy."""

    model_config = API_CONFIG

    cpu: str | None = None
    """For CPU-only pods: binpack or spread."""
    gpu: str | None = None
    """For GPU pods: binpack, spread, fgd, pykai, or the FGD paper's random, dotprod,
    clustering, packing, bestfit."""
    typical_pods: TypicalPods | None = Field(None, alias="typicalPods")
    """Where fgd and pykai take the typical pods from (pykai's field)."""


class UsageParams(BaseModel):
    """How past usage is read and weighed."""

    model_config = API_CONFIG

    window_size: str | None = Field(None, alias="windowSize")
    """The window of usage counted (a duration)."""
    window_type: str | None = Field(None, alias="windowType")
    """sliding, tumbling or cron."""
    tumbling_window_start_time: Timestamp | None = Field(None, alias="tumblingWindowStartTime")
    """When tumbling windows start."""
    cron_string: str | None = Field(None, alias="cronString")
    """When cron windows start."""
    half_life_period: str | None = Field(None, alias="halfLifePeriod")
    """The half life of past usage (none: no decay)."""
    fetch_interval: str | None = Field(None, alias="fetchInterval")
    """How often usage is read."""
    staleness_period: str | None = Field(None, alias="stalenessPeriod")
    """How old usage may be."""
    wait_timeout: str | None = Field(None, alias="waitTimeout")
    """How long to wait for usage."""
    extra_params: dict[str, str] | None = Field(None, alias="extraParams")
    """Settings of a particular usage client."""


class UsageDBConfig(BaseModel):
    """Where past usage of the queues is read from."""

    model_config = API_CONFIG

    client_type: str = Field(alias="clientType")
    """The kind of usage database."""
    connection_string: str | None = Field(None, alias="connectionString")
    """Where it is."""
    connection_string_env_var: str | None = Field(None, alias="connectionStringEnvVar")
    """An environment variable holding where it is."""
    usage_params: UsageParams | None = Field(None, alias="usageParams")
    """How usage is read and weighed."""


class SchedulingShardSpec(BaseModel):
    """The scheduler's settings."""

    model_config = API_CONFIG

    placement_strategy: PlacementStrategy | None = Field(None, alias="placementStrategy")
    """binpack or spread, for GPU and CPU pods."""
    actions: dict[str, ActionConfig] | None = None
    """Settings per action (allocate, consolidation, reclaim, preempt, stalegangeviction)."""
    plugins: dict[str, PluginConfig] | None = None
    """Settings per plugin."""
    min_runtime: MinRuntime | None = Field(None, alias="minRuntime")
    """How long jobs run before they may be evicted."""
    args: dict[str, str] | None = None
    """Scheduler flags by name (default-staleness-grace-period, max-consolidation-preemptees)."""
    k_value: float | None = Field(None, alias="kValue")
    """The proportion plugin's k."""
    partition_label_value: str | None = Field(None, alias="partitionLabelValue")
    """The value of the partition label of the shard's nodes."""
    queue_depth_per_action: dict[str, int] | None = Field(None, alias="queueDepthPerAction")
    """The most jobs an action tries per queue."""
    usage_db_config: UsageDBConfig | None = Field(None, alias="usageDBConfig")
    """Where past usage is read from."""


class Condition(BaseModel):
    """A condition, in Kubernetes' standard form (metav1.Condition)."""

    model_config = API_CONFIG

    type: str = Field(
        max_length=316,
        pattern=r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
        r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$",
    )
    """The condition's name, CamelCase or domain/CamelCase."""
    status: Literal["True", "False", "Unknown"]
    """True, False or Unknown."""
    reason: str = Field(
        min_length=1, max_length=1024, pattern=r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$"
    )
    """Why, in one CamelCase word."""
    message: str = Field(max_length=32768)
    """Details for people."""
    last_transition_time: Timestamp = Field(alias="lastTransitionTime")
    """When the status last changed."""
    observed_generation: Int64 | None = Field(None, alias="observedGeneration", ge=0)
    """The object's generation the condition was set from."""


class SchedulingShardStatus(BaseModel):
    """The shard's conditions."""

    model_config = API_CONFIG

    conditions: list[Condition] | None = None
    """The shard's conditions."""
