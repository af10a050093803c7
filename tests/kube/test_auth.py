"""Credentials the apiserver refuses, at start: `pykai run` and `pykai webhook` end at once
with a non-zero exit and one line saying what was refused, with which credentials, and what to
check (a 403: RBAC; a 401: the token). Later refusals of single writes stay per-object failures
(tests/kube/test_faults.py, the 403-failing bind)."""

from __future__ import annotations

from pathlib import Path

import yaml

from pykai.kube.localcluster import LocalCluster
from tests.kube.conftest import account_kubeconfig, allowed, kubectl, pykai_cli, wait_for


def last_line(stderr: str) -> str:
    return stderr.strip().splitlines()[-1]


def test_run_without_any_rights_ends_with_one_clear_line(
    local_cluster: LocalCluster, tmp_path: Path
) -> None:
    kubectl(local_cluster, "create", "serviceaccount", "nobody", check=False)
    kubeconfig = account_kubeconfig(local_cluster, "default", "nobody", tmp_path / "kubeconfig")
    result = pykai_cli("run", f"--kubeconfig={kubeconfig}")  # within pykai_cli's deadline
    assert result.returncode == 1
    line = last_line(result.stderr)
    assert line.startswith("error: the apiserver refused list /api"), line
    assert "403 Forbidden" in line and "check RBAC" in line
    assert 'User "system:serviceaccount:default:nobody"' in line  # who, as the apiserver saw it
    assert f'user "nobody" of kubeconfig {kubeconfig}' in line  # which credentials were used
    assert "Traceback" not in result.stderr


def test_run_with_a_bad_token_ends_with_one_clear_line(
    local_cluster: LocalCluster, tmp_path: Path
) -> None:
    config = yaml.safe_load(local_cluster.kubeconfig.read_text())
    config["users"][0]["user"]["token"] = "not-a-token-of-this-cluster"
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(yaml.safe_dump(config))
    result = pykai_cli("run", f"--kubeconfig={kubeconfig}", "--components=binder")
    assert result.returncode == 1
    line = last_line(result.stderr)
    assert "401 Unauthorized" in line and "check the token or certificate" in line, line
    assert f"of kubeconfig {kubeconfig} (bearer token)" in line
    assert "Traceback" not in result.stderr


def test_run_that_may_not_hold_its_lease_ends_at_start(
    local_cluster: LocalCluster, tmp_path: Path
) -> None:
    """The binder's account may read what it watches but not touch Leases: with
    --leader-elect it could never lead, so it says so instead of waiting forever."""
    kubectl(local_cluster, "create", "serviceaccount", "no-lease", check=False)
    kubectl(
        local_cluster,
        "create",
        "clusterrole",
        "pykai-reader",
        "--verb=get,list,watch",
        "--resource=pods,bindrequests.scheduling.run.ai",
        check=False,
    )
    kubectl(
        local_cluster,
        "create",
        "clusterrolebinding",
        "pykai-no-lease",
        "--clusterrole=pykai-reader",
        "--serviceaccount=default:no-lease",
        check=False,
    )
    assert wait_for(lambda: allowed(local_cluster, "default", "no-lease", "list", "pods"))
    kubeconfig = account_kubeconfig(local_cluster, "default", "no-lease", tmp_path / "kubeconfig")
    result = pykai_cli("run", f"--kubeconfig={kubeconfig}", "--components=binder", "--leader-elect")
    assert result.returncode == 1
    line = last_line(result.stderr)
    assert "/apis/coordination.k8s.io/v1/namespaces/default/leases/" in line, line
    assert "403 Forbidden" in line and "check RBAC" in line


def test_webhook_without_rights_ends_with_one_clear_line(
    local_cluster: LocalCluster, tmp_path: Path
) -> None:
    kubectl(local_cluster, "create", "serviceaccount", "nobody", check=False)
    kubeconfig = account_kubeconfig(local_cluster, "default", "nobody", tmp_path / "kubeconfig")
    result = pykai_cli("webhook", f"--kubeconfig={kubeconfig}", "--address=127.0.0.1:0")
    assert result.returncode == 1
    line = last_line(result.stderr)
    assert "refused list /apis/scheduling.run.ai/v2/queues" in line, line
    assert "403 Forbidden" in line and "check RBAC" in line
