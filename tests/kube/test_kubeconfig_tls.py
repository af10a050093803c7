"""How pykai trusts the apiserver and shows its client certificate, against a local HTTPS
server made in the test from certificates made in the test (no apiserver): the CA inline, as a
file beside the kubeconfig, or the server's own certificate in its place (kubectl's Go TLS
trusts any certificate of the pool as an anchor: a partial chain); client certificates inline
and as files; insecure-skip-tls-verify; the pod's service account. A wrong CA still fails."""

from __future__ import annotations

import base64
import json
import ssl
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any

import pytest
import yaml

from pykai.kube.api import ApiUnreachable, connect
from pykai.kube.certs import Authority
from pykai.kube.kubeconfig import KubeconfigError

VERSION = {"major": "1", "minor": "34", "gitVersion": "v1.34.4"}


@dataclass
class Server:
    """A local HTTPS server answering ``GET /version``; what each request carried."""

    url: str
    ca: Authority  # signed the serving certificate, and trusts client certificates
    cert: bytes  # the serving certificate (PEM)
    seen: list[dict[str, Any]] = field(default_factory=list)


@pytest.fixture(autouse=True)
def no_ambient_configuration(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    directory = tmp_path_factory.mktemp("tls")
    ca = Authority.new("local-ca")
    cert, key = ca.issue("apiserver", hosts=["127.0.0.1", "localhost"])
    (directory / "tls.crt").write_bytes(cert)
    (directory / "tls.key").write_bytes(key)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(directory / "tls.crt", directory / "tls.key")
    context.load_verify_locations(cadata=ca.cert_pem.decode())
    context.verify_mode = ssl.CERT_OPTIONAL  # a client certificate when the client has one
    found = Server("", ca, cert)

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            peer = self.connection.getpeercert()  # type: ignore[attr-defined]
            subject = dict(x[0] for x in peer["subject"]) if peer else {}
            found.seen.append(
                {
                    "path": self.path,
                    "authorization": self.headers.get("Authorization", ""),
                    "client": subject.get("commonName", ""),
                }
            )
            body = json.dumps(VERSION).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    httpd = HTTPServer(("127.0.0.1", 0), Handler)
    httpd.socket = context.wrap_socket(httpd.socket, server_side=True)
    found.url = f"https://127.0.0.1:{httpd.server_address[1]}"
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield found
    httpd.shutdown()
    httpd.server_close()


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def kubeconfig(path: Path, cluster: dict[str, Any], user: dict[str, Any] | None = None) -> Path:
    """A kubeconfig of one cluster, one user (a token by default) and one current context."""
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "local", "cluster": cluster}],
        "users": [{"name": "me", "user": user if user is not None else {"token": "t0ken"}}],
        "contexts": [{"name": "here", "context": {"cluster": "local", "user": "me"}}],
        "current-context": "here",
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(config))
    return path


def test_the_servers_own_certificate_as_the_authority(server: Server, tmp_path: Path) -> None:
    """kubectl accepts it (Go trusts any certificate of the pool as an anchor); so does pykai."""
    cluster = {"server": server.url, "certificate-authority-data": b64(server.cert)}
    api = connect(kubeconfig(tmp_path / "kubeconfig", cluster))
    assert api.version() == VERSION
    assert server.seen[-1]["authorization"] == "Bearer t0ken"


def test_the_authority_inline_and_as_a_file_beside_the_kubeconfig(
    server: Server, tmp_path: Path
) -> None:
    inline = {"server": server.url, "certificate-authority-data": b64(server.ca.cert_pem)}
    assert connect(kubeconfig(tmp_path / "inline", inline)).version() == VERSION
    (tmp_path / "certs").mkdir()
    (tmp_path / "certs/ca.crt").write_bytes(server.ca.cert_pem)
    beside = {"server": server.url, "certificate-authority": "ca.crt"}
    assert connect(kubeconfig(tmp_path / "certs/kubeconfig", beside)).version() == VERSION


