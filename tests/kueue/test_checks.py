"""Admission checks and the ProvisioningRequest on the embedded cluster: expected outcomes from
Kueue's provisioning controller (kubernetes-sigs/kueue
``pkg/controller/admissionchecks/provisioning/``: request and PodTemplate names, check states,
the AdmissionCheck's Active condition) and cluster-autoscaler's check-capacity class (what the
stand-in answers). The admission flow itself is scenario kueue/19."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from pykai.controllers.kueue.admission import run_kueue
from pykai.controllers.kueue.checks import UNSERVED, run_admission_checks
from pykai.embedded.cluster import EmbeddedCluster
from pykai.model.meta import Obj

SCENARIO = Path(__file__).parents[1] / "scenarios/kueue/19-provisioning-admission-check"


def _load(name: str) -> list[Obj]:
    return [d for d in yaml.safe_load_all((SCENARIO / name).read_text()) if d]


@pytest.fixture
def cluster() -> Iterator[EmbeddedCluster]:
    cluster = EmbeddedCluster.open(None)
    cluster.apply(_load("cluster.yaml") + _load("queues.yaml"))
    yield cluster
    cluster.close()


def _condition(obj: Obj, kind: str) -> tuple[str, str, str]:
    for found in (obj.get("status") or {}).get("conditions") or []:
        if found["type"] == kind:
            return found["status"], found["reason"], found["message"]
    return ("", "", "")


def test_the_check_is_active_when_its_config_exists(cluster: EmbeddedCluster) -> None:
    check = cluster.get("AdmissionCheck", "gpu-check")
    assert check is not None
    assert _condition(check, "Active") == ("True", "Active", "The admission check is active")
    cluster.delete("ProvisioningRequestConfig", "gpu-config")
    check = cluster.get("AdmissionCheck", "gpu-check")
    queue = cluster.get("ClusterQueue", "cluster-queue")
    assert check is not None and queue is not None
    assert _condition(check, "Active")[:2] == ("False", "BadParametersRef")
    assert _condition(queue, "Active") == (
        "False",
        "AdmissionCheckInactive",
        "Can't admit new workloads: references inactive AdmissionCheck(s): gpu-check",
    )


def test_the_request_its_templates_and_the_check_state(cluster: EmbeddedCluster) -> None:
    cluster.apply(_load("job.yaml"))
    (workload,) = cluster.list("Workload", "default")
    name = f"{workload['metadata']['name']}-gpu-check-1"
    request = cluster.get("ProvisioningRequest", name, "default")
    assert request is not None
    assert request["metadata"]["ownerReferences"][0]["uid"] == workload["metadata"]["uid"]
    assert request["spec"]["provisioningClassName"] == "check-capacity.autoscaling.x-k8s.io"
    assert request["spec"]["podSets"] == [
        {"podTemplateRef": {"name": f"ppt-{name}-main"}, "count": 2}
    ]
    template = cluster.get("PodTemplate", f"ppt-{name}-main", "default")
    assert template is not None
    assert template["template"]["spec"]["containers"][0]["resources"]["limits"] == {
        "nvidia.com/gpu": "1"
    }
    assert _condition(request, "Accepted")[0] == "True"
    assert _condition(request, "Provisioned")[:2] == ("False", "CapacityIsNotFound")
    cluster.apply(_load("one-gpu-node.yaml") + _load("another-gpu-node.yaml"))
    request = cluster.get("ProvisioningRequest", name, "default")
    workload = cluster.get("Workload", workload["metadata"]["name"], "default")
    assert request is not None and workload is not None
    assert _condition(request, "Provisioned")[:2] == ("True", "CapacityIsFound")
    (state,) = workload["status"]["admissionChecks"]
    assert (state["name"], state["state"]) == ("gpu-check", "Ready")
    assert state["podSetUpdates"] == [
        {
            "name": "main",
            "annotations": {
                "autoscaling.x-k8s.io/consume-provisioning-request": name,
                "autoscaling.x-k8s.io/provisioning-class-name": (
                    "check-capacity.autoscaling.x-k8s.io"
                ),
            },
        }
    ]
    said = [
        e["message"]
        for e in cluster.list("Event", "default")
        if e["involvedObject"]["uid"] == workload["metadata"]["uid"]
        and e["reason"] == "AdmissionCheckUpdated"
    ]
    assert said == [
        "Admission check gpu-check updated state from Pending to Ready with message: "
        "Capacity is found in the cluster"
    ]
    # finished with the job: the Workload holds no quota, and its request goes
    cluster.delete("Job", "trainer", "default")
    assert cluster.list("ProvisioningRequest", "default") == []


def test_checks_are_inactive_where_the_cluster_serves_no_provisioning_requests(
    cluster: EmbeddedCluster,
) -> None:
    """Without the ProvisioningRequest API (no cluster autoscaler) nothing can answer the check:
    it is inactive with a message saying so, and its ClusterQueue admits nothing (Kueue's own
    controller does not start there; pykai says why)."""
    run_admission_checks(cluster.host, provisioning=False)
    check = cluster.get("AdmissionCheck", "gpu-check")
    queue = cluster.get("ClusterQueue", "cluster-queue")
    assert check is not None and queue is not None
    assert _condition(check, "Active") == ("False", "ProvisioningRequestUnavailable", UNSERVED)
    run_kueue(cluster.host, provisioning=False)
    queue = cluster.get("ClusterQueue", "cluster-queue")
    assert queue is not None
    assert _condition(queue, "Active")[:2] == ("False", "AdmissionCheckInactive")
