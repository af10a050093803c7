"""A small Kubernetes REST client over httpx, for the kinds pykai reads and writes.

Objects stay plain dicts (the engine reads Kubernetes-shaped dicts). Binding is posted raw
because typed clients choke on the Status object the apiserver answers with. Lists and watch
events, the bulk of what pykai reads, are decoded by msgspec (about twice as fast as the json
module on apiserver-shaped pods) straight from the bytes, and lose ``metadata.managedFields``
(the server-side-apply bookkeeping, often half an object, read by nothing in pykai).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit
from urllib.request import getproxies, proxy_bypass

import httpx
import msgspec

from pykai.kube.auth import CredentialsUnavailable
from pykai.kube.kubeconfig import SERVICE_ACCOUNT_DIR, Connection, resolve
from pykai.kube.rawpost import RawPoster
from pykai.model.errors import PykaiError
from pykai.model.kinds import BY_KIND, KindSpec
from pykai.model.meta import Obj

log = logging.getLogger("pykai.api")


class ApiError(PykaiError, RuntimeError):
    """A request the apiserver refused; ``status`` is the HTTP status."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(f"{status}: {message}")
        self.status = status


class AuthError(ApiError):
    """401 (credentials not accepted) or 403 (this identity may not do that)."""

    def __init__(self, status: int, message: str, request: str, credentials: str) -> None:
        super().__init__(status, f"{request} refused: {message} (credentials: {credentials})")
        self.detail, self.request, self.credentials = message, request, credentials

    def advice(self) -> str:
        """One line: what was refused, with which credentials, and what to check."""
        if self.status == 401:
            what = "401 Unauthorized"
            check = "the token or certificate: expired, revoked, or not this cluster's?"
        else:
            what = "403 Forbidden"
            check = "RBAC: a Role or ClusterRole granting this, bound to that identity"
        return (
            f"the apiserver refused {self.request} ({what}: {self.detail}); "
            f"credentials: {self.credentials}; check {check}"
        )


class RefusedAtStart(PykaiError, RuntimeError):
    """An AuthError while a process starts (the first list of a kind, the first lease
    request): with these credentials it cannot work, so it ends."""

    def __init__(self, error: AuthError) -> None:
        super().__init__(error.advice())
        self.error = error


LIST_PAGE = 500  # objects per list request (client-go's page size)


class _List(msgspec.Struct):
    """A list answer: its items and its metadata (version, continue token)."""

    items: list[Obj] | None = None
    metadata: dict[str, Any] = msgspec.field(default_factory=dict)


class _Event(msgspec.Struct):
    """One line of a watch."""

    type: str
    object: Obj


_LIST_DECODER = msgspec.json.Decoder(_List)
_EVENT_DECODER = msgspec.json.Decoder(_Event)
_OBJECT = msgspec.json.Decoder(dict[str, Any])
MERGE_PATCH = "application/merge-patch+json"

# what a call to the apiserver may raise: a refusal, or no answer (e.g. while it restarts)
API_ERRORS = (ApiError, httpx.HTTPError)


def transient(exc: Exception) -> bool:
    """An error that says nothing about the object written: the apiserver away or busy, a
    conflict with a newer version, an object already gone, a refusal of pykai's own credentials
    (an AuthError, logged at ERROR where it happens). Tried again, never reported."""
    if isinstance(exc, AuthError):
        return True
    if isinstance(exc, ApiError):
        return exc.status in (404, 409, 429) or exc.status >= 500
    return isinstance(exc, httpx.HTTPError)


class ApiUnreachable(PykaiError, OSError):
    """The apiserver did not answer the first request (wrong server, untrusted certificate,
    credentials that could not be had)."""


def connect(
    kubeconfig: Path | None = None,
    context: str | None = None,
    *,
    service_account: Path = SERVICE_ACCOUNT_DIR,
) -> KubeApi:
    """The one way pykai makes a client: the apiserver and credentials of ``kubeconfig``
    (else ``KUBECONFIG``, the pod's service account, ``~/.kube/config``; see kubeconfig.py),
    checked with one request (``GET /version``), so a wrong server, an untrusted certificate
    or refused credentials end the command at once with one line."""
    connection = resolve(kubeconfig, context, service_account)
    client = httpx.Client(
        base_url=connection.server,
        verify=connection.tls,
        auth=connection.auth,
        headers=list(connection.headers),
        timeout=httpx.Timeout(30.0, read=None),
        limits=httpx.Limits(max_connections=64),
    )
    api = KubeApi(client, connection.credentials, raw_poster(connection))
    try:
        api.version()
    except CredentialsUnavailable as exc:
        raise ApiUnreachable(f"{exc}; credentials: {connection.credentials}") from exc
    except httpx.HTTPError as exc:
        check = (
            "the cluster's certificate-authority"
            if "CERTIFICATE_VERIFY_FAILED" in str(exc)
            else "the cluster's server address"
        )
        raise ApiUnreachable(
            f"cannot reach the apiserver at {connection.server}: {exc}; check {check}"
        ) from exc
    return api


