"""Kueue's API on pykai: both versions accepted, v1beta2 stored and printed (with the CRDs'
defaults), Kueue's rules at apply (more refusals are in tests/badinput/catalogue.py, checked
at apply, by the webhook and against a real apiserver), and kubectl's columns. Expected values
come from Kueue's types, conversion functions and printcolumn markers (kubernetes-sigs/kueue
apis/kueue/v1beta1/*_conversion.go, apis/kueue/v1beta2/*_types.go) and the guides' outputs."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from pykai.controllers.validation import validate_objects
from pykai.model.errors import ValidationError
from pykai.model.kueue.conversion import as_stored, to_v1beta2
from pykai.model.meta import Obj
from tests.cli.conftest import EXAMPLES, Cli

PRIORITY_GUIDE = str(EXAMPLES / "kueue/ray-priority/kueue-resources.yaml")
GANG_GUIDE = str(EXAMPLES / "kueue/ray-gang/kueue-resources.yaml")


def _docs(path: str) -> list[Obj]:
    return [d for d in yaml.safe_load_all(Path(path).read_text()) if d]


def test_v1beta1_cluster_queue_converts_as_kueue_does() -> None:
    old = {
        "apiVersion": "kueue.x-k8s.io/v1beta1",
        "kind": "ClusterQueue",
        "metadata": {"name": "cq"},
        "spec": {
            "cohort": "team",
            "admissionChecks": ["rayjob-gpu"],
            "flavorFungibility": {"whenCanBorrow": "Borrow", "whenCanPreempt": "Preempt"},
        },
    }
    new = to_v1beta2(old)
    assert new["apiVersion"] == "kueue.x-k8s.io/v1beta2"
    assert new["spec"] == {
        "cohortName": "team",
        "admissionChecksStrategy": {"admissionChecks": [{"name": "rayjob-gpu"}]},
        "flavorFungibility": {"whenCanBorrow": "MayStopSearch", "whenCanPreempt": "MayStopSearch"},
    }
    assert old["spec"]["cohort"] == "team"  # the input is left alone


def test_v1beta1_workload_and_local_queue_convert() -> None:
    workload = to_v1beta2(
        {
            "apiVersion": "kueue.x-k8s.io/v1beta1",
            "kind": "Workload",
            "metadata": {"name": "w", "namespace": "default"},
            "spec": {
                "priorityClassName": "dev-priority",
                "priorityClassSource": "kueue.x-k8s.io/workloadpriorityclass",
                "priority": 100,
            },
            "status": {"accumulatedPastExexcutionTimeSeconds": 7},
        }
    )
    assert workload["spec"] == {
        "priority": 100,
        "priorityClassRef": {
            "group": "kueue.x-k8s.io",
            "kind": "WorkloadPriorityClass",
            "name": "dev-priority",
        },
    }
    assert workload["status"] == {"accumulatedPastExecutionTimeSeconds": 7}
    queue = to_v1beta2(
        {
            "apiVersion": "kueue.x-k8s.io/v1beta1",
            "kind": "LocalQueue",
            "metadata": {"name": "q"},
            "spec": {"clusterQueue": "cq"},
            "status": {"flavorUsage": [{"name": "f"}], "flavors": [{"name": "f"}]},
        }
    )
    assert queue["status"] == {"flavorsUsage": [{"name": "f"}]}


def test_stored_form_has_the_crd_defaults_and_keeps_what_was_set() -> None:
    cluster_queue = next(d for d in _docs(PRIORITY_GUIDE) if d["kind"] == "ClusterQueue")
    spec = as_stored(cluster_queue)["spec"]
    assert spec["queueingStrategy"] == "BestEffortFIFO" and spec["stopPolicy"] == "None"
    assert spec["preemption"] == {
        "withinClusterQueue": "LowerPriority",  # the guide's
        "reclaimWithinCohort": "Never",
        "borrowWithinCohort": {"policy": "Never"},
    }
    assert spec["flavorFungibility"] == {
        "whenCanBorrow": "MayStopSearch",
        "whenCanPreempt": "TryNextFlavor",
    }


@pytest.mark.parametrize("guide", sorted((EXAMPLES / "kueue").glob("*/*kueue-resources.yaml")))
def test_every_guide_setup_is_valid(guide: Path) -> None:
    validate_objects(_docs(str(guide)), lambda kind: [])


def test_local_queue_cluster_queue_and_admission_check_controller_are_immutable() -> None:
    queue = {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "LocalQueue",
        "metadata": {"name": "user-queue", "namespace": "default"},
        "spec": {"clusterQueue": "cluster-queue"},
    }
    moved = {**queue, "spec": {"clusterQueue": "other-queue"}}
    with pytest.raises(ValidationError, match=r"spec\.clusterQueue: field is immutable"):
        validate_objects([moved], lambda kind: [queue] if kind == "LocalQueue" else [])
    elsewhere = {**moved, "metadata": {"name": "user-queue", "namespace": "team"}}
    validate_objects([elsewhere], lambda kind: [queue] if kind == "LocalQueue" else [])


def test_get_prints_kueues_columns_and_v1beta2(cli: Cli) -> None:
    assert cli("apply", "-f", PRIORITY_GUIDE).code == 0
    assert cli.lines("get", "clusterqueues") == [
        ["NAME", "COHORT", "PENDING", "WORKLOADS"],
        ["cluster-queue", "0"],  # status written by pykai's Kueue controllers
    ]
    assert cli.lines("get", "cq", "-o", "wide") == [
        ["NAME", "COHORT", "STRATEGY", "PENDING", "WORKLOADS", "ADMITTED", "WORKLOADS"],
        ["cluster-queue", "BestEffortFIFO", "0", "0"],
    ]
    assert cli.lines("get", "localqueues") == [
        ["NAME", "CLUSTERQUEUE", "PENDING", "WORKLOADS", "ADMITTED", "WORKLOADS"],
        ["user-queue", "cluster-queue", "0", "0"],
    ]
    assert cli.lines("get", "wpc") == [
        ["NAME", "VALUE"],
        ["dev-priority", "100"],
        ["prod-priority", "1000"],
    ]
    assert cli.lines("get", "rf") == [["NAME", "AGE"], ["default-flavor", "0s"]]
    stored = yaml.safe_load(cli("get", "clusterqueue", "cluster-queue", "-o", "yaml").out)
    assert stored["apiVersion"] == "kueue.x-k8s.io/v1beta2"
    assert cli.lines("get", "queues")[0][:3] == ["NAME", "PRIORITY", "PARENT"]  # still KAI's


def test_gang_guide_cluster_queue_keeps_its_admission_check_as_a_strategy(cli: Cli) -> None:
    assert cli("apply", "-f", GANG_GUIDE).code == 0
    stored = yaml.safe_load(cli("get", "cq", "cluster-queue", "-o", "yaml").out)
    assert stored["spec"]["admissionChecksStrategy"] == {
        "admissionChecks": [{"name": "rayjob-gpu"}]
    }
    assert "admissionChecks" not in stored["spec"]
    assert cli("apply", "-f", GANG_GUIDE).out.count("unchanged") == 5  # applied again: same
    assert cli.lines("get", "ac") == [["NAME", "AGE"], ["rayjob-gpu", "0s"]]


def test_get_provisioning_requests_prints_the_gang_guides_columns(cli: Cli, tmp_path: Path) -> None:
    # the gang guide: "kubectl get provisioningrequest" -> NAME ACCEPTED PROVISIONED FAILED AGE
    rayjob = yaml.safe_load_all(
        (EXAMPLES / "kueue/kuberay-samples/ray-job.pytorch-distributed-training.yaml").read_text()
    )
    job = next(d for d in rayjob if d and d["kind"] == "RayJob")
    job["metadata"] = {"name": "pytorch-text-classifier-nv77q", "namespace": "default",
                       "labels": {"kueue.x-k8s.io/queue-name": "user-queue"}}  # fmt: skip
    manifest = tmp_path / "rayjob.yaml"
    manifest.write_text(yaml.safe_dump(job))
    assert cli("apply", "-f", GANG_GUIDE).code == 0
    assert cli("apply", "-f", str(manifest)).code == 0
    (row,) = cli.lines("get", "provreq", "--no-headers")
    assert row[0].startswith("rayjob-pytorch-text-classifier-nv77q-")
    assert row[0].endswith("-rayjob-gpu-1")
    assert row[1:3] == ["True", "False"] and len(row) == 4  # no Failed condition: empty
    assert cli.lines("get", "provisioningrequests")[0] == [
        "NAME", "ACCEPTED", "PROVISIONED", "FAILED", "AGE"
    ]  # fmt: skip
