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
from tests.cli.conftest import EXAMPLES, Cli, write


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


KUEUE_SETUP = EXAMPLES / "kueue/kueue-docs/single-clusterqueue-setup.yaml"  # cpu 9, memory 36Gi


def sample_job(name: str, *, cpu: str = "1", queue_name: str = "user-queue") -> Obj:
    """Kueue's sample Job (3 pods of ``cpu``), named, in LocalQueue ``queue_name``."""
    (found,) = yaml.safe_load_all((EXAMPLES / "kueue/kueue-docs/sample-job.yaml").read_text())
    found["metadata"] = {
        "name": name,
        "namespace": "default",
        "labels": {"kueue.x-k8s.io/queue-name": queue_name},
    }
    found["spec"]["template"]["spec"]["containers"][0]["resources"]["requests"]["cpu"] = cpu
    return dict(found)


def kueue_answer(cli: Cli, *target: str) -> dict[str, object]:
    found: dict[str, object] = json.loads(cli("explain", *target, "-o", "json").out)["kueue"]
    return found


def test_explain_a_job_kueue_admitted_and_ones_pending_in_its_local_queue(
    cli: Cli, tmp_path: Path
) -> None:
    # Kueue's single ClusterQueue setup (9 CPUs): three 3-CPU Jobs are admitted, the next two
    # wait for quota, in Kueue's order (same priority: the earlier first)
    assert cli("apply", "-f", write(tmp_path, "n.yaml", [node("n1", gpus=0, cpu="32")])).code == 0
    assert cli("apply", "-f", str(KUEUE_SETUP)).code == 0
    for name in ("a", "b", "c", "d", "e"):
        assert cli("apply", "-f", write(tmp_path, f"{name}.yaml", [sample_job(name)])).code == 0
    admitted = kueue_answer(cli, "job", "a")
    assert (admitted["state"], admitted["rule"], admitted["clusterQueue"]) == (
        "admitted",
        "none",
        "cluster-queue",
    )
    assert admitted["flavors"] == {"main": {"cpu": "default-flavor", "memory": "default-flavor"}}
    pod_name = next(
        line.split()[0].split("/")[1]
        for line in cli("get", "pods", "-o", "name").out.splitlines()
        if line.startswith("pod/a-")
    )
    # Kueue admitted it; its pods name no kai-scheduler, so pykai leaves them to another
    unscheduled = json.loads(cli("explain", "pod", pod_name, "-o", "json").out)
    assert (unscheduled["rule"], unscheduled["kueue"]["state"]) == ("not grouped", "admitted")
    waiting = kueue_answer(cli, "job", "d")
    assert (waiting["state"], waiting["rule"], waiting["reason"]) == (
        "pending",
        "ClusterQueue quota",
        "WaitingForQuota",
    )
    assert "insufficient unused quota for cpu in flavor default-flavor" in str(waiting["verdict"])
    assert waiting["position"] == {"inClusterQueue": 0, "inLocalQueue": 0}
    assert kueue_answer(cli, "job", "e")["position"] == {"inClusterQueue": 1, "inLocalQueue": 1}
    workload = str(waiting["workload"]).split("/")[1]
    assert kueue_answer(cli, "workload", workload) == waiting
    out = cli("explain", "job", "e").out
    assert "Kueue rule:  ClusterQueue quota" in out
    assert "Position:    2 in ClusterQueue cluster-queue, 2 in LocalQueue user-queue" in out


def test_explain_names_the_kueue_rule_that_holds_a_job(cli: Cli, tmp_path: Path) -> None:
    assert cli("apply", "-f", write(tmp_path, "n.yaml", [node("n1", gpus=0, cpu="32")])).code == 0
    assert cli("apply", "-f", str(KUEUE_SETUP)).code == 0
    jobs = [sample_job("huge", cpu="4"), sample_job("lost", queue_name="nowhere")]
    unmanaged = sample_job("plain")
    del unmanaged["metadata"]["labels"]
    assert cli("apply", "-f", write(tmp_path, "jobs.yaml", [*jobs, unmanaged])).code == 0
    huge = kueue_answer(cli, "job", "huge")  # 12 CPUs: more than the ClusterQueue ever has
    assert (huge["rule"], huge["reason"]) == ("ClusterQueue quota", "ExceedsMaxQuota")
    assert str(huge["verdict"]).startswith("it can never be admitted as asked")
    lost = kueue_answer(cli, "job", "lost")
    assert (lost["rule"], lost["state"]) == ("missing LocalQueue", "pending")
    assert "position" not in lost
    plain = kueue_answer(cli, "job", "plain")
    assert (plain["state"], plain["rule"]) == ("not managed", "not managed by Kueue")


def test_explain_names_the_admission_check_a_job_waits_for(cli: Cli, tmp_path: Path) -> None:
    # the Ray gang guide's queues: a ProvisioningRequest check on GPUs; no GPU node yet, so
    # Kueue reserves quota and the check waits for capacity (Admitted stays False)
    job = sample_job("a")
    resources = job["spec"]["template"]["spec"]["containers"][0]["resources"]
    resources["requests"]["nvidia.com/gpu"] = "1"
    resources["limits"] = {"nvidia.com/gpu": "1"}
    assert cli("apply", "-f", write(tmp_path, "n.yaml", [node("n1", gpus=0, cpu="32")])).code == 0
    assert cli("apply", "-f", str(EXAMPLES / "kueue/ray-gang/kueue-resources.yaml")).code == 0
    assert cli("apply", "-f", write(tmp_path, "a.yaml", [job])).code == 0
    held = kueue_answer(cli, "job", "a")
    assert (held["state"], held["rule"]) == ("quota reserved", "admission check")
    checks = held["admissionChecks"]
    assert [(c["name"], c["state"]) for c in checks] == [("rayjob-gpu", "Pending")]  # type: ignore[attr-defined]
    assert "rayjob-gpu (Pending" in str(held["verdict"])
