"""The admission webhook: a ValidatingAdmissionWebhook over HTTPS that rejects invalid Queues,
PodGroups and pods (GPU-sharing annotations above all) with the same checks and messages as
``pykai apply`` on the embedded cluster (controllers/validation.py), so a bad object is refused
before anything is stored.

- CREATE/UPDATE of a Queue: its fields, and the tree it makes with the stored queues (parent
  exists, no cycle); DELETE of a Queue still used by child queues or PodGroups.
- CREATE/UPDATE of a PodGroup, CREATE of a Pod: the model's parsers.

TLS: certificate files, a ``kubernetes.io/tls`` Secret, or a self-signed CA and serving
certificate generated at start (local use; the CA goes into the webhook configuration).
Failure policy: ``Fail`` for queues (written by people: nothing invalid slips in while the
webhook is down), ``Ignore`` for PodGroups and pods (written constantly by controllers and
pykai itself: an outage of the webhook must never stall workloads; the engine ignores an
invalid object it is given, with a log line).
"""

from __future__ import annotations

import base64
import datetime
import ipaddress
import json
import logging
import ssl
import tempfile
import threading
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import NameOID

from pykai.controllers.validation import check_queue_unused, validate_objects
from pykai.kube.api import KINDS, ApiError, KubeApi
from pykai.kube.gpu_env import SHARING_ANNOTATIONS, env_patch
from pykai.model.errors import ValidationError
from pykai.model.meta import Obj

log = logging.getLogger("pykai.webhook")
CONFIGURATION_NAME = "pykai-validation"
PATH = "/validate"

Lister = Callable[[str], list[Obj]]  # kind -> stored objects
MUTATION_NAME = "pykai-mutation"
MUTATE_PATH = "/mutate"


# ---- the review ---------------------------------------------------------------------------------


def review(body: Any, stored: Lister, gpu_sharing: bool = True) -> Obj:
    """The AdmissionReview answering ``body`` (same apiVersion); never raises. With
    ``gpu_sharing`` off, pods asking for a GPU fraction or GPU memory are refused."""
    request = body.get("request") if isinstance(body, dict) else None
    if not isinstance(request, dict) or "uid" not in request:
        return _answer(body, "", False, 400, "not an AdmissionReview with a request")
    try:
        problem = _problem(request, stored, gpu_sharing)
    except (KeyError, TypeError, AttributeError) as exc:
        return _answer(body, request["uid"], False, 400, f"malformed admission request: {exc}")
    except ApiError as exc:
        return _answer(body, request["uid"], False, 500, f"cannot read stored queues: {exc}")
    if problem:
        return _answer(body, request["uid"], False, 422, problem)
    return _answer(body, request["uid"], True, 200, "")


def mutate(body: Any) -> Obj:
    """The AdmissionReview answering a mutating review: a GPU-sharing pod gets the ConfigMap
    its GPU env will come from (kube/gpu_env.py); everything else passes unchanged."""
    request = body.get("request") if isinstance(body, dict) else None
    if not isinstance(request, dict) or "uid" not in request:
        return _answer(body, "", False, 400, "not an AdmissionReview with a request")
    answer = _answer(body, request["uid"], True, 200, "")
    pod = request.get("object")
    if request.get("operation") == "CREATE" and isinstance(pod, dict) and "metadata" in pod:
        ops = env_patch(pod)
        if ops:
            answer["response"]["patchType"] = "JSONPatch"
            answer["response"]["patch"] = base64.b64encode(json.dumps(ops).encode()).decode()
    return answer


def _problem(request: Obj, stored: Lister, gpu_sharing: bool) -> str:
    """Why the request must be refused, or ""."""
    kind = request["kind"]["kind"]
    operation = request["operation"]
    if kind == "Pod" and not gpu_sharing and operation != "DELETE":
        meta = request["object"]["metadata"]
        asked = sorted(set(meta.get("annotations") or {}) & SHARING_ANNOTATIONS)
        if asked:
            return (
                f'Pod "{meta.get("name", "")}": metadata.annotations[{asked[0]}]: GPU sharing '
                "is disabled in this cluster; request whole GPUs (nvidia.com/gpu) instead"
            )
    try:
        if operation == "DELETE":
            if kind == "Queue":
                check_queue_unused(request["name"], stored("Queue"), stored("PodGroup"))
            return ""
        obj = request["object"]
        if not isinstance(obj, dict):
            raise TypeError("request.object is not an object")
        obj.setdefault("kind", kind)
        validate_objects([obj], stored("Queue") if kind == "Queue" else [])
    except ValidationError as exc:
        # only what is wrong with the reviewed object: an old broken queue elsewhere in the
        # tree must not block unrelated writes
        name = request.get("name") or (request.get("object") or {}).get("metadata", {}).get("name")
        mine = [p for p in exc.problems if p.kind != "Queue" or p.name == name]
        return str(ValidationError(mine)) if mine else ""
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