def test_a_wrong_authority_is_refused_naming_it(server: Server, tmp_path: Path) -> None:
    stranger = Authority.new("someone-else")
    cluster = {"server": server.url, "certificate-authority-data": b64(stranger.cert_pem)}
    with pytest.raises(ApiUnreachable) as refused:
        connect(kubeconfig(tmp_path / "kubeconfig", cluster))
    assert "CERTIFICATE_VERIFY_FAILED" in str(refused.value)
    assert "check the cluster's certificate-authority" in str(refused.value)
    other_cert, _ = stranger.issue("apiserver", hosts=["127.0.0.1"])
    cluster["certificate-authority-data"] = b64(other_cert)  # another server's own: no anchor
    with pytest.raises(ApiUnreachable, match="CERTIFICATE_VERIFY_FAILED"):
        connect(kubeconfig(tmp_path / "other", cluster))


def test_insecure_skip_tls_verify_trusts_any_server(server: Server, tmp_path: Path) -> None:
    cluster = {"server": server.url, "insecure-skip-tls-verify": True}
    assert connect(kubeconfig(tmp_path / "kubeconfig", cluster)).version() == VERSION


def test_unreadable_certificates_are_named(server: Server, tmp_path: Path) -> None:
    cluster = {"server": server.url, "certificate-authority-data": b64(b"not a certificate")}
    with pytest.raises(KubeconfigError, match='context "here": cannot load its certificates'):
        connect(kubeconfig(tmp_path / "kubeconfig", cluster))
    missing = {"server": server.url, "certificate-authority": "nowhere/ca.crt"}
    with pytest.raises(KubeconfigError, match="cannot load its certificates"):
        connect(kubeconfig(tmp_path / "missing", missing))


def test_client_certificate_inline_and_as_files(server: Server, tmp_path: Path) -> None:
    cert, key = server.ca.issue("erin", organizations=["team"])
    cluster = {"server": server.url, "certificate-authority-data": b64(server.ca.cert_pem)}
    inline = {"client-certificate-data": b64(cert), "client-key-data": b64(key)}
    api = connect(kubeconfig(tmp_path / "inline", cluster, inline))
    assert server.seen[-1]["client"] == "erin"
    assert "client certificate CN=erin,O=team" in api.credentials
    (tmp_path / "pki").mkdir()
    (tmp_path / "pki/erin.crt").write_bytes(cert)
    (tmp_path / "pki/erin.key").write_bytes(key)
    files = {"client-certificate": "pki/erin.crt", "client-key": "pki/erin.key"}
    connect(kubeconfig(tmp_path / "kubeconfig", cluster, files))
    assert server.seen[-1]["client"] == "erin"


def test_the_pods_service_account(
    server: Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "serviceaccount"
    folder.mkdir()
    (folder / "token").write_text("pod-token\n")
    (folder / "ca.crt").write_bytes(server.ca.cert_pem)
    (folder / "namespace").write_text("default")
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "127.0.0.1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", server.url.rsplit(":", 1)[1])
    api = connect(service_account=folder)
    assert api.version() == VERSION
    assert server.seen[-1]["authorization"] == "Bearer pod-token"
    assert api.credentials.startswith("the pod's service account (token file ")
    (folder / "namespace").unlink()
    with pytest.raises(KubeconfigError, match="service account is incomplete"):
        connect(service_account=folder)


def test_entries_of_the_wrong_type_are_named(tmp_path: Path) -> None:
    cluster = {"server": "https://127.0.0.1:1", "insecure-skip-tls-verify": "yes"}
    with pytest.raises(KubeconfigError, match='clusters "local": Expected `bool`'):
        connect(kubeconfig(tmp_path / "kubeconfig", cluster))
    exec_without_command = {"exec": {"apiVersion": "client.authentication.k8s.io/v1"}}
    with pytest.raises(KubeconfigError, match='users "me": Object missing required field'):
        connect(kubeconfig(tmp_path / "exec", {"server": "https://x"}, exec_without_command))
