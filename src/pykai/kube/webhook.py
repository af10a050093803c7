"""The admission webhook: a ValidatingAdmissionWebhook over HTTPS that refuses what ``pykai
apply`` refuses on the embedded cluster, with the same checks and messages
(controllers/validation.py), so a bad object is refused before anything is stored.

- CREATE/UPDATE of a Queue (its fields, and the tree it makes with the stored queues), a
  PodGroup, and the workloads pykai groups: Deployment, ReplicaSet, Job, CronJob, RayCluster,
  RayJob, RayService, PyTorchJob (fields, and every pod template as a pod); CREATE of a Pod.
  An UPDATE is refused only for problems the old object did not have, so an object stored
  before the webhook existed can still be changed (finalizers removed, labels fixed).
- CREATE/UPDATE of Kueue's objects (kueue.x-k8s.io, any served version): Kueue's own rules
  (model/kueue.py), with its immutable fields checked against the stored object.
- DELETE of a Queue still used by child queues or PodGroups (counted, never named: they live
  in namespaces the requester may not see).

Every request gets an answer: a malformed or oversized request, or an error of the webhook
itself, is a refusal with a message, never a dropped connection. HTTP/1.1 with keep-alive and
TCP_NODELAY, since the apiserver reuses its connections.

TLS: certificate files, a ``kubernetes.io/tls`` Secret, or a self-signed CA and serving
certificate generated at start (local use; the CA goes into the webhook configuration).
Failure policy: ``Fail`` for queues (written by people: nothing invalid slips in while the
webhook is down), ``Ignore`` for the rest (written constantly by controllers and pykai itself:
an outage of the webhook must never stall workloads).
"""

from __future__ import annotations

import base64
import json
import logging
import socket
import ssl
import tempfile
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from pykai.controllers.validation import Lister, check_queue_unused, validate_objects
from pykai.kube.api import API_ERRORS, KINDS, KubeApi
from pykai.kube.certs import Authority
from pykai.kube.gpu_env import SHARING_ANNOTATIONS, env_patch
from pykai.model.errors import FieldProblem, ValidationError
from pykai.model.kueue import KINDS as KUEUE_KINDS
from pykai.model.meta import Obj
from pykai.model.workloads import CHECKS as WORKLOAD_KINDS
from pykai.model.workloads import pod_templates

log = logging.getLogger("pykai.webhook")
KUEUE_CONFIG_KINDS = tuple(k for k in KUEUE_KINDS if k != "Workload")
"""Kueue's objects written by people (refused while the webhook is down, as Kueue's own
webhooks do); Workloads are written by controllers and fail open like the workloads."""
CONFIGURATION_NAME = "pykai-validation"
PATH = "/validate"
MUTATION_NAME = "pykai-mutation"
MUTATE_PATH = "/mutate"
MAX_BODY = 6 * 1024 * 1024
"""The largest review read: an UPDATE carries the object and the old one, each at most the
1.5 MiB etcd stores, plus the review around them; anything larger is refused unread."""
HANDSHAKE_SECONDS = 10
IDLE_SECONDS = 100  # beyond the apiserver's 90 s idle timeout: it closes first, never us mid-reuse


# ---- the review ---------------------------------------------------------------------------------


def review(body: Any, stored: Lister, gpu_sharing: bool = True) -> Obj:
    """The AdmissionReview answering ``body`` (same apiVersion); never raises. With
    ``gpu_sharing`` off, pods (and pod templates) asking for a GPU fraction or GPU memory are
    refused."""
    request = body.get("request") if isinstance(body, dict) else None
    if not isinstance(request, dict) or not isinstance(request.get("uid"), str):
        return _answer(body, "", False, 400, "not an AdmissionReview with a request")
    uid = request["uid"]
    try:
        problem = _problem(request, stored, gpu_sharing)
    except (KeyError, TypeError, AttributeError) as exc:
        return _answer(body, uid, False, 400, f"malformed admission request: {exc!r}")
    except API_ERRORS as exc:
        return _answer(body, uid, False, 500, f"cannot read the stored objects: {exc}")
    except Exception as exc:  # a refusal with a message, never a crash
        log.exception("review %s failed", uid)
        return _answer(body, uid, False, 500, f"the pykai webhook failed to review it: {exc!r}")
    if problem:
        return _answer(body, uid, False, 422, problem)
    return _answer(body, uid, True, 200, "")


