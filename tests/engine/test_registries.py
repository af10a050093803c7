"""One registration per extension point: the actions (engine/actions/registry.py) and the
placement policies (engine/policies/) are listed once, by name; the configuration accepts
exactly those names, each one runs, and the lists kept elsewhere (the Helm chart's schema, the
simulator's policies) name only registered ones."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pykai.engine.actions.registry import ACTIONS
from pykai.engine.config import config_from_mapping, default_action_priority, registered
from pykai.engine.policies import POLICIES, PlacementPolicy, policy_for
from pykai.engine.scheduler import Scheduler
from pykai.engine.settings import PlacementStrategy, SchedulerConfig
from pykai.engine.state import ClusterState
from pykai.model.builders import node, pod, podgroup, queue
from pykai.model.errors import ValidationError
from pykai.sim import replay

CHART_SCHEMA = Path(__file__).resolve().parents[2] / "deploy/helm/pykai/values.schema.json"


def test_the_configuration_accepts_exactly_the_registered_actions_in_their_order() -> None:
    assert registered()["actions"] == tuple(ACTIONS)
    assert [default_action_priority(a) for a in ACTIONS] == [500, 400, 300, 200, 100]
    for config in (SchedulerConfig(), config_from_mapping({})):  # by default, all of them
        assert config.actions is None
        result = Scheduler(config).run_cycle(ClusterState(), 1_000_000.0)
        assert list(result.action_timings) == list(ACTIONS)  # in KAI's order
    with pytest.raises(ValidationError, match=f"known: {', '.join(ACTIONS)}$"):
        config_from_mapping({"actions": ["steal"]})


@pytest.mark.parametrize("name", list(ACTIONS))
def test_each_registered_action_runs_when_configured_alone(name: str) -> None:
    config = config_from_mapping({"actions": [name]})
    state = ClusterState()
    for obj in (node("n1", gpus=1), queue("q"), podgroup("g", queue="q"), pod("p", group="g")):
        state.upsert(obj)
    result = Scheduler(config).run_cycle(state, 1_000_000.0)
    assert list(result.action_timings) == [name]


def test_the_configuration_accepts_exactly_the_registered_policies() -> None:
    assert registered()["policies"] == tuple(POLICIES)
    expected = ", ".join(repr(n) for n in POLICIES).rsplit(", ", 1)
    with pytest.raises(ValidationError, match=f"Input should be {' or '.join(expected)}, got"):
        config_from_mapping({"placementStrategy": {"gpu": "pack"}})


@pytest.mark.parametrize("name", list(POLICIES))
def test_each_registered_policy_is_made_when_named(name: str) -> None:
    strategy = config_from_mapping({"placementStrategy": {"gpu": name}}).placement
    assert strategy == PlacementStrategy(gpu=name)
    assert isinstance(policy_for(strategy), PlacementPolicy)


def test_the_lists_kept_elsewhere_name_registered_ones() -> None:
    """The Helm chart checks its values against the actions' names; the simulator replays the
    FGD paper's policies and pykai's."""
    schema = json.loads(CHART_SCHEMA.read_text())["properties"]
    shard_actions = schema["scheduler"]["properties"]["actions"]["propertyNames"]["enum"]
    config_actions = schema["schedulerConfig"]["properties"]["actions"]["items"]["enum"]
    assert shard_actions == config_actions == list(ACTIONS)
    gpu = schema["schedulerConfig"]["properties"]["placementStrategy"]["properties"]["gpu"]
    assert gpu == {"$ref": "#/definitions/gpuPolicy"}
    definitions = json.loads(CHART_SCHEMA.read_text())["definitions"]
    assert definitions["gpuPolicy"]["enum"] == list(POLICIES)
    assert set(replay.POLICIES) <= set(POLICIES)
