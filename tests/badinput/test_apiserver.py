"""The catalogue against a real kube-apiserver v1.34 with pykai's CRDs (etcd + apiserver only:
no controller-manager, so a stored ten-million-replica Deployment makes nothing): without the
webhook it stores exactly the cases flagged ``stored_by_apiserver``; with `pykai webhook`
registered, kubectl is refused a sample of them covering every kind the webhook reviews
(PyTorchJob has no CRD on the local cluster: its cases are checked in-process only)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from pykai.kube.localcluster import LocalCluster
from tests.kube.conftest import kubectl, webhook_running

from .catalogue import BASELINE, CASES, BadInput

APPLIED = re.compile(r"^(\S+) (created|configured)$", re.MULTILINE)
THROUGH_KUBECTL = (  # stored without the webhook, refused by it: one or more per reviewed kind
    "pod-gpu-overflow",
    "pod-memory-beyond-int64",
    "pod-gpu-fraction-above-one",
    "pod-gpu-memory-words",
    "queue-quota-negative",
    "queue-parent-cycle",
    "queue-parent-missing",  # (an unknown resource is pruned by the Queue CRD before review)
    "podgroup-without-queue",
    "podgroup-subgroup-cycle",
    "deployment-template-gpu-fraction-above-one",
    "deployment-template-priority-class-missing",
    "replicaset-template-gpu-fraction-above-one",
    "job-template-gpu-overflow",
    "cronjob-template-gpu-fraction-above-one",
    "raycluster-worker-gpu-overflow",
    "rayjob-submission-mode-unknown",
    "rayservice-worker-memory-negative",
    "clusterqueue-lending-above-nominal",
    "localqueue-without-clusterqueue",
    "workload-without-podsets",
)
BY_ID = {case.id: case for case in CASES}


@pytest.fixture(scope="module")
def apiserver(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    """A control plane of its own with BASELINE applied."""
    cluster = LocalCluster(tmp_path_factory.mktemp("badinput-kube"))
    cluster.up(controller_manager=False, stand_ins=False)
    try:
        _apply_baseline(cluster)
        yield cluster
    finally:
        cluster.down()


def _apply_baseline(cluster: LocalCluster) -> None:
    path = cluster.directory / "baseline.yaml"
    path.write_text(BASELINE)
    kubectl(cluster, "apply", "-f", str(path))


def _apply(cluster: LocalCluster, case: BadInput, directory: Path) -> tuple[list[str], str]:
    """kubectl apply the case (no client-side schema check: what reaches the apiserver is
    the question); the objects it created or changed, and its output. The cluster is put
    back as it was."""
    bad = directory / "bad.yaml"
    bad.write_text(case.manifest)
    out = kubectl(cluster, "apply", "--validate=false", "-f", str(bad), check=False)
    changed = APPLIED.findall(out)
    for name, action in changed:
        if action == "created":
            kubectl(
                cluster, "delete", name, "--wait=false", "--grace-period=0", "--force", check=False
            )
    if any(action == "configured" for _, action in changed):
        _apply_baseline(cluster)
    return [name for name, _ in changed], out


def test_the_apiserver_stores_exactly_the_flagged_cases(
    apiserver: LocalCluster, tmp_path: Path
) -> None:
    wrong = []
    for case in CASES:
        changed, out = _apply(apiserver, case, tmp_path)
        if bool(changed) != case.stored_by_apiserver:
            wrong.append(f"{case.id}: stored {changed or 'nothing'}: {out.strip()[:300]}")
    assert not wrong, "flags that are not facts:\n" + "\n".join(wrong)


def test_the_webhook_refuses_through_kubectl(apiserver: LocalCluster, tmp_path: Path) -> None:
    sample = [BY_ID[case_id] for case_id in THROUGH_KUBECTL]
    assert len(sample) >= 15 and all(c.stored_by_apiserver and c.webhook_refuses for c in sample)
    with webhook_running(apiserver):
        for case in sample:
            changed, out = _apply(apiserver, case, tmp_path)
            assert not changed, f"{case.id} was stored: {out}"
            assert "denied the request" in out, f"{case.id}: {out}"
            missing = [text for text in case.must_name if text not in out]
            assert not missing, f"{case.id}: {missing} not in: {out}"