def mutate(body: Any) -> Obj:
    """The AdmissionReview answering a mutating review: a GPU-sharing pod gets the ConfigMap
    its GPU env will come from (kube/gpu_env.py); everything else passes unchanged. Never
    raises: a pod it cannot read is refused with the reason."""
    request = body.get("request") if isinstance(body, dict) else None
    if not isinstance(request, dict) or not isinstance(request.get("uid"), str):
        return _answer(body, "", False, 400, "not an AdmissionReview with a request")
    answer = _answer(body, request["uid"], True, 200, "")
    pod = request.get("object")
    if request.get("operation") == "CREATE" and isinstance(pod, dict) and "metadata" in pod:
        try:
            ops = env_patch(pod)
        except Exception as exc:  # a refusal with a message, never a crash
            log.exception("mutation %s failed", request["uid"])
            return _answer(body, request["uid"], False, 400, f"cannot read the pod: {exc!r}")
        if ops:
            answer["response"]["patchType"] = "JSONPatch"
            answer["response"]["patch"] = base64.b64encode(json.dumps(ops).encode()).decode()
    return answer


def _problem(request: Obj, stored: Lister, gpu_sharing: bool) -> str:
    """Why the request must be refused, or ""."""
    kind = request["kind"]["kind"]
    operation = request["operation"]
    if operation == "DELETE":
        if kind == "Queue":
            try:
                check_queue_unused(request["name"], stored("Queue"), stored("PodGroup"))
            except ValidationError as exc:
                return str(exc)
        return ""
    obj = request["object"]
    if not isinstance(obj, dict):
        raise TypeError("request.object is not an object")
    obj.setdefault("kind", kind)
    if not gpu_sharing and (refusal := _sharing_refusal(obj)):
        return refusal
    old = request.get("oldObject")
    if kind in KUEUE_KINDS:  # the object's stored self is the request's oldObject, if any
        stored = _stored_as(kind, old if operation == "UPDATE" else None, stored)
    problems = _problems(obj, stored)
    if operation == "UPDATE" and isinstance(old, dict) and problems:
        old.setdefault("kind", kind)
        before = {str(p) for p in _problems(old, stored)}
        problems = [p for p in problems if str(p) not in before]
    return str(ValidationError(problems)) if problems else ""


def _stored_as(kind: str, old: object, stored: Lister) -> Lister:
    """``stored``, but objects of ``kind`` are just ``old`` (none on a CREATE)."""
    own = [old] if isinstance(old, dict) else []
    return lambda wanted: own if wanted == kind else stored(wanted)


def _problems(obj: Obj, stored: Lister) -> list[FieldProblem]:
    """What pykai apply would refuse in ``obj`` (without the embedded cluster's pod cap)."""
    try:
        validate_objects([obj], stored, max_pods=None)
    except ValidationError as exc:
        return exc.problems
    return []


def _sharing_refusal(obj: Obj) -> str:
    """Why a pod or pod template asking for a shared GPU is refused when sharing is off."""
    places = [("", obj)] if obj.get("kind") == "Pod" else pod_templates(obj)
    for path, holder in places:
        meta = holder.get("metadata") or {}
        asked = sorted(set(meta.get("annotations") or {}) & SHARING_ANNOTATIONS)
        if asked:
            name = (obj.get("metadata") or {}).get("name", "")
            where = f"{path}.metadata" if path else "metadata"
            return (
                f'{obj["kind"]} "{name}": {where}.annotations[{asked[0]}]: GPU sharing is '
                "disabled in this cluster; request whole GPUs (nvidia.com/gpu) instead"
            )
    return ""


def _answer(body: Any, uid: str, allowed: bool, code: int, message: str) -> Obj:
    api_version = "admission.k8s.io/v1"
    if isinstance(body, dict) and body.get("apiVersion") == "admission.k8s.io/v1beta1":
        api_version = "admission.k8s.io/v1beta1"
    response: Obj = {"uid": uid, "allowed": allowed}
    if not allowed:
        response["status"] = {"code": code, "message": message}
    return {"apiVersion": api_version, "kind": "AdmissionReview", "response": response}


