"""Every form of kubeconfig kubectl accepts, against the local apiserver: the CA inline and as
a file, a token inline and as a tokenFile, exec plugins, client certificates (inline and as
files), impersonation, a KUBECONFIG list merged as kubectl merges it, --context, the pod's
service account, ~/.kube/config. Each variant is made from the local cluster's own CA, token
and service accounts, and proven by what the apiserver answers (who it took the caller for)."""

from __future__ import annotations

import base64
import json
import os
import stat
import sys
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml

from pykai.kube.api import ApiUnreachable, AuthError, KubeApi, connect
from pykai.kube.certs import Authority
from pykai.kube.kubeconfig import KubeconfigError
from pykai.kube.localcluster import LocalCluster
from pykai.model.kinds import BY_KIND
from tests.kube.conftest import kubectl, pykai_cli, wait_for

Config = dict[str, Any]


@pytest.fixture(autouse=True)
def no_ambient_configuration(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Only what a test sets: no KUBECONFIG, no pod, an empty home."""
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))


def admin_config(cluster: LocalCluster) -> Config:
    """The local cluster's kubeconfig: CA inline, the admin token."""
    config: Config = yaml.safe_load(cluster.kubeconfig.read_text())
    return config


def admin_token(cluster: LocalCluster) -> str:
    return str(admin_config(cluster)["users"][0]["user"]["token"])


def server(cluster: LocalCluster) -> str:
    return str(admin_config(cluster)["clusters"][0]["cluster"]["server"])


def with_user(cluster: LocalCluster, user: Config, **cluster_fields: Any) -> Config:
    """The admin kubeconfig with another user entry (and cluster fields replaced)."""
    config = admin_config(cluster)
    config["users"][0]["user"] = user
    if cluster_fields:
        config["clusters"][0]["cluster"] = {"server": server(cluster), **cluster_fields}
    return config


def write(path: Path, config: Config) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(config))
    return path


def identity_of(api: KubeApi) -> str:
    """Who the apiserver takes the caller for, read from its refusal to list nodes as anyone
    but an admin; "admin" when it lists them."""
    try:
        api.list(BY_KIND["Node"])
    except AuthError as exc:
        return exc.detail.split('"')[1]  # User "NAME" cannot list resource ...
    return "admin"


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


# ---- the cluster's certificate authority ----


def test_ca_inline_in_a_file_beside_the_kubeconfig_and_a_wrong_one(
    local_cluster: LocalCluster, tmp_path: Path
) -> None:
    inline = connect(write(tmp_path / "inline", admin_config(local_cluster)))
    assert inline.version()["gitVersion"].startswith("v1.34")
    (tmp_path / "certs").mkdir()
    (tmp_path / "certs/ca.crt").write_bytes((local_cluster.directory / "ca.crt").read_bytes())
    config = with_user(
        local_cluster, {"token": admin_token(local_cluster)}, **{"certificate-authority": "ca.crt"}
    )
    assert identity_of(connect(write(tmp_path / "certs/kubeconfig", config))) == "admin"
    stranger = Authority.new("someone-else")
    wrong = with_user(
        local_cluster,
        {"token": admin_token(local_cluster)},
        **{"certificate-authority-data": b64(stranger.cert_pem)},
    )
    with pytest.raises(ApiUnreachable) as refused:
        connect(write(tmp_path / "wrong", wrong))
    assert "CERTIFICATE_VERIFY_FAILED" in str(refused.value)
    assert "check the cluster's certificate-authority" in str(refused.value)


# ---- bearer tokens ----


def test_token_file_is_read_again_for_each_request(
    local_cluster: LocalCluster, tmp_path: Path
) -> None:
    token = tmp_path / "token"
    token.write_text(admin_token(local_cluster) + "\n")
    api = connect(write(tmp_path / "kubeconfig", with_user(local_cluster, {"tokenFile": "token"})))
    assert identity_of(api) == "admin"
    assert f"token file {token}" in api.credentials
    token.write_text("rotated-to-a-token-this-cluster-does-not-know")
    with pytest.raises(AuthError) as refused:
        api.list(BY_KIND["Node"])
    assert refused.value.status == 401
    token.write_text(admin_token(local_cluster))
    assert identity_of(api) == "admin"


