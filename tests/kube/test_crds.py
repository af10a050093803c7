"""pykai's CRDs on the local apiserver: ``kubectl explain`` shows their schemas, ``kubectl get
podgroups`` their printer columns, and the apiserver refuses what the schemas refuse."""

from __future__ import annotations

import json
from pathlib import Path

from pykai.kube.localcluster import LocalCluster
from pykai.model import builders
from tests.kube.conftest import apply, kubectl, wait_for


def test_kubectl_explain_shows_queue_resources(local_cluster: LocalCluster) -> None:
    def explained(field: str) -> str:
        return kubectl(local_cluster, "explain", field, check=False)

    # the apiserver publishes a new CRD's OpenAPI a little after it serves it
    assert wait_for(lambda: "FIELDS:" in explained("queue.spec.resources"), timeout=60)
    resources = explained("queue.spec.resources")
    assert "Quota, limit and over-quota weight for CPU, memory and GPUs" in resources
    for field in ("cpu\t<Object>", "gpu\t<Object>", "memory\t<Object>"):
        assert field in resources, resources
    quota = explained("queue.spec.resources.gpu.quota")
    assert "<number>" in quota and "-1: unlimited" in quota
    assert "fractions are allowed" in explained("queue.spec.resources.gpu")
    assert "<integer>" in explained("podgroup.spec.minMember")


def test_kubectl_get_podgroups_columns(local_cluster: LocalCluster, tmp_path: Path) -> None:
    group = builders.podgroup("columns", queue="default-queue", min_member=2)
    apply(local_cluster, [group], tmp_path / "pg.yaml")
    lines = kubectl(local_cluster, "get", "pg", "columns").splitlines()
    assert lines[0].split() == ["NAME", "QUEUE", "MIN-MEMBER", "PRIORITY", "PHASE", "AGE"]
    assert lines[1].split()[:3] == ["columns", "default-queue", "2"]


def test_apiserver_refuses_what_the_schema_refuses(
    local_cluster: LocalCluster, tmp_path: Path
) -> None:
    """No webhook runs here: the CRD's schema alone refuses these."""
    queue = builders.queue("typed")
    queue["spec"]["priority"] = "high"
    (tmp_path / "queue.yaml").write_text(json.dumps(queue))
    out = kubectl(local_cluster, "apply", "-f", str(tmp_path / "queue.yaml"), check=False)
    assert "spec.priority" in out and "integer" in out, out
    group = builders.podgroup("zero", queue="default-queue", min_member=1)
    group["spec"]["minMember"] = 0
    (tmp_path / "pg.yaml").write_text(json.dumps(group))
    out = kubectl(local_cluster, "apply", "-f", str(tmp_path / "pg.yaml"), check=False)
    assert "spec.minMember" in out and "greater than or equal to 1" in out, out