def raw_poster(connection: Connection) -> RawPoster | None:
    """The raw poster for the binds, or None where the environment puts a proxy between
    (``HTTPS_PROXY`` and the like, which httpx honours and http.client does not)."""
    url = urlsplit(connection.server)
    proxies = getproxies()
    proxied = bool(proxies.get(url.scheme) or proxies.get("all"))
    return None if proxied and not proxy_bypass(url.hostname or "") else RawPoster(connection)


class KubeApi:
    """list / watch / create / patch / delete / bind on one apiserver. ``credentials`` says
    which ones the client uses (for the message when the apiserver refuses them); binds go
    through ``poster`` where there is one (kube/rawpost.py), else through httpx."""

    def __init__(
        self, client: httpx.Client, credentials: str = "unknown", poster: RawPoster | None = None
    ) -> None:
        self.http, self.credentials, self.poster = client, credentials, poster

    def version(self) -> Obj:
        """The apiserver's version (``GET /version``, which every identity may read)."""
        found: Obj = self._check(self.http.get("/version", timeout=30.0), "get")
        return found

    def path(self, kind: KindSpec, namespace: str = "", name: str = "", sub: str = "") -> str:
        """The REST path of a collection, an object or its subresource."""
        base = f"/apis/{kind.group}/{kind.version}" if kind.group else f"/api/{kind.version}"
        if kind.namespaced and namespace:
            base += f"/namespaces/{namespace}"
        base += f"/{kind.plural}"
        if name:
            base += f"/{name}"
        return f"{base}/{sub}" if sub else base

    def _check(self, response: httpx.Response, verb: str) -> Any:
        """The answer's body; raises for a refusal (see ``_refused``)."""
        self._refused(response, verb)
        return response.json() if response.content else None

    def _refused(self, response: httpx.Response, verb: str) -> None:
        """Raise the error for a refusal: a 401/403 is an AuthError, logged at ERROR with the
        request and the credentials."""
        if response.status_code >= 300:
            raise self._refusal(response.status_code, response.read(), verb, response.url.path)

    def _refusal(self, status: int, body: bytes, verb: str, path: str) -> ApiError:
        """The error for a refusal: a 401/403 is an AuthError, logged at ERROR with the
        request and the credentials."""
        text = body.decode(errors="replace")
        try:
            message = str(json.loads(text)["message"])
        except (ValueError, KeyError, TypeError):
            message = text[:500]
        if status not in (401, 403):
            return ApiError(status, message)
        error = AuthError(status, message, f"{verb} {path}", self.credentials)
        log.error("%s", error)
        return error

    def list(
        self,
        kind: KindSpec,
        *,
        resource_version: str = "",
        limit: int = LIST_PAGE,
        label_selector: str = "",
    ) -> tuple[list[Obj], str]:
        """Every object of a kind (that ``label_selector`` selects, if given), with
        ``kind``/``apiVersion`` filled, and the list's version; read in pages of ``limit``
        (``continue``; an expired token is a 410). As client-go's reflector,
        ``resource_version="0"`` lets the apiserver answer from its watch cache (no etcd read;
        the cache answers whole, ignoring the limit); "" reads the latest."""
        params = {"limit": str(limit)}
        if resource_version:
            params["resourceVersion"] = resource_version
        if label_selector:
            params["labelSelector"] = label_selector
        items: list[Obj] = []
        while True:
            response = self.http.get(self.path(kind), params=params)
            self._refused(response, "list")
            body = _decoded(_LIST_DECODER, response.content, "list")
            items.extend(_received(kind, item) for item in body.items or ())
            meta = body.metadata
            if not meta.get("continue"):
                break
            params = {"limit": str(limit), "continue": str(meta["continue"])}
            if label_selector:
                params["labelSelector"] = label_selector
        return items, str(meta.get("resourceVersion", ""))

    def watch(
        self, kind: KindSpec, resource_version: str, timeout: int = 60, label_selector: str = ""
    ) -> Iterator[tuple[str, Obj]]:
        """Events (ADDED / MODIFIED / DELETED / BOOKMARK / ERROR) from ``resource_version``, of
        the objects ``label_selector`` selects if given (an object whose labels change out of
        it arrives as DELETED, into it as ADDED: the apiserver's filtered watch)."""
        params = {
            "watch": "1",
            "resourceVersion": resource_version,
            "timeoutSeconds": str(timeout),
            "allowWatchBookmarks": "true",
        }
        if label_selector:
            params["labelSelector"] = label_selector
        with self.http.stream("GET", self.path(kind), params=params) as response:
            self._refused(response, "watch")
            for line in _lines(response.iter_bytes()):
                event = _decoded(_EVENT_DECODER, line, "watch event")
                yield event.type, _received(kind, event.object)

    def get(self, kind: KindSpec, name: str, namespace: str = "") -> Obj | None:
        """One object, or None when it does not exist."""
        response = self.http.get(self.path(kind, namespace, name))
        if response.status_code == 404:
            return None
        found: Obj = self._check(response, "get")
        return found

    def create(self, kind: KindSpec, obj: Obj) -> Obj:
        """Create an object."""
        namespace = obj["metadata"].get("namespace", "") if kind.namespaced else ""
        answer = self._write("POST", self.path(kind, namespace), json.dumps(obj), "create")
        created: Obj = _decoded(_OBJECT, answer, "created object")
        return created

    def create_if_absent(self, kind: KindSpec, obj: Obj) -> Obj | None:
        """Create an object; None if one of that name exists already (409 Conflict)."""
        try:
            return self.create(kind, obj)
        except ApiError as exc:
            if exc.status != 409:
                raise
            return None

    def patch(
        self, kind: KindSpec, name: str, patch: Obj, namespace: str = "", sub: str = ""
    ) -> Obj:
        """A JSON merge patch of an object (or of its status with ``sub="status"``)."""
        path = self.path(kind, namespace, name, sub)
        answer = self._write("PATCH", path, json.dumps(patch), "patch", MERGE_PATCH)
        patched: Obj = _decoded(_OBJECT, answer, "patched object")
        return patched

    def delete(
        self, kind: KindSpec, name: str, namespace: str = "", grace_seconds: int | None = None
    ) -> None:
        """Delete an object (a missing one is not an error); ``grace_seconds=0`` removes a
        terminating pod at once, as its kubelet does once the containers stopped."""
        path = self.path(kind, namespace, name)
        query = "" if grace_seconds is None else f"?gracePeriodSeconds={grace_seconds}"
        self._write("DELETE", path + query, "", "delete", missing_ok=True)

    def bind(self, namespace: str, name: str, node: str, uid: str = "") -> None:
        """POST pods/{name}/binding: one write binds a pod to a node; ``uid`` names the pod
        decided about, as kube-scheduler's Binding does."""
        metadata = {"name": name, "namespace": namespace} | ({"uid": uid} if uid else {})
        body = {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": metadata,
            "target": {"apiVersion": "v1", "kind": "Node", "name": node},
        }
        path = self.path(BY_KIND["Pod"], namespace, name, "binding")
        self._write("POST", path, json.dumps(body), "create")

    def _write(
        self,
        method: str,
        path: str,
        content: str,
        verb: str,
        content_type: str = "application/json",
        *,
        missing_ok: bool = False,
    ) -> bytes:
        """One write; the answer's body (b"" for a missing object with ``missing_ok``).
        Through the poster where there is one (kube/rawpost.py: thousands of binds, patches
        and events cost a fraction of httpx's CPU); a 401 there is asked again through httpx,
        whose auth flow refreshes credentials. A refusal raises (``_refusal``)."""
        body = content.encode()
        if self.poster is not None:
            status, answer = self.poster.send(method, path, body, content_type)
            if status != 401:
                if status < 300:
                    return answer
                if status == 404 and missing_ok:
                    return b""
                raise self._refusal(status, answer, verb, path)
        response = self.http.request(
            method, path, content=body, headers={"Content-Type": content_type}
        )
        if response.status_code == 404 and missing_ok:
            return b""
        self._refused(response, verb)
        return response.content