def test_impersonation_is_sent(local_cluster: LocalCluster, tmp_path: Path) -> None:
    user = {"token": admin_token(local_cluster), "as": "carol", "as-groups": ["team-a"]}
    api = connect(write(tmp_path / "kubeconfig", with_user(local_cluster, user)))
    assert identity_of(api) == "carol"


# ---- exec plugins ----

PLUGIN = """#!{python}
import json, os, sys
from pathlib import Path

runs = Path(os.environ["RUNS"])
runs.write_text((runs.read_text() if runs.exists() else "") + "x")
answers = json.loads(os.environ["ANSWERS"])  # one per run, the last one repeated
status = answers[min(len(runs.read_text()), len(answers)) - 1]
if status is None:
    print("no credentials today", file=sys.stderr)
    sys.exit(3)
info = json.loads(os.environ["KUBERNETES_EXEC_INFO"])
assert info["spec"]["interactive"] is False
print(json.dumps({{"apiVersion": info["apiVersion"], "kind": "ExecCredential", "status": status}}))
"""


def exec_config(
    cluster: LocalCluster, directory: Path, answers: list[Config | None], version: str = "v1beta1"
) -> tuple[Path, Path]:
    """A kubeconfig whose user is an exec plugin (named by a path relative to the kubeconfig)
    giving ``answers`` in turn; the kubeconfig and the file that counts the plugin's runs."""
    plugin = directory / "bin/plugin"
    plugin.parent.mkdir(parents=True)
    plugin.write_text(PLUGIN.format(python=sys.executable))
    plugin.chmod(plugin.stat().st_mode | stat.S_IXUSR)
    runs = directory / "runs"
    user = {
        "exec": {
            "apiVersion": f"client.authentication.k8s.io/{version}",
            "command": "./bin/plugin",
            "env": [
                {"name": "RUNS", "value": str(runs)},
                {"name": "ANSWERS", "value": json.dumps(answers)},
            ],
            "interactiveMode": "Never",
        }
    }
    return write(directory / "kubeconfig", with_user(cluster, user)), runs


def runs(counter: Path) -> int:
    return len(counter.read_text()) if counter.exists() else 0


@pytest.mark.parametrize("version", ["v1alpha1", "v1beta1", "v1"])
def test_exec_plugin_token_is_kept_until_it_expires(
    local_cluster: LocalCluster, tmp_path: Path, version: str
) -> None:
    token = admin_token(local_cluster)
    kubeconfig, counter = exec_config(local_cluster, tmp_path, [{"token": token}], version)
    api = connect(kubeconfig)
    assert identity_of(api) == "admin" and identity_of(api) == "admin"
    assert runs(counter) == 1  # one answer without expirationTimestamp serves every request
    assert "exec plugin" in api.credentials and str(tmp_path / "bin/plugin") in api.credentials


def test_exec_plugin_runs_again_when_its_token_expired(
    local_cluster: LocalCluster, tmp_path: Path
) -> None:
    expired = {"token": admin_token(local_cluster), "expirationTimestamp": "2000-01-01T00:00:00Z"}
    kubeconfig, counter = exec_config(local_cluster, tmp_path, [expired])
    api = connect(kubeconfig)  # GET /version: one run
    identity_of(api)
    identity_of(api)
    assert runs(counter) == 3


def test_exec_plugin_runs_again_after_a_401(local_cluster: LocalCluster, tmp_path: Path) -> None:
    answers: list[Config | None] = [{"token": "revoked"}, {"token": admin_token(local_cluster)}]
    kubeconfig, counter = exec_config(local_cluster, tmp_path, answers)
    assert identity_of(connect(kubeconfig)) == "admin"
    assert runs(counter) == 2