def _key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def generate_tls(hosts: list[str], days: int = 365) -> Tls:
    """A self-signed CA and a serving certificate for ``hosts`` (DNS names or IPs)."""
    now = datetime.datetime.now(datetime.UTC)
    ca_key, key = _key(), _key()
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "pykai-webhook-ca")])
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=days))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    names: list[x509.GeneralName] = []
    for host in hosts:
        try:
            names.append(x509.IPAddress(ipaddress.ip_address(host)))
        except ValueError:
            names.append(x509.DNSName(host))
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, hosts[0])]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=days))
        .add_extension(x509.SubjectAlternativeName(names), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    pem = serialization.Encoding.PEM
    return Tls(
        cert=cert.public_bytes(pem),
        key=key.private_bytes(
            pem, serialization.PrivateFormat.TraditionalOpenSSL, serialization.NoEncryption()
        ),
        ca=ca.public_bytes(pem),
    )


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
        def do_POST(self) -> None:
            path = self.path.split("?")[0]
            if path not in (PATH, MUTATE_PATH):
                self._send(404, {"message": f"POST {PATH} or {MUTATE_PATH}"})
                return
            length = int(self.headers.get("Content-Length") or 0)
            try:
                body = json.loads(self.rfile.read(length) or b"null")
            except json.JSONDecodeError as exc:
                self._send(400, {"message": f"body is not JSON: {exc}"})
                return
            answer = review(body, stored, gpu_sharing) if path == PATH else mutate(body)
            response = answer["response"]
            if not response["allowed"]:
                log.info("refused %s: %s", response["uid"], response["status"]["message"])
            self._send(200, answer)

        def do_GET(self) -> None:
            self._send(200 if self.path == "/healthz" else 404, {"status": "ok"})

        def _send(self, code: int, payload: Obj) -> None:
            data = json.dumps(payload).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:
            log.debug(format, *args)

    server = _TlsServer(address, Handler, tls.context())
    threading.Thread(target=server.serve_forever, name="pykai-webhook", daemon=True).start()
    return server


class _TlsServer(ThreadingHTTPServer):
    """HTTPS with the TLS handshake in each request's own thread, so a client that connects
    and stalls never blocks ``accept``."""

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
        request.settimeout(10)
        try:
            secure = self.context.wrap_socket(request, server_side=True)
        except (OSError, ssl.SSLError) as exc:
            log.debug("TLS handshake with %s failed: %s", client_address, exc)
            return
        try:
            super().finish_request(secure, client_address)
        finally:
            secure.close()


def api_lister(api: KubeApi) -> Lister:
    """Stored objects read from the apiserver at review time."""
    return lambda kind: api.list(KINDS[kind])[0]


def configuration(client_config: Obj) -> Obj:
    """The ValidatingWebhookConfiguration for a clientConfig (``url`` or ``service``, with
    ``caBundle``)."""

    def webhook(
        name: str, group: str, version: str, resource: str, operations: list[str], policy: str
    ) -> Obj:
        return {
            "name": f"{name}.pykai.io",
            "clientConfig": client_config,
            "rules": [
                {
                    "apiGroups": [group],
                    "apiVersions": [version],
                    "operations": operations,
                    "resources": [resource],
                    "scope": "*",
                }
            ],
            "failurePolicy": policy,
            "sideEffects": "None",
            "admissionReviewVersions": ["v1", "v1beta1"],
            "timeoutSeconds": 5,
        }

    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": CONFIGURATION_NAME},
        "webhooks": [
            webhook(
                "queues",
                "scheduling.run.ai",
                "v2",
                "queues",
                ["CREATE", "UPDATE", "DELETE"],
                "Fail",
            ),
            webhook(
                "podgroups",
                "scheduling.run.ai",
                "v2alpha2",
                "podgroups",
                ["CREATE", "UPDATE"],
                "Ignore",
            ),
            webhook("pods", "", "v1", "pods", ["CREATE"], "Ignore"),
        ],
    }


def mutation(client_config: Obj) -> Obj:
    """The MutatingWebhookConfiguration: pods on CREATE (GPU-sharing ones get their env's
    ConfigMap); fails open."""
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "MutatingWebhookConfiguration",
        "metadata": {"name": MUTATION_NAME},
        "webhooks": [
            {
                "name": "gpu-env.pykai.io",
                "clientConfig": client_config,
                "rules": [
                    {
                        "apiGroups": [""],
                        "apiVersions": ["v1"],
                        "operations": ["CREATE"],
                        "resources": ["pods"],
                        "scope": "*",
                    }
                ],
                "failurePolicy": "Ignore",
                "sideEffects": "None",
                "admissionReviewVersions": ["v1", "v1beta1"],
                "timeoutSeconds": 5,
                "reinvocationPolicy": "Never",
            }
        ],
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
