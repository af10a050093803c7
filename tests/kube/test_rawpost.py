"""Binds and patches over plain keep-alive connections (kube/rawpost.py): a connection the
server closed is replaced, a 401 is asked again through httpx (whose auth flow refreshes
credentials), any other refusal is the API's error, and every answer is counted."""

from __future__ import annotations

import json
import ssl
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest

from pykai.kube.api import ApiError, AuthError, KubeApi, raw_poster
from pykai.kube.auth import BearerToken
from pykai.kube.kubeconfig import Connection
from pykai.kube.metrics import RunMetrics
from pykai.kube.rawpost import RawPoster
from pykai.model.kinds import BY_KIND
from tests.kube.test_metrics import scrape, value


class _Server(ThreadingHTTPServer):
    status = 201
    close_after = False  # close each connection after its answer, as an idle timeout would
    seen: list[tuple[str, str, dict[str, object]]]
    types: list[str]  # "METHOD content-type" of each request


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.server.seen.append((self.path, self.headers.get("Authorization", ""), body))
        self.server.types.append(f"{self.command} {self.headers['Content-Type']}")
        answer = json.dumps({"kind": "Status", "message": f"answer {self.server.status}"})
        if self.command == "PATCH" and self.server.status < 300:  # the object as patched
            answer = json.dumps({"kind": "PodGroup", "metadata": {"name": "pg"}, **body})
        self.send_response(self.server.status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer.encode())
        self.wfile.flush()
        self.close_connection = self.server.close_after  # without saying so: the client finds out

    do_PATCH = do_POST

    def do_DELETE(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.server.seen.append((self.path, self.headers.get("Authorization", ""), {}))
        self.server.types.append("DELETE")
        self.send_response(self.server.status)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"{}")
        self.wfile.flush()

    def log_message(self, format: str, *args: object) -> None:
        """Quiet."""


@pytest.fixture
def server() -> Iterator[_Server]:
    httpd = _Server(("127.0.0.1", 0), _Handler)
    httpd.seen, httpd.types = [], []
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield httpd
    httpd.shutdown()
    httpd.server_close()


def _api(server: _Server, fallback: list[httpx.Request]) -> KubeApi:
    """A KubeApi whose binds go raw to ``server``; its httpx client records and accepts."""
    url = f"http://127.0.0.1:{server.server_address[1]}"
    connection = Connection(url, ssl.create_default_context(), BearerToken("t0k"), (), "test")

    def accept(request: httpx.Request) -> httpx.Response:
        fallback.append(request)
        return httpx.Response(201, json={})

    client = httpx.Client(transport=httpx.MockTransport(accept), base_url=url)
    return KubeApi(client, "test", RawPoster(connection))


def test_a_bind_is_one_post_with_the_credentials(server: _Server) -> None:
    fallback: list[httpx.Request] = []
    api = _api(server, fallback)
    answered: list[tuple[str, int]] = []
    assert api.poster is not None
    api.poster.answered.append(lambda method, path, status: answered.append((method, status)))
    api.bind("ns", "pod-a", "node-1", uid="u-1")
    api.bind("ns", "pod-b", "node-2")
    assert [(path, auth) for path, auth, _ in server.seen] == [
        ("/api/v1/namespaces/ns/pods/pod-a/binding", "Bearer t0k"),
        ("/api/v1/namespaces/ns/pods/pod-b/binding", "Bearer t0k"),
    ]
    body = server.seen[0][2]
    assert body["target"] == {"apiVersion": "v1", "kind": "Node", "name": "node-1"}
    assert body["metadata"] == {"name": "pod-a", "namespace": "ns", "uid": "u-1"}
    assert answered == [("POST", 201), ("POST", 201)] and not fallback


def test_a_connection_the_server_closed_is_replaced(server: _Server) -> None:
    server.close_after = True
    api = _api(server, [])
    for i in range(3):
        api.bind("ns", f"pod-{i}", "node-1")
        time.sleep(0.2)  # the server has closed it by the next bind
    assert len(server.seen) == 3


def test_a_401_is_asked_again_through_httpx(server: _Server) -> None:
    server.status = 401
    fallback: list[httpx.Request] = []
    _api(server, fallback).bind("ns", "pod-a", "node-1")
    assert len(server.seen) == 1
    assert [r.url.path for r in fallback] == ["/api/v1/namespaces/ns/pods/pod-a/binding"]
    assert json.loads(fallback[0].content) == server.seen[0][2]


