"""Reading the scheduler's settings (engine/settings.py) as users write them: KAI's
SchedulingShard (kai.scheduler/v1) or a plain mapping with the same field names as
``SchedulerConfig``. The names it accepts for actions and placement policies are those their
registrations give (engine/actions/registry.py, engine/policies/), and an action's default
priority is KAI's, by its place in that registration.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from pydantic import ValidationError as PydanticError

from pykai.engine.settings import Registered, SchedulerConfig
from pykai.model.errors import FieldProblem, ValidationError
from pykai.model.pydantic_errors import problems_from
from pykai.model.shard import SchedulingShardSpec


@cache
def registered() -> Registered:
    """What a configuration may name: the validation's context. The registries (and the engine
    with them) load when a configuration is first read, not with this module: the webhook and
    the object validation import it for SchedulingShards."""
    from pykai.engine.actions.registry import ACTIONS
    from pykai.engine.policies import POLICIES

    return {"actions": tuple(ACTIONS), "policies": tuple(POLICIES)}


def default_action_priority(name: str) -> int:
    """KAI's default priority of an action: 500 for the first registered, 100 less for each
    next one (0 for a name not registered)."""
    names = registered()["actions"]
    return 500 - 100 * names.index(name) if name in names else 0


def config_from_mapping(data: dict[str, Any], source: str = "scheduler config") -> SchedulerConfig:
    """Read a plain config mapping or a SchedulingShard object; errors name the field."""
    if data.get("kind") == "SchedulingShard":
        return _from_shard(data)
    try:
        return SchedulerConfig.model_validate(data, context=registered())
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


def _from_shard(shard: dict[str, Any]) -> SchedulerConfig:
    """Map KAI's SchedulingShard spec (placementStrategy, actions, minRuntime, args)."""
    name = str((shard.get("metadata") or {}).get("name", "default"))
    spec = shard.get("spec") or {}
    try:
        SchedulingShardSpec.model_validate(spec)  # KAI's field types first
    except PydanticError as exc:
        raise ValidationError(problems_from(exc, "SchedulingShard", name, "spec")) from exc
    data: dict[str, Any] = {}
    if "placementStrategy" in spec:
        data["placementStrategy"] = spec["placementStrategy"]
    actions = spec.get("actions")
    if isinstance(actions, dict):
        enabled = []
        for action, raw in actions.items():
            settings = raw or {}
            if settings.get("enabled", True):
                priority = settings.get("priority", default_action_priority(action))
                enabled.append((-int(priority), action))
        for action in registered()["actions"]:
            if action not in actions:
                enabled.append((-default_action_priority(action), action))
        data["actions"] = [a for _, a in sorted(enabled)]
    runtime = spec.get("minRuntime") or {}
    if "preemptMinRuntime" in runtime:
        data["defaultPreemptMinRuntime"] = runtime["preemptMinRuntime"]
    if "reclaimMinRuntime" in runtime:
        data["defaultReclaimMinRuntime"] = runtime["reclaimMinRuntime"]
    args = spec.get("args") or {}
    if "default-staleness-grace-period" in args:
        data["staleGangGracePeriod"] = args["default-staleness-grace-period"]
    if "max-consolidation-preemptees" in args:
        data["maxConsolidationPreemptees"] = int(args["max-consolidation-preemptees"])
    proportion = ((spec.get("plugins") or {}).get("proportion") or {}).get("arguments") or {}
    for key in (
        "relcaimerSaturationMultiplier",
        "reclaimerSaturationMultiplier",
    ):  # KAI's spelling first
        if key in proportion:
            data["reclaimerSaturationMultiplier"] = float(proportion[key])
    try:
        return SchedulerConfig.model_validate(data, context=registered())
    except PydanticError as exc:
        raise ValidationError(problems_from(exc, "SchedulingShard", name, "spec")) from exc
    except ValueError as exc:
        raise ValidationError([FieldProblem("SchedulingShard", name, "spec", str(exc))]) from exc