def test_exec_plugin_failure_ends_connect_with_its_words(
    local_cluster: LocalCluster, tmp_path: Path
) -> None:
    kubeconfig, _ = exec_config(local_cluster, tmp_path, [None])
    with pytest.raises(ApiUnreachable) as failed:
        connect(kubeconfig)
    assert "exited 3: no credentials today" in str(failed.value)


def test_exec_plugin_client_certificate(local_cluster: LocalCluster, tmp_path: Path) -> None:
    cert, key = local_cluster.issue_client_certificate("dave", ("system:masters",))
    answer = {"clientCertificateData": cert.decode(), "clientKeyData": key.decode()}
    kubeconfig, _ = exec_config(local_cluster, tmp_path, [answer])
    assert identity_of(connect(kubeconfig)) == "admin"  # dave is in system:masters


# ---- client certificates ----


def test_client_certificate_inline_and_as_files(
    local_cluster: LocalCluster, tmp_path: Path
) -> None:
    cert, key = local_cluster.issue_client_certificate("erin")
    inline = {"client-certificate-data": b64(cert), "client-key-data": b64(key)}
    api = connect(write(tmp_path / "inline", with_user(local_cluster, inline)))
    assert identity_of(api) == "erin"
    assert "client certificate CN=erin" in api.credentials
    (tmp_path / "pki").mkdir()
    (tmp_path / "pki/erin.crt").write_bytes(cert)
    (tmp_path / "pki/erin.key").write_bytes(key)
    files = {"client-certificate": "pki/erin.crt", "client-key": "pki/erin.key"}
    assert (
        identity_of(connect(write(tmp_path / "files", with_user(local_cluster, files)))) == "erin"
    )


# ---- KUBECONFIG lists, --context, the default file ----


def two_files(cluster: LocalCluster, directory: Path) -> tuple[Path, Path]:
    """File one: the cluster, user "stranger" (a token the cluster does not know), context
    "first" (current). File two: user "admin", context "second", and its own "first" and
    current-context, which the merge must not take (the first file to set a name wins)."""
    admin = admin_config(cluster)
    one = {
        "clusters": admin["clusters"],
        "users": [{"name": "stranger", "user": {"token": "unknown"}}],
        "contexts": [{"name": "first", "context": {"cluster": "pykai", "user": "stranger"}}],
        "current-context": "first",
    }
    two = {
        "users": [{"name": "admin", "user": {"token": admin_token(cluster)}}],
        "contexts": [
            {"name": "second", "context": {"cluster": "pykai", "user": "admin"}},
            {"name": "first", "context": {"cluster": "pykai", "user": "admin"}},
        ],
        "current-context": "second",
    }
    return write(directory / "one", one), write(directory / "two", two)


