"""The webhook on the bad-input catalogue, in-process: every object of a kind it reviews is
refused with a message naming object and field exactly when the case says so; and the server
itself survives hostile clients (oversize and garbage bodies, slow clients) and keeps
connections alive."""

from __future__ import annotations

import http.client
import json
import socket
import ssl
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from pykai.cli.manifests import ManifestError, parse_documents
from pykai.controllers.validation import StoredCheck
from pykai.kube.webhook import MAX_BODY, PATH, configuration, generate_tls, review, serve
from pykai.model.kinds import BY_KIND
from pykai.model.meta import Obj
from pykai.model.priorityclass import builtin_priority_classes
from pykai.model.queue import default_queues

from .catalogue import BASELINE, CASES, BadInput

STORED = [*parse_documents(BASELINE, "baseline"), *builtin_priority_classes(), *default_queues()]
REVIEWED = {  # the kinds the registered configuration sends to the webhook
    kind.kind
    for hook in configuration({})["webhooks"]
    for rule in hook["rules"]
    for kind in BY_KIND.values()
    if kind.plural in rule["resources"] and kind.group in rule["apiGroups"]
}


def stored(kind: str) -> list[Obj]:
    return [o for o in STORED if o["kind"] == kind]


def admission(obj: Obj) -> Obj:
    """The AdmissionReview the apiserver sends for ``obj``: an UPDATE of the stored object of
    that name, else a CREATE; namespaced objects in ``default``."""
    obj = json.loads(json.dumps(obj))
    meta = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
    spec = BY_KIND[obj["kind"]]
    if spec.namespaced:
        meta.setdefault("namespace", "default")
    old = next((o for o in stored(obj["kind"]) if o["metadata"]["name"] == meta.get("name")), None)
    return {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": "u-1",
            "kind": {"group": spec.group, "version": spec.version, "kind": obj["kind"]},
            "operation": "UPDATE" if old else "CREATE",
            "name": meta.get("name", ""),
            "namespace": meta.get("namespace", ""),
            "object": obj,
            "oldObject": old,
        },
    }


def reviews(case: BadInput) -> list[Obj]:
    """The webhook's answers to the case's objects of reviewed kinds (none for YAML faults
    and for kinds it never sees)."""
    try:
        objects = parse_documents(case.manifest, "bad.yaml")
    except ManifestError:
        return []
    return [
        review(admission(o), stored)["response"]
        for o in objects
        if isinstance(o.get("kind"), str) and o["kind"] in REVIEWED
    ]


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_the_webhook_refuses_exactly_what_the_case_says(case: BadInput) -> None:
    answers = reviews(case)
    refused = [a for a in answers if not a["allowed"]]
    assert bool(refused) == case.webhook_refuses, answers
    for answer in refused:
        message = answer["status"]["message"]
        assert answer["status"]["code"] == 422, message
        names = [text for text in case.must_name if "bad.yaml" not in text]
        assert all(text in message for text in names), f"{names} not all in: {message}"


def test_an_update_is_refused_only_for_what_it_breaks() -> None:
    broken = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "old", "namespace": "default"},
        "spec": {"replicas": "abc", "selector": {"matchLabels": {"app": "web"}}},
    }
    relabelled = json.loads(json.dumps(broken))
    relabelled["metadata"]["labels"] = {"team": "a"}
    request = admission(relabelled)["request"]
    request["operation"], request["oldObject"] = "UPDATE", broken
    answer = review({"request": request}, stored)["response"]
    assert answer["allowed"]  # stored before the webhook existed: it may still be changed
    worse = json.loads(json.dumps(relabelled))
    worse["metadata"]["labels"]["team"] = "not a label value!"
    request["object"] = worse
    answer = review({"request": request}, stored)["response"]
    assert not answer["allowed"] and "metadata.labels[team]" in answer["status"]["message"]


def test_a_cronjob_stored_with_its_time_zone_in_the_schedule_may_still_be_changed() -> None:
    """A v1.34 apiserver refuses ``CRON_TZ=`` in a new CronJob's schedule (kubectl apply:
    "spec.schedule: Invalid value: "CRON_TZ=UTC 0 0 * * *": cannot use TZ or CRON_TZ in
    schedule, use timeZone field instead") but keeps and updates one stored before; so does
    pykai, and its controllers read such a stored CronJob as valid."""
    template = {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "x"}]}}
    old = {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": {"name": "zoned", "namespace": "default", "resourceVersion": "7"},
        "spec": {
            "schedule": "CRON_TZ=UTC 0 3 * * *",
            "jobTemplate": {"spec": {"template": template}},
        },
    }
    request = admission(old)["request"]
    answer = review({"request": request}, stored)["response"]
    assert not answer["allowed"] and "cannot use TZ or CRON_TZ" in answer["status"]["message"]
    suspended = json.loads(json.dumps(old))
    suspended["spec"]["suspend"] = True
    request["operation"], request["object"], request["oldObject"] = "UPDATE", suspended, old
    assert review({"request": request}, stored)["response"]["allowed"]
    StoredCheck()(old)  # no problem: the grouper and the stand-ins read it
    zoned = json.loads(json.dumps(old))  # Kubernetes' own validation tests: "update not
    zoned["spec"]["timeZone"] = "UTC"  # modifying TZ but adding .spec.timeZone should fail"
    request["object"] = zoned
    answer = review({"request": request}, stored)["response"]
    assert not answer["allowed"]
    assert "cannot use both timeZone field and TZ or CRON_TZ" in answer["status"]["message"]