# ---- TLS ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Tls:
    """A serving certificate and key (PEM), and the CA that signed it."""

    cert: bytes
    key: bytes
    ca: bytes

    def context(self) -> ssl.SSLContext:
        """A server-side SSL context (the files live only as long as loading takes)."""
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        with tempfile.TemporaryDirectory() as directory:
            cert, key = Path(directory) / "tls.crt", Path(directory) / "tls.key"
            cert.write_bytes(self.cert)
            key.write_bytes(self.key)
            key.chmod(0o600)
            context.load_cert_chain(cert, key)
        return context


def generate_tls(hosts: list[str], days: int = 365) -> Tls:
    """A self-signed CA and a serving certificate for ``hosts`` (DNS names or IPs)."""
    authority = Authority.new("pykai-webhook-ca", days)
    cert, key = authority.issue(hosts[0], hosts=hosts, days=days)
    return Tls(cert=cert, key=key, ca=authority.cert_pem)


def tls_from_secret(api: KubeApi, reference: str) -> Tls:
    """TLS from a ``kubernetes.io/tls`` Secret ``NAMESPACE/NAME`` (``ca.crt`` if present)."""
    namespace, _, name = reference.partition("/")
    if not namespace or not name:
        raise ValueError(f"--tls-secret {reference!r}: write it as NAMESPACE/NAME")
    secret = api.get(KINDS["Secret"], name, namespace)
    if secret is None:
        raise ValueError(f"Secret {reference} does not exist: create it, or omit --tls-secret")
    data = secret.get("data") or {}
    missing = [k for k in ("tls.crt", "tls.key") if k not in data]
    if missing:
        raise ValueError(
            f"Secret {reference} lacks {', '.join(missing)}: use a kubernetes.io/tls Secret"
        )
    cert = base64.b64decode(data["tls.crt"])
    return Tls(
        cert, base64.b64decode(data["tls.key"]), base64.b64decode(data.get("ca.crt", "")) or cert
    )


# ---- serving and registering --------------------------------------------------------------------


def serve(
    address: tuple[str, int], tls: Tls, stored: Lister, gpu_sharing: bool = True
) -> ThreadingHTTPServer:
    """Start the HTTPS server in a daemon thread; ``shutdown()`` stops it."""

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive: the apiserver reuses its connections

        def do_POST(self) -> None:
            try:
                self._review()
            except Exception as exc:  # an answer with a message, never a dropped connection
                log.exception("request %s failed", self.path)
                self._send(500, {"message": f"the pykai webhook failed: {exc!r}"}, close=True)

        def _review(self) -> None:
            path = self.path.split("?")[0]
            length_header = self.headers.get("Content-Length")
            if length_header is None or not length_header.strip().isdigit():
                self._send(411, {"message": "send the review with a Content-Length"}, close=True)
                return
            length = int(length_header)
            if length > MAX_BODY:  # refused unread, and the connection closed behind it
                message = f"the request body is {length} bytes; at most {MAX_BODY} are read"
                self._send(413, {"message": message}, close=True)
                return
            raw = self.rfile.read(length)
            if path not in (PATH, MUTATE_PATH):
                self._send(404, {"message": f"POST {PATH} or {MUTATE_PATH}"})
                return
            try:
                body = json.loads(raw or b"null")
            except (ValueError, RecursionError) as exc:
                self._send(400, {"message": f"the body is not JSON: {exc}"})
                return
            answer = review(body, stored, gpu_sharing) if path == PATH else mutate(body)
            response = answer["response"]
            if not response["allowed"]:
                log.info("refused %s: %s", response["uid"], response["status"]["message"])
            self._send(200, answer)

        def do_GET(self) -> None:
            self._send(200 if self.path == "/healthz" else 404, {"status": "ok"})

        def _send(self, code: int, payload: Obj, close: bool = False) -> None:
            data = json.dumps(payload).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            if close:
                self.send_header("Connection", "close")
                self.close_connection = True
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:
            log.debug(format, *args)

    server = _TlsServer(address, Handler, tls.context())
    threading.Thread(target=server.serve_forever, name="pykai-webhook", daemon=True).start()
    return server


