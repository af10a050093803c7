"""Declarative scenarios (tests/scenarios/*/scenario.yaml), each run through the embedded
cluster — the same path as `pykai apply` — and checked again after two extra rounds so that a
flapping outcome fails. Expected outcomes are written from KAI's rules (semantics.md)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest
import yaml

from pykai.cli.manifests import read_manifests
from pykai.embedded.cluster import EmbeddedCluster
from pykai.engine.config import SchedulerConfig
from pykai.model.duration import parse_duration
from pykai.model.errors import ValidationError
from pykai.model.meta import Obj
from pykai.model.quantity import count, cpu_millis, memory_bytes

ROOT = Path(__file__).parent / "scenarios"
SCENARIOS = sorted(p.name for p in ROOT.iterdir() if (p / "scenario.yaml").exists())
KINDS = ("Pod", "Node", "Queue", "PodGroup", "PriorityClass")
STEP_KEYS = {"apply", "delete", "advance", "reject", "expect", "error_contains"}
_PARSE = {"cpu": cpu_millis, "memory": memory_bytes, "gpu": count}
_KEYS = {"cpu": "cpu", "memory": "memory", "gpu": "nvidia.com/gpu"}


def load(name: str) -> dict[str, Any]:
    scenario: dict[str, Any] = yaml.safe_load((ROOT / name / "scenario.yaml").read_text())
    return scenario


def snapshot(cluster: EmbeddedCluster) -> list[Obj]:
    return [o for kind in KINDS for o in cluster.list(kind)]


def check(cluster: EmbeddedCluster, expect: dict[str, Any], where: str) -> None:
    pods = {f"{p['metadata']['namespace']}/{p['metadata']['name']}": p for p in cluster.list("Pod")}
    for key, wanted in (expect.get("pods") or {}).items():
        pod = pods.get(key)
        node = (pod or {}).get("spec", {}).get("nodeName")
        if wanted == "Absent":
            assert pod is None, f"{where}: {key} should be gone, is on {node}"
        elif wanted == "Pending":
            assert pod is not None and not node, f"{where}: {key} should be pending, is on {node}"
        elif wanted == "Bound":
            assert pod is not None and node, f"{where}: {key} should be bound"
        else:
            assert pod is not None and node == wanted, (
                f"{where}: {key} should be on {wanted}, is on {node}"
            )
    for group in expect.get("same_node") or []:
        nodes = {pods[k]["spec"].get("nodeName") for k in group}
        assert len(nodes) == 1 and None not in nodes, (
            f"{where}: {group} should share a node: {nodes}"
        )
    for group in expect.get("different_nodes") or []:
        nodes = [pods[k]["spec"].get("nodeName") for k in group]
        assert len(set(nodes)) == len(nodes), (
            f"{where}: {group} should be on different nodes: {nodes}"
        )

    def groups_of(key: str) -> set[str]:
        labels = pods[key]["metadata"].get("labels") or {}
        return {
            v
            for k, v in labels.items()
            if k == "runai-gpu-group" or k.startswith("runai-gpu-group/")
        }

    for group in expect.get("same_gpu_group") or []:
        found = [groups_of(k) for k in group]
        assert all(f and f == found[0] for f in found), (
            f"{where}: {group} should share a GPU group: {found}"
        )
    for group in expect.get("different_gpu_groups") or []:
        found = [frozenset(groups_of(k)) for k in group]
        assert all(found) and len(set(found)) == len(found), (
            f"{where}: {group} should not share: {found}"
        )
    for key, wanted_groups in (expect.get("gpu_groups") or {}).items():
        assert len(groups_of(key)) == wanted_groups, f"{where}: {key}: {wanted_groups} GPU group(s)"
    for name, figures in (expect.get("queues") or {}).items():
        queue = cluster.get("Queue", name)
        assert queue is not None, f"{where}: queue {name} missing"
        for field, amounts in figures.items():
            status = (queue.get("status") or {}).get(field) or {}
            for resource, value in amounts.items():
                actual = _PARSE[resource](status.get(_KEYS[resource], "0"))
                assert math.isclose(actual, value, rel_tol=1e-6, abs_tol=1e-6), (
                    f"{where}: queue {name} {field}.{resource} is {actual}, expected {value}"
                )
    for key, wanted in (expect.get("podgroups") or {}).items():
        namespace, name = key.split("/")
        reasons = _reasons(cluster, name, namespace)
        if not wanted["reasons"]:
            assert not reasons, f"{where}: {key} should have no unschedulable reason, has {reasons}"
        for reason in wanted["reasons"]:
            assert reason in [r for r, _ in reasons], (
                f"{where}: {key} lacks {reason}; has {reasons}"
            )
    for key, text in (expect.get("message_contains") or {}).items():
        namespace, name = key.split("/")
        messages = [m for _, m in _reasons(cluster, name, namespace)]
        assert any(text in m for m in messages), (
            f"{where}: no message of {key} contains {text!r}: {messages}"
        )


def _reasons(cluster: EmbeddedCluster, name: str, namespace: str) -> list[tuple[str, str]]:
    group = cluster.get("PodGroup", name, namespace)
    assert group is not None, f"podgroup {namespace}/{name} missing"
    conditions = (group.get("status") or {}).get("schedulingConditions") or []
    return [(r["reason"], r["message"]) for c in conditions for r in c.get("reasons") or []]


@pytest.mark.parametrize("name", SCENARIOS)
def test_scenario(name: str, tmp_path: Path) -> None:
    scenario = load(name)
    config = SchedulerConfig.model_validate(scenario["config"]) if scenario.get("config") else None
    cluster = EmbeddedCluster.open(tmp_path / "cluster.db", config=config)
    folder = ROOT / name
    last: dict[str, Any] = {}
    for number, step in enumerate(scenario["steps"], start=1):
        where = f"{name} step {number}"
        if "apply" in step:
            cluster.apply(read_manifests([str(folder / f) for f in step["apply"]]))
        if "delete" in step:
            for target in step["delete"]:
                assert cluster.delete(
                    target["kind"], target["name"], target.get("namespace", "default")
                )
        if "advance" in step:
            cluster.advance(parse_duration(step["advance"]))
        if "reject" in step:
            before = snapshot(cluster)
            with pytest.raises(ValidationError) as error:
                cluster.apply(read_manifests([str(folder / f) for f in step["reject"]]))
            assert step["error_contains"] in str(error.value), f"{where}: {error.value}"
            assert snapshot(cluster) == before, f"{where}: a rejected apply changed the cluster"
        if "expect" in step:
            last = step["expect"]
            check(cluster, last, where)
    cluster.schedule(cycles=2)
    check(cluster, last, f"{name} after 2 more rounds")


def test_every_scenario_is_well_formed() -> None:
    assert len(SCENARIOS) >= 30
    for name in SCENARIOS:
        scenario = load(name)
        assert scenario.get("description") and scenario.get("semantics"), name
        steps = scenario["steps"]
        assert (steps and "expect" in steps[-1]) or "reject" in steps[-1], name
        for step in steps:
            assert set(step) <= STEP_KEYS, f"{name}: unknown keys {set(step) - STEP_KEYS}"
            for file in [*step.get("apply", []), *step.get("reject", [])]:
                assert (ROOT / name / file).exists(), f"{name}: {file} missing"