def test_kubeconfig_list_merges_and_context_chooses(
    local_cluster: LocalCluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    one, two = two_files(local_cluster, tmp_path)
    missing = tmp_path / "not-there"  # skipped, as kubectl skips it
    monkeypatch.setenv("KUBECONFIG", os.pathsep.join(map(str, [missing, one, two])))
    with pytest.raises(AuthError) as refused:
        connect()  # current-context "first" of file one: user "stranger"
    assert refused.value.status == 401
    assert f'context "first", user "stranger" of kubeconfig {one}' in refused.value.credentials
    api = connect(context="second")  # its user from file two, its cluster from file one
    assert identity_of(api) == "admin"
    assert f'user "admin" of kubeconfig {two}' in api.credentials


def test_cli_takes_kubeconfig_list_and_context(
    local_cluster: LocalCluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    one, two = two_files(local_cluster, tmp_path)
    monkeypatch.setenv("KUBECONFIG", os.pathsep.join(map(str, [one, two])))
    result = pykai_cli("run", "--context=first", "--components=binder")
    assert result.returncode == 1
    line = result.stderr.strip().splitlines()[-1]
    assert (
        "401 Unauthorized" in line
        and f'context "first", user "stranger" of kubeconfig {one}' in line
    )
    result = pykai_cli("webhook", "--context=third", "--address=127.0.0.1:0")
    assert result.returncode == 1
    assert (
        'context "third" is not in kubeconfig' in result.stderr and "first, second" in result.stderr
    )


def test_home_kube_config_is_the_default(local_cluster: LocalCluster) -> None:
    with pytest.raises(KubeconfigError, match="no kubeconfig: pass --kubeconfig"):
        connect()
    write(Path.home() / ".kube/config", admin_config(local_cluster))
    assert identity_of(connect()) == "admin"


# ---- in a pod ----


def service_account_folder(cluster: LocalCluster, account: str, folder: Path) -> Path:
    """What the kubelet mounts for ``default/account`` since Kubernetes 1.24: a token from the
    TokenRequest API, the cluster's CA from the ``kube-root-ca.crt`` ConfigMap (which the
    controller-manager publishes in every namespace), and the namespace."""
    kubectl(cluster, "create", "serviceaccount", account, check=False)
    api = connect(cluster.kubeconfig)

    def root_ca() -> str:
        found = api.get(BY_KIND["ConfigMap"], "kube-root-ca.crt", "default") or {}
        return str((found.get("data") or {}).get("ca.crt") or "")

    assert wait_for(root_ca), "no kube-root-ca.crt ConfigMap in default"
    token = kubectl(cluster, "create", "token", account).strip()
    folder.mkdir(parents=True)
    (folder / "token").write_text(token)
    (folder / "ca.crt").write_text(root_ca())
    (folder / "namespace").write_text("default")
    return folder


def test_in_cluster_service_account(
    local_cluster: LocalCluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = service_account_folder(local_cluster, "in-a-pod", tmp_path / "serviceaccount")
    address = urlsplit(server(local_cluster))
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", str(address.hostname))
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", str(address.port))
    write(Path.home() / ".kube/config", admin_config(local_cluster))  # the pod's comes first
    api = connect(service_account=folder)
    assert identity_of(api) == "system:serviceaccount:default:in-a-pod"
    assert "system:serviceaccount:default:in-a-pod" in api.credentials


# ---- what pykai refuses to guess ----


@pytest.mark.parametrize(
    ("user", "message"),
    [
        ({"auth-provider": {"name": "gcp"}}, "does not support auth-provider; use an exec plugin"),
        ({"token": "a", "username": "b", "password": "c"}, "more than one way to authenticate"),
        (
            {"exec": {"apiVersion": "client.authentication.k8s.io/v2", "command": "x"}},
            "exec apiVersion 'client.authentication.k8s.io/v2' is not one of",
        ),
        (
            {
                "exec": {
                    "apiVersion": "client.authentication.k8s.io/v1",
                    "command": "x",
                    "interactiveMode": "Always",
                }
            },
            "needs a terminal",
        ),
    ],
)
def test_users_pykai_cannot_act_as_are_refused(
    local_cluster: LocalCluster, tmp_path: Path, user: Config, message: str
) -> None:
    with pytest.raises(KubeconfigError, match=message):
        connect(write(tmp_path / "kubeconfig", with_user(local_cluster, user)))


def test_ca_with_insecure_is_refused_as_kubectl_does(
    local_cluster: LocalCluster, tmp_path: Path
) -> None:
    config = admin_config(local_cluster)
    config["clusters"][0]["cluster"]["insecure-skip-tls-verify"] = True
    with pytest.raises(KubeconfigError, match="both set"):
        connect(write(tmp_path / "kubeconfig", config))
    out = kubectl(local_cluster, f"--kubeconfig={tmp_path / 'kubeconfig'}", "version", check=False)
    assert "insecure" in out.lower()  # kubectl refuses it too