@pytest.mark.parametrize(("status", "error"), [(403, AuthError), (409, ApiError)])
def test_other_refusals_are_the_apis_errors(
    server: _Server, status: int, error: type[ApiError]
) -> None:
    server.status = status
    fallback: list[httpx.Request] = []
    with pytest.raises(error, match=f"{status}: .*answer {status}") as raised:
        _api(server, fallback).bind("ns", "pod-a", "node-1")
    assert raised.value.status == status and not fallback


def test_no_answer_is_a_transport_error() -> None:
    connection = Connection("http://127.0.0.1:9", ssl.create_default_context(), None, (), "x")
    with pytest.raises(httpx.TransportError):
        RawPoster(connection, timeout=5.0).post("/x", b"{}")


def test_raw_answers_are_counted_with_httpxs(server: _Server) -> None:
    api = _api(server, [])
    metrics = RunMetrics({"scheduler"})
    metrics.count_requests(api.http, api.poster)
    api.bind("ns", "pod-a", "node-1")
    server.status = 409
    with pytest.raises(ApiError):
        api.bind("ns", "pod-b", "node-1")
    samples = scrape(metrics)
    assert value(samples, "pykai_api_requests_total", method="POST", code="201") == 1
    assert value(samples, "pykai_api_requests_total", method="POST", code="409") == 1


@pytest.mark.parametrize(
    ("environment", "raw"),
    [
        ({}, True),
        ({"HTTPS_PROXY": "http://proxy.example:3128"}, False),
        ({"HTTPS_PROXY": "http://proxy.example:3128", "NO_PROXY": "api.example"}, True),
        ({"HTTP_PROXY": "http://proxy.example:3128"}, True),  # not for https
        ({"NO_PROXY": "*"}, True),
    ],
)
def test_binds_go_through_httpx_where_a_proxy_stands_between(
    monkeypatch: pytest.MonkeyPatch, environment: dict[str, str], raw: bool
) -> None:
    for name in ("HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY", "NO_PROXY"):
        for spelled in (name, name.lower()):
            monkeypatch.delenv(spelled, raising=False)
    for name, setting in environment.items():
        monkeypatch.setenv(name, setting)
    connection = Connection("https://api.example:6443", ssl.create_default_context(), None, (), "x")
    assert (raw_poster(connection) is not None) == raw


def test_a_patch_is_one_merge_patch_whose_answer_is_the_object(server: _Server) -> None:
    server.status = 200
    fallback: list[httpx.Request] = []
    patched = _api(server, fallback).patch(
        BY_KIND["PodGroup"], "pg", {"status": {"phase": "Running"}}, "ns", "status"
    )
    assert patched == {
        "kind": "PodGroup",
        "metadata": {"name": "pg"},
        "status": {"phase": "Running"},
    }
    assert [path for path, _, _ in server.seen] == [
        "/apis/scheduling.run.ai/v2alpha2/namespaces/ns/podgroups/pg/status"
    ]
    assert server.types == ["PATCH application/merge-patch+json"] and not fallback


def test_a_refused_patch_is_the_apis_error_and_a_401_asks_again(server: _Server) -> None:
    server.status = 404
    fallback: list[httpx.Request] = []
    with pytest.raises(ApiError, match="404"):
        _api(server, fallback).patch(BY_KIND["PodGroup"], "pg", {"status": {}}, "ns", "status")
    server.status = 401
    _api(server, fallback).patch(BY_KIND["PodGroup"], "pg", {"status": {}}, "ns", "status")
    assert [(r.method, r.headers["Content-Type"]) for r in fallback] == [
        ("PATCH", "application/merge-patch+json")
    ]


def test_a_delete_is_one_request_and_a_missing_object_is_no_error(server: _Server) -> None:
    fallback: list[httpx.Request] = []
    api = _api(server, fallback)
    server.status = 200
    api.delete(BY_KIND["Pod"], "pod-a", "ns", 0)
    server.status = 404
    api.delete(BY_KIND["Pod"], "pod-b", "ns")
    server.status = 500
    with pytest.raises(ApiError, match="500"):
        api.delete(BY_KIND["Pod"], "pod-c", "ns")
    assert [path for path, _, _ in server.seen] == [
        "/api/v1/namespaces/ns/pods/pod-a?gracePeriodSeconds=0",
        "/api/v1/namespaces/ns/pods/pod-b",
        "/api/v1/namespaces/ns/pods/pod-c",
    ]
    assert not fallback