def _decoded(decoder: msgspec.json.Decoder[Any], data: bytes, what: str) -> Any:
    """``data`` decoded; an answer that is not what the API sends is an ApiError (the caller
    retries, as for any failed request)."""
    try:
        return decoder.decode(data)
    except msgspec.DecodeError as exc:
        raise ApiError(502, f"undecodable {what}: {exc}") from exc


def _received(kind: KindSpec, obj: Obj) -> Obj:
    """An object as read: ``kind``/``apiVersion`` filled (lists leave them out), managed
    fields dropped."""
    if "kind" not in obj:  # a watch event's object has both: nothing is worked out for it
        obj["kind"] = kind.kind
    if "apiVersion" not in obj:
        obj["apiVersion"] = kind.api_version
    meta = obj.get("metadata")
    if isinstance(meta, dict):
        meta.pop("managedFields", None)
    return obj


def _lines(chunks: Iterator[bytes]) -> Iterator[bytes]:
    """The non-empty lines of a byte stream (a watch sends one JSON event per line)."""
    pending: list[bytes] = []
    for chunk in chunks:
        if b"\n" not in chunk:
            pending.append(chunk)
            continue
        *complete, rest = chunk.split(b"\n")
        if pending:
            complete[0] = b"".join([*pending, complete[0]])
            pending = []
        yield from (line for line in complete if line.strip())
        if rest:
            pending.append(rest)
    tail = b"".join(pending)
    if tail.strip():
        yield tail
