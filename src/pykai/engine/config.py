"""Reading the scheduler's settings (engine/settings.py) as users write them: KAI's
SchedulingShard (kai.scheduler/v1) or a plain mapping with the same field names as
``SchedulerConfig``. The names it accepts for actions and placement policies are those their
registrations give (engine/actions/registry.py, engine/policies/), and an action's default
priority is KAI's, by its place in that registration.
"""

from __future__ import annotations

from dataclasses import replace
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
    unsupported += _unread(name, spec)
    if unsupported:
        raise ValidationError(unsupported)
    data, fields = _shard_settings(spec)
    try:
        return SchedulerConfig.model_validate(data, context=registered())
    except PydanticError as exc:
        problems = problems_from(exc, "SchedulingShard", name, "")
        raise ValidationError([_in_shard(p, fields) for p in problems]) from exc


READ_ARGS = ("default-staleness-grace-period", "max-consolidation-preemptees")
"""The scheduler flags of a shard's ``args`` that pykai reads."""
READ_ARGUMENTS = {"proportion": ("reclaimerSaturationMultiplier", "relcaimerSaturationMultiplier")}
"""The plugin arguments pykai reads (KAI's misspelt name first)."""
_ARG_ELSEWHERE = {
    "schedule-period": "set the cycle with `pykai run --period` (the chart: period)",
    "leader-elect": "use `pykai run --leader-elect`",
    "partition-label-value": "set spec.partitionLabelValue",
}


def _unread(name: str, spec: dict[str, Any]) -> list[FieldProblem]:
    """The shard's ``args`` and ``plugins`` entries pykai would not act on: refused, never
    silently ignored. A plugin entry that only says ``enabled: true`` changes nothing and is
    accepted; pykai's plugins are KAI's default set, always on."""
    problems = []
    for key in (spec.get("args") or {}) if isinstance(spec.get("args"), dict) else ():
        if key not in READ_ARGS:
            hint = _ARG_ELSEWHERE.get(str(key), f"remove it; pykai reads {', '.join(READ_ARGS)}")
            problems.append(
                FieldProblem(
                    "SchedulingShard", name, f"spec.args.{key}", "is not read by pykai", hint
                )
            )
    plugins = spec.get("plugins") if isinstance(spec.get("plugins"), dict) else {}
    for plugin, raw in (plugins or {}).items():
        settings = raw if isinstance(raw, dict) else {}
        known = READ_ARGUMENTS.get(str(plugin), ())
        for key in settings.get("arguments") or {}:
            if key not in known:
                problems.append(
                    FieldProblem(
                        "SchedulingShard",
                        name,
                        f"spec.plugins.{plugin}.arguments.{key}",
                        "is not read by pykai",
                        "remove it; pykai reads only spec.plugins.proportion.arguments."
                        "reclaimerSaturationMultiplier",
                    )
                )
        for key in ("enabled", "priority"):
            if key in settings and not (key == "enabled" and settings[key] is True):
                problems.append(
                    FieldProblem(
                        "SchedulingShard",
                        name,
                        f"spec.plugins.{plugin}.{key}",
                        "cannot change pykai's plugins: KAI's default set always runs, in "
                        "KAI's order",
                        f"remove spec.plugins.{plugin}.{key}",
                    )
                )
    return problems


def _shard_settings(spec: dict[str, Any]) -> tuple[dict[str, Any], dict[str, str]]:
    """A shard's settings as the plain config's fields (values as written: the config's own
    validation reads them), and where in the shard each field was written."""
    data: dict[str, Any] = {}
    fields = {"placementStrategy": "spec.placementStrategy", "actions": "spec.actions"}
    if "placementStrategy" in spec:
        data["placementStrategy"] = spec["placementStrategy"]
    if spec.get("partitionLabelValue") is not None:
        data["partitionLabelValue"] = spec["partitionLabelValue"]
        fields["partitionLabelValue"] = "spec.partitionLabelValue"
    actions = spec.get("actions")
    if isinstance(actions, dict):
        enabled = []
        for action, raw in actions.items():
            settings = raw or {}
            if settings.get("enabled") is not False:  # unset: enabled, as KAI reads it
                priority = settings.get("priority")
                if priority is None:
                    priority = default_action_priority(action)
                enabled.append((-int(priority), action))
        for action in registered()["actions"]:
            if action not in actions:
                enabled.append((-default_action_priority(action), action))
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