def test_deleting_a_used_queue_names_its_podgroups_as_kubectl_names_a_long_list() -> None:
    """The first three (namespace/name, in order) and how many more, as kubectl prints a long
    list (``+ 2 more...``): who may delete a cluster-scoped queue is told what still uses it."""
    groups = [
        {
            "kind": "PodGroup",
            "metadata": {"name": f"train-{i}", "namespace": f"ns-{i % 2}"},
            "spec": {"queue": "team"},
        }
        for i in range(5)
    ]
    objects = {"Queue": stored("Queue"), "PodGroup": groups}
    request = {"uid": "u", "kind": {"kind": "Queue"}, "operation": "DELETE", "name": "team"}
    answer = review({"request": request}, lambda kind: objects.get(kind, []))["response"]
    message = answer["status"]["message"]
    assert not answer["allowed"]
    assert "5 PodGroups (ns-0/train-0, ns-0/train-2, ns-0/train-4 + 2 more...)" in message


def test_a_failing_lister_is_a_refusal_with_a_message() -> None:
    def broken(kind: str) -> list[Obj]:
        raise RuntimeError("etcd is on fire")

    queue = parse_documents(BASELINE, "b")[1]  # its tree needs the stored queues
    answer = review(admission(queue), broken)["response"]
    assert not answer["allowed"] and answer["status"]["code"] == 500
    assert "etcd is on fire" in answer["status"]["message"]


# ---- the server, against hostile clients --------------------------------------------------------


@pytest.fixture(scope="module")
def server() -> Iterator[tuple[str, int]]:
    tls = generate_tls(["127.0.0.1"])
    running = serve(("127.0.0.1", 0), tls, stored)
    try:
        yield "127.0.0.1", running.server_address[1]
    finally:
        running.shutdown()


def _context() -> ssl.SSLContext:
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    return context


def _connection(address: tuple[str, int]) -> http.client.HTTPSConnection:
    return http.client.HTTPSConnection(*address, context=_context(), timeout=30)


def _post(connection: http.client.HTTPSConnection, body: bytes, **headers: str) -> tuple[int, Any]:
    connection.request("POST", PATH, body=body, headers=headers)
    response = connection.getresponse()
    return response.status, json.loads(response.read() or b"null")


def _healthy(address: tuple[str, int]) -> bool:
    connection = _connection(address)
    try:
        connection.request("GET", "/healthz")
        return connection.getresponse().status == 200
    finally:
        connection.close()


def test_a_keep_alive_client_sends_several_reviews_on_one_connection(
    server: tuple[str, int],
) -> None:
    connection = _connection(server)
    queue = parse_documents(BASELINE, "b")[1]
    bad = json.loads(json.dumps(queue))
    bad["spec"]["resources"]["gpu"]["quota"] = -5
    first_socket = None
    for obj, allowed in ((queue, True), (bad, False), (queue, True)):
        status, answer = _post(connection, json.dumps(admission(obj)).encode())
        assert status == 200 and answer["response"]["allowed"] is allowed
        first_socket = first_socket or connection.sock
        assert connection.sock is first_socket  # the same connection every time
    connection.close()


def test_an_oversize_body_is_refused_unread_with_a_message(server: tuple[str, int]) -> None:
    with socket.create_connection(server) as raw, _context().wrap_socket(raw) as tls:
        tls.sendall(
            f"POST {PATH} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            f"Content-Length: {MAX_BODY + 1}\r\n\r\n{{}}".encode()
        )
        reply = _read_all(tls)
    assert reply.startswith(b"HTTP/1.1 413") and b"at most" in reply
    assert _healthy(server)


def test_garbage_and_lengthless_bodies_are_answered(server: tuple[str, int]) -> None:
    connection = _connection(server)
    status, answer = _post(connection, b"{not json")
    assert status == 400 and "not JSON" in answer["message"]
    status, answer = _post(connection, b"[1, 2]")
    assert status == 200 and not answer["response"]["allowed"]
    status, answer = _post(connection, b"[" * 200_000 + b"]" * 200_000)
    assert status == 400
    connection.close()
    with socket.create_connection(server) as raw, _context().wrap_socket(raw) as tls:
        tls.sendall(f"POST {PATH} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
        assert _read_all(tls).startswith(b"HTTP/1.1 411")
    assert _healthy(server)


def test_a_slow_client_does_not_hold_up_others(server: tuple[str, int]) -> None:
    body = json.dumps(admission(parse_documents(BASELINE, "b")[1])).encode()
    stop = threading.Event()

    def trickle() -> None:  # headers one byte at a time, never finishing the body
        with socket.create_connection(server) as raw, _context().wrap_socket(raw) as tls:
            head = f"POST {PATH} HTTP/1.1\r\nHost: x\r\nContent-Length: {len(body)}\r\n\r\n"
            for byte in head.encode():
                if stop.wait(0.05):
                    return
                tls.sendall(bytes([byte]))
            stop.wait(10)

    slow = threading.Thread(target=trickle, daemon=True)
    slow.start()
    try:
        started = time.monotonic()
        connection = _connection(server)
        status, answer = _post(connection, body)
        assert status == 200 and answer["response"]["allowed"]
        assert time.monotonic() - started < 10
        connection.close()
    finally:
        stop.set()
        slow.join(timeout=30)


def _read_all(tls: ssl.SSLSocket) -> bytes:
    tls.settimeout(30)
    chunks = []
    while True:
        try:
            chunk = tls.recv(65536)
        except (ConnectionError, ssl.SSLError):
            break
        if not chunk:
            break
        chunks.append(chunk)
    return b"".join(chunks)