class _TlsServer(ThreadingHTTPServer):
    """HTTPS with the TLS handshake in each connection's own thread, so a client that
    connects and stalls never blocks ``accept``; TCP_NODELAY, since answers are small."""

    daemon_threads = True

    def __init__(
        self,
        address: tuple[str, int],
        handler: type[BaseHTTPRequestHandler],
        context: ssl.SSLContext,
    ) -> None:
        super().__init__(address, handler)
        self.context = context

    def finish_request(self, request: Any, client_address: Any) -> None:
        request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        request.settimeout(HANDSHAKE_SECONDS)
        try:
            secure = self.context.wrap_socket(request, server_side=True)
        except (OSError, ssl.SSLError) as exc:
            log.debug("TLS handshake with %s failed: %s", client_address, exc)
            return
        secure.settimeout(IDLE_SECONDS)
        try:
            super().finish_request(secure, client_address)
        except OSError as exc:  # the client went away mid-request
            log.debug("connection from %s ended: %s", client_address, exc)
        finally:
            secure.close()


def api_lister(api: KubeApi) -> Lister:
    """Stored objects read from the apiserver at review time."""
    return lambda kind: api.list(KINDS[kind])[0]


def _webhook(
    name: str, client_config: Obj, kinds: tuple[str, ...], operations: list[str], policy: str
) -> Obj:
    """One webhook of a configuration: a rule per kind (its group, preferred version and
    plural from the table of kinds)."""
    return {
        "name": f"{name}.pykai.io",
        "clientConfig": client_config,
        "rules": [
            {
                "apiGroups": [KINDS[kind].group],
                "apiVersions": list(KINDS[kind].versions),
                "operations": operations,
                "resources": [KINDS[kind].plural],
                "scope": "*",
            }
            for kind in kinds
        ],
        "failurePolicy": policy,
        "sideEffects": "None",
        "admissionReviewVersions": ["v1", "v1beta1"],
        "timeoutSeconds": 5,
    }


def configuration(client_config: Obj) -> Obj:
    """The ValidatingWebhookConfiguration for a clientConfig (``url`` or ``service``, with
    ``caBundle``): every kind the review checks."""
    writes = ["CREATE", "UPDATE"]
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": CONFIGURATION_NAME},
        "webhooks": [
            _webhook("queues", client_config, ("Queue",), [*writes, "DELETE"], "Fail"),
            _webhook("podgroups", client_config, ("PodGroup",), writes, "Ignore"),
            _webhook("pods", client_config, ("Pod",), ["CREATE"], "Ignore"),
            _webhook("workloads", client_config, tuple(WORKLOAD_KINDS), writes, "Ignore"),
            _webhook("kueue", client_config, KUEUE_CONFIG_KINDS, writes, "Fail"),
            _webhook("kueue-workloads", client_config, ("Workload",), writes, "Ignore"),
        ],
    }


def mutation(client_config: Obj) -> Obj:
    """The MutatingWebhookConfiguration: pods on CREATE (GPU-sharing ones get their env's
    ConfigMap); fails open."""
    gpu_env = _webhook("gpu-env", client_config, ("Pod",), ["CREATE"], "Ignore")
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "MutatingWebhookConfiguration",
        "metadata": {"name": MUTATION_NAME},
        "webhooks": [{**gpu_env, "reinvocationPolicy": "Never"}],
    }


def register(api: KubeApi, base_url: str, ca: bytes) -> None:
    """Create or replace both webhook configurations, served at ``base_url``
    (``https://host:port``)."""
    bundle = base64.b64encode(ca).decode()
    for kind, name, body in (
        (
            "ValidatingWebhookConfiguration",
            CONFIGURATION_NAME,
            configuration({"url": base_url + PATH, "caBundle": bundle}),
        ),
        (
            "MutatingWebhookConfiguration",
            MUTATION_NAME,
            mutation({"url": base_url + MUTATE_PATH, "caBundle": bundle}),
        ),
    ):
        api.delete(KINDS[kind], name)
        api.create(KINDS[kind], body)


def unregister(api: KubeApi) -> None:
    """Remove both webhook configurations."""
    api.delete(KINDS["ValidatingWebhookConfiguration"], CONFIGURATION_NAME)
    api.delete(KINDS["MutatingWebhookConfiguration"], MUTATION_NAME)
