"""Scheduler configuration from KAI's SchedulingShard, and its validation."""

from __future__ import annotations

import pytest

from pykai.engine.config import config_from_documents, config_from_mapping
from pykai.model.errors import ValidationError
from pykai.model.meta import Obj


def shard(spec: dict) -> dict:  # type: ignore[type-arg]
    return {
        "apiVersion": "kai.scheduler/v1",
        "kind": "SchedulingShard",
        "metadata": {"name": "default"},
        "spec": spec,
    }


def test_shard_maps_every_setting() -> None:
    config = config_from_mapping(
        shard(
            {
                "placementStrategy": {"gpu": "spread", "cpu": "binpack"},
                "actions": {"consolidation": {"enabled": False}, "preempt": {"priority": 600}},
                "minRuntime": {"preemptMinRuntime": "2m", "reclaimMinRuntime": "30s"},
                "args": {
                    "default-staleness-grace-period": "90s",
                    "max-consolidation-preemptees": "4",
                },
                "plugins": {"proportion": {"arguments": {"relcaimerSaturationMultiplier": "1.5"}}},
            }
        )
    )
    assert config.actions == ["preempt", "allocate", "reclaim", "stalegangeviction"]
    assert (config.placement.gpu, config.placement.cpu) == ("spread", "binpack")
    assert not config.consolidation_enabled
    assert (config.default_preempt_min_runtime, config.default_reclaim_min_runtime) == (120, 30)
    assert (config.stale_gang_grace_period, config.max_consolidation_preemptees) == (90, 4)
    assert config.reclaimer_saturation_multiplier == 1.5


@pytest.mark.parametrize(
    ("spec", "field"),
    [
        ({"placementStrategy": {"gpu": "pack"}}, "spec.placementStrategy.gpu"),
        ({"minRuntime": {"preemptMinRuntime": "soon"}}, "not a duration"),
        (
            {"plugins": {"proportion": {"arguments": {"relcaimerSaturationMultiplier": "0.5"}}}},
            "spec.plugins.proportion.arguments.relcaimerSaturationMultiplier",
        ),
        # KAI's schema: plugin arguments are strings, args strings, action priorities integers
        (
            {"plugins": {"proportion": {"arguments": {"relcaimerSaturationMultiplier": 1.5}}}},
            "spec.plugins.proportion.arguments.relcaimerSaturationMultiplier",
        ),
        ({"actions": {"reclaim": {"priority": "first"}}}, "spec.actions.reclaim.priority"),
    ],
)
def test_invalid_shard_is_rejected_naming_the_field(spec: dict, field: str) -> None:  # type: ignore[type-arg]
    with pytest.raises(ValidationError, match=field.replace(".", r"\.")):
        config_from_mapping(shard(spec))


def test_plain_mapping_rejects_unknown_actions() -> None:
    with pytest.raises(ValidationError, match="unknown action"):
        config_from_mapping({"actions": ["allocate", "steal"]})


def test_later_documents_override_only_the_fields_they_set() -> None:
    """The Helm chart's file: pykai's schedulerConfig, then a SchedulingShard of KAI's values."""
    plain = {"maxConsolidationPreemptees": 4, "placementStrategy": {"gpu": "binpack"}}
    kai = shard({"placementStrategy": {"gpu": "spread", "cpu": "spread"}})
    config = config_from_documents([plain, kai], "config.yaml")
    assert (config.placement.gpu, config.placement.cpu) == ("spread", "spread")
    assert config.max_consolidation_preemptees == 4  # not set by the shard: kept
    assert config.stale_gang_grace_period == 60  # set by neither: the default
    again = config_from_documents([kai, {"placementStrategy": {"gpu": "binpack"}}], "c.yaml")
    assert (again.placement.gpu, again.placement.cpu) == ("binpack", "binpack")
    with pytest.raises(ValidationError, match="maxConsolidationPreemptees"):
        config_from_documents([plain, {"maxConsolidationPreemptees": -1}], "config.yaml")


