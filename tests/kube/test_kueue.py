"""Kueue's API on a real kube-apiserver with pykai's stand-in Kueue CRDs (deploy/local/crds),
driven by kubectl as the guides drive Kueue: the guides' v1beta1 set-ups apply unchanged, the
kinds answer to Kueue's names and short names with Kueue's printer columns (``queues`` stays
KAI's), and pykai's webhook refuses what Kueue's webhooks refuse."""

from __future__ import annotations

from pathlib import Path

import yaml

from pykai.kube.localcluster import LocalCluster
from tests.kube.conftest import ROOT, kubectl, webhook_running

GUIDES = ROOT / "examples/kueue"


def _rows(out: str) -> list[list[str]]:
    return [line.split() for line in out.splitlines()]


def test_the_guides_setups_apply_and_print_as_with_kueue(local_cluster: LocalCluster) -> None:
    out = kubectl(local_cluster, "apply", "-f", str(GUIDES / "ray-priority/kueue-resources.yaml"))
    assert "clusterqueue.kueue.x-k8s.io/cluster-queue created" in out
    assert "workloadpriorityclass.kueue.x-k8s.io/prod-priority created" in out
    assert _rows(kubectl(local_cluster, "get", "clusterqueues"))[0] == [
        "NAME",
        "COHORT",
        "PENDING",
        "WORKLOADS",
    ]
    assert _rows(kubectl(local_cluster, "get", "lq"))[1][:2] == ["user-queue", "cluster-queue"]
    assert _rows(kubectl(local_cluster, "get", "wpc", "prod-priority")) == [
        ["NAME", "VALUE"],
        ["prod-priority", "1000"],
    ]
    kubectl(local_cluster, "get", "kwl")  # Workload's short name is known (none exist yet)
    assert "default-queue" in kubectl(local_cluster, "get", "queues")  # KAI's Queue
    for kind in ("clusterqueue", "localqueue", "workloadpriorityclass", "resourceflavor"):
        kubectl(local_cluster, "delete", kind, "--all", "--all-namespaces")


def test_the_webhook_refuses_what_kueue_refuses(
    local_cluster: LocalCluster, tmp_path: Path
) -> None:
    lending = tmp_path / "lending.yaml"
    lending.write_text(
        "apiVersion: kueue.x-k8s.io/v1beta1\nkind: ClusterQueue\nmetadata: {name: lavish}\n"
        "spec:\n  cohort: team\n  resourceGroups:\n  - coveredResources: [cpu]\n"
        "    flavors:\n    - name: default-flavor\n"
        "      resources: [{name: cpu, nominalQuota: 2, lendingLimit: 3}]\n"
    )
    queue = tmp_path / "queue.yaml"
    queue.write_text(
        "apiVersion: kueue.x-k8s.io/v1beta1\nkind: LocalQueue\n"
        "metadata: {name: moving, namespace: default}\nspec: {clusterQueue: first}\n"
    )
    with webhook_running(local_cluster):
        out = kubectl(local_cluster, "apply", "-f", str(lending), check=False)
        assert 'admission webhook "kueue.pykai.io" denied the request' in out
        assert "lendingLimit" in out and "nominalQuota" in out
        assert "lavish" not in kubectl(local_cluster, "get", "cq")
        kubectl(local_cluster, "apply", "-f", str(queue))
        queue.write_text(queue.read_text().replace("first", "second"))
        out = kubectl(local_cluster, "apply", "-f", str(queue), check=False)
        assert "spec.clusterQueue: field is immutable" in out
    kubectl(local_cluster, "delete", "lq", "moving")


def test_the_webhook_creates_kueue_managed_jobs_suspended(
    local_cluster: LocalCluster, tmp_path: Path
) -> None:
    """Kueue's defaulting webhook, with no pykai run to suspend anything after the fact: a
    RayJob naming a LocalQueue is stored suspended, one without the label as written."""
    job = yaml.safe_load((GUIDES / "kueue-docs/ray-job-sample.yaml").read_text())
    assert job["kind"] == "RayJob" and "suspend" not in job["spec"]
    managed = tmp_path / "managed.yaml"
    managed.write_text(yaml.safe_dump(job))
    plain = tmp_path / "plain.yaml"
    job["metadata"] = {"name": "rayjob-plain"}
    plain.write_text(yaml.safe_dump(job))
    with webhook_running(local_cluster):
        kubectl(local_cluster, "apply", "-f", str(managed), "-f", str(plain))
    suspended = kubectl(
        local_cluster, "get", "rayjobs", "-o", "custom-columns=N:.metadata.name,S:.spec.suspend"
    )
    assert _rows(suspended)[1:] == [["rayjob-plain", "<none>"], ["rayjob-sample", "true"]]
    kubectl(local_cluster, "delete", "rayjob", "rayjob-plain", "rayjob-sample")
