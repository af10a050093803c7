"""`pykai explain` on the embedded cluster: a job that can never run and why, a placed pod's
Scheduled explanation, an evicted pod's evictor and rule, a queue's pending jobs in order
(outcomes from KAI's rules: GPUs of a pod on one node; a queue within its deserved quota
reclaims from one beyond it)."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from pykai.model.builders import node, pod, podgroup, queue
from pykai.model.meta import Obj
from tests.cli.conftest import Cli, write


def job(name: str, queue_name: str, gpus: int) -> list[Obj]:
    return [podgroup(name, queue=queue_name), pod(f"{name}-0", group=name, gpus=gpus)]


def test_a_job_bigger_than_every_node_can_never_run(cli: Cli, tmp_path: Path) -> None:
    objects = [node("n1", gpus=4), queue("q"), *job("big", "q", 8)]
    assert cli("apply", "-f", write(tmp_path, "big.yaml", objects)).code == 0
    out = cli("explain", "podgroup", "big").out
    assert "Rule:        node constraints" in out
    assert "can never run as asked" in out and "needs 8 on one node, largest free is 4" in out
    answer = json.loads(cli("explain", "pod", "big-0", "-o", "json").out)
    assert (answer["pod"], answer["podGroup"], answer["rule"]) == (
        "default/big-0",
        "default/big",
        "node constraints",
    )
    assert answer["position"] == {"inQueue": 0, "inCycle": 0, "queue": "q", "priority": 50}
    assert answer["onAnEmptyCluster"]["runs"] is False
    assert yaml.safe_load(cli("explain", "pg/big", "-o", "yaml").out)["rule"] == "node constraints"


def test_placed_and_evicted_pods_say_how_and_by_whom(cli: Cli, tmp_path: Path) -> None:
    objects = [node("n1", gpus=4), queue("a", gpu=(4, -1, 1)), queue("b", gpu=(0, -1, 1))]
    objects += job("squatter", "b", 4)
    assert cli("apply", "-f", write(tmp_path, "first.yaml", objects)).code == 0
    placed = cli("explain", "pod", "squatter-0").out
    assert placed.splitlines()[0] == "Pod default/squatter-0: placed, on node n1"
    assert "Scheduled: Successfully assigned default/squatter-0 to n1, chosen by" in placed
    assert cli("apply", "-f", write(tmp_path, "owner.yaml", job("owner", "a", 4))).code == 0
    evicted = json.loads(cli("explain", "pod", "squatter-0", "-o", "json").out)
    assert evicted["state"] == "evicted"
    assert evicted["evicted"] == ["Reclaimed by queue a for default/owner (action: reclaim)"]
    owner = json.loads(cli("explain", "podgroup", "owner", "-o", "json").out)
    assert (owner["rule"], owner["asItIs"]["runs"], owner["asItIs"]["bound"]) == (
        "none",
        True,
        False,
    )  # it waits for the evicted pod to leave, then takes its room


def test_explain_queue_shows_its_shares_and_pending_jobs(cli: Cli, tmp_path: Path) -> None:
    objects = [node("n1", gpus=2), queue("q", gpu=(2, 4, 1)), *job("one", "q", 8)]
    objects += job("two", "q", 8)
    assert cli("apply", "-f", write(tmp_path, "q.yaml", objects)).code == 0
    answer = json.loads(cli("explain", "queue", "q", "-o", "json").out)
    assert (answer["deserved"]["gpu"], answer["limit"]["gpu"]) == ("2", "4")
    assert [(p["podGroup"], p["inQueue"]) for p in answer["pending"]] == [
        ("default/one", 0),
        ("default/two", 1),
    ]
    text = cli("explain", "queue", "q").out
    assert "#1 (#1 in q) default/one: OverLimit" in text


def test_explain_refuses_other_kinds_and_missing_objects(cli: Cli) -> None:
    assert cli("explain", "node", "n1").code == 1
    missing = cli("explain", "pod", "nope")
    assert missing.code == 1 and 'pods "nope" not found' in missing.err
    assert cli("explain", "queue", "default-queue", "-o", "wide").code == 1


def test_a_pod_no_podgroup_was_made_for_says_so(cli: Cli, tmp_path: Path) -> None:
    # another scheduler's pod: the pod-grouper leaves it alone, so it has no PodGroup
    other = pod("theirs", scheduler="default-scheduler")
    assert cli("apply", "-f", write(tmp_path, "theirs.yaml", [other])).code == 0
    out = cli("explain", "pod", "theirs").out
    assert out.splitlines()[0] == "Pod default/theirs: pending"
    assert "Rule:        not grouped" in out and "schedulerName must be" in out