@pytest.mark.parametrize(
    ("spec", "field", "message"),
    [
        ({"args": {"max-consolidation-preemptees": "16x"}}, "args.max-consolidation-", "integer"),
        ({"args": {"default-staleness-grace-period": "soon"}}, "args.default-staleness-", "soon"),
        ({"minRuntime": {"preemptMinRuntime": "soon"}}, "minRuntime.preemptMinRuntime", "soon"),
        (
            {"plugins": {"proportion": {"arguments": {"reclaimerSaturationMultiplier": "x"}}}},
            "plugins.proportion.arguments.reclaimerSaturationMultiplier",
            "number",
        ),
        ({"placementStrategy": {"cpu": "fgd"}}, "placementStrategy.cpu", "'binpack' or 'spread'"),
    ],
)
def test_a_shard_error_names_the_shards_field_and_what_it_takes(
    spec: dict,
    field: str,
    message: str,  # type: ignore[type-arg]
) -> None:
    """The field as the SchedulingShard writes it, never pykai's own name nor Python's
    ValueError text."""
    with pytest.raises(ValidationError) as caught:
        config_from_mapping(shard(spec))
    text = str(caught.value)
    assert f'SchedulingShard "default": spec.{field}' in text and message in text, text
    assert "ValueError" not in text and "invalid literal" not in text


@pytest.mark.parametrize("field", ["kValue", "usageDBConfig", "queueDepthPerAction"])
def test_settings_pykai_does_not_act_on_yet_are_refused(field: str) -> None:
    """Time-based fair share (kValue, usageDBConfig) and queueDepthPerAction: refused where
    the scheduler's configuration is read (apply, the webhook, pykai run's config file),
    never parsed and silently ignored."""
    value = {"kValue": 2.0, "usageDBConfig": {"clientType": "prometheus"}}.get(
        field, {"allocate": 10}
    )
    with pytest.raises(ValidationError, match=rf"spec\.{field}: is not supported yet"):
        config_from_documents([{"maxConsolidationPreemptees": 4}, shard({field: value})], "c.yaml")


@pytest.mark.parametrize(
    ("spec", "field"),
    [
        ({"args": {"schedule-period": "1s"}}, "spec.args.schedule-period"),
        ({"args": {"full-hierarchy-fairness": "false"}}, "spec.args.full-hierarchy-fairness"),
        ({"plugins": {"gpupack": {"enabled": False}}}, "spec.plugins.gpupack.enabled"),
        ({"plugins": {"priority": {"priority": 3}}}, "spec.plugins.priority.priority"),
        (
            {"plugins": {"proportion": {"arguments": {"kValue": "1"}}}},
            "spec.plugins.proportion.arguments.kValue",
        ),
        (
            {"plugins": {"nodeplacement": {"arguments": {"gpu": "spread"}}}},
            "spec.plugins.nodeplacement.arguments.gpu",
        ),
    ],
)
def test_shard_args_and_plugins_pykai_does_not_read_are_refused(spec: Obj, field: str) -> None:
    """No setting silently ignored: a scheduler flag or a plugin setting pykai would not act
    on is refused, naming the shard's field."""
    with pytest.raises(ValidationError) as caught:
        config_from_mapping(shard(spec))
    assert f'SchedulingShard "default": {field}' in str(caught.value), caught.value


def test_shard_args_and_plugins_pykai_reads_are_accepted() -> None:
    config = config_from_mapping(
        shard(
            {
                "args": {"default-staleness-grace-period": "30s"},
                "plugins": {
                    "proportion": {"arguments": {"reclaimerSaturationMultiplier": "1.5"}},
                    "gpupack": {"enabled": True},  # changes nothing
                },
            }
        )
    )
    assert config.stale_gang_grace_period == 30.0
    assert config.reclaimer_saturation_multiplier == 1.5


def test_partition_label_value_is_read_and_checked() -> None:
    assert config_from_mapping(shard({"partitionLabelValue": "pool-a"})).partition_label_value == (
        "pool-a"
    )
    assert config_from_mapping(shard({"partitionLabelValue": ""})).partition_label_value == ""
    assert config_from_mapping(shard({})).partition_label_value is None  # no partition
    with pytest.raises(ValidationError, match=r"spec\.partitionLabelValue"):
        config_from_mapping(shard({"partitionLabelValue": "not a label value"}))
