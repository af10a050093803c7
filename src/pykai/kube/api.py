"""A small Kubernetes REST client over httpx, for the kinds pykai reads and writes.

Objects stay plain dicts (the engine reads Kubernetes-shaped dicts). Binding is posted raw
because typed clients choke on the Status object the apiserver answers with.
"""

from __future__ import annotations

import json
import os
from collections.abc import Generator, Iterator
from pathlib import Path
from typing import Any

import httpx
import yaml

from pykai.model.kinds import BY_KIND, KindSpec
from pykai.model.meta import Obj

# where each kind lives in the API: the table of model/kinds.py
Kind = KindSpec
KINDS = BY_KIND

SERVICE_ACCOUNT_DIR = Path("/var/run/secrets/kubernetes.io/serviceaccount")


class ApiError(RuntimeError):
    """A request the apiserver refused; ``status`` is the HTTP status."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(f"{status}: {message}")
        self.status = status


# what a call to the apiserver may raise: a refusal, or no answer (e.g. while it restarts)
API_ERRORS = (ApiError, httpx.HTTPError)


def transient(exc: Exception) -> bool:
    """An error that says nothing about the object written: the apiserver away or busy, a
    conflict with a newer version, an object already gone. Tried again, never reported."""
    if isinstance(exc, ApiError):
        return exc.status in (404, 409, 429) or exc.status >= 500
    return isinstance(exc, httpx.HTTPError)


def client_from_kubeconfig(path: Path) -> httpx.Client:
    """An httpx client for the current context of a kubeconfig (token or client-cert auth)."""
    config = yaml.safe_load(path.read_text())
    context_name = config.get("current-context")
    context = next(c["context"] for c in config["contexts"] if c["name"] == context_name)
    cluster = next(c["cluster"] for c in config["clusters"] if c["name"] == context["cluster"])
    user = next(u["user"] for u in config["users"] if u["name"] == context["user"])
    headers = {"Authorization": f"Bearer {user['token']}"} if user.get("token") else {}
    verify: bool | str = not cluster.get("insecure-skip-tls-verify", False)
    if verify and cluster.get("certificate-authority"):
        verify = cluster["certificate-authority"]
    cert = (
        (user["client-certificate"], user["client-key"]) if user.get("client-certificate") else None
    )
    return httpx.Client(
        base_url=cluster["server"],
        headers=headers,
        verify=verify,
        cert=cert,
        timeout=httpx.Timeout(30.0, read=None),
        limits=httpx.Limits(max_connections=64),
    )


class _ServiceAccountToken(httpx.Auth):
    """The pod's service-account token, read again for every request (the kubelet rotates it)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        request.headers["Authorization"] = f"Bearer {self.path.read_text().strip()}"
        yield request


def in_cluster_client(directory: Path = SERVICE_ACCOUNT_DIR) -> httpx.Client:
    """An httpx client for the apiserver a pod runs under (service-account token and CA)."""
    host, port = (
        os.environ.get("KUBERNETES_SERVICE_HOST"),
        os.environ.get("KUBERNETES_SERVICE_PORT", "443"),
    )
    if not host or not (directory / "token").exists():
        raise FileNotFoundError(
            "not running in a pod (no KUBERNETES_SERVICE_HOST or service-account token): "
            "pass --kubeconfig PATH"
        )
    return httpx.Client(
        base_url=f"https://{host}:{port}",
        auth=_ServiceAccountToken(directory / "token"),
        verify=str(directory / "ca.crt"),
        timeout=httpx.Timeout(30.0, read=None),
        limits=httpx.Limits(max_connections=64),
    )


class KubeApi:
    """list / watch / create / patch / delete / bind on one apiserver."""

    def __init__(self, client: httpx.Client) -> None:
        self.http = client

    @classmethod
    def from_kubeconfig(cls, path: Path) -> KubeApi:
        """A client for the kubeconfig's current context."""
        return cls(client_from_kubeconfig(path))

    @classmethod
    def connect(cls, kubeconfig: Path | None) -> KubeApi:
        """A client for ``kubeconfig``, or the in-cluster configuration without one."""
        return cls(client_from_kubeconfig(kubeconfig) if kubeconfig else in_cluster_client())

    def path(self, kind: Kind, namespace: str = "", name: str = "", sub: str = "") -> str:
        """The REST path of a collection, an object or its subresource."""
        base = f"/apis/{kind.group}/{kind.version}" if kind.group else f"/api/{kind.version}"
        if kind.namespaced and namespace:
            base += f"/namespaces/{namespace}"
        base += f"/{kind.plural}"
        if name:
            base += f"/{name}"
        return f"{base}/{sub}" if sub else base

    def _check(self, response: httpx.Response) -> Any:
        if response.status_code >= 400:
            raise ApiError(response.status_code, response.text[:500])
        return response.json() if response.content else None

    def list(self, kind: Kind) -> tuple[list[Obj], str]:
        """Every object of a kind, with ``kind``/``apiVersion`` filled, and the list's version."""
        body = self._check(self.http.get(self.path(kind)))
        items = body.get("items") or []
        for item in items:
            item.setdefault("kind", kind.kind)
            item.setdefault("apiVersion", kind.api_version)
        return items, str(body["metadata"].get("resourceVersion", ""))

    def watch(
        self, kind: Kind, resource_version: str, timeout: int = 60
    ) -> Iterator[tuple[str, Obj]]:
        """Events (ADDED / MODIFIED / DELETED / BOOKMARK / ERROR) from ``resource_version``."""
        params = {
            "watch": "1",
            "resourceVersion": resource_version,
            "timeoutSeconds": str(timeout),
            "allowWatchBookmarks": "true",
        }
        with self.http.stream("GET", self.path(kind), params=params) as response:
            if response.status_code >= 400:
                raise ApiError(response.status_code, response.read().decode()[:500])
            for line in response.iter_lines():
                if line:
                    event = json.loads(line)
                    obj = event["object"]
                    obj.setdefault("kind", kind.kind)
                    obj.setdefault("apiVersion", kind.api_version)
                    yield event["type"], obj

    def get(self, kind: Kind, name: str, namespace: str = "") -> Obj | None:
        """One object, or None when it does not exist."""
        response = self.http.get(self.path(kind, namespace, name))
        if response.status_code == 404:
            return None
        found: Obj = self._check(response)
        return found

    def create(self, kind: Kind, obj: Obj) -> Obj:
        """Create an object."""
        namespace = obj["metadata"].get("namespace", "") if kind.namespaced else ""
        created: Obj = self._check(self.http.post(self.path(kind, namespace), json=obj))
        return created

    def create_if_absent(self, kind: Kind, obj: Obj) -> Obj | None:
        """Create an object; None if one of that name exists already (409 Conflict)."""
        try:
            return self.create(kind, obj)
        except ApiError as exc:
            if exc.status != 409:
                raise
            return None

    def patch(self, kind: Kind, name: str, patch: Obj, namespace: str = "", sub: str = "") -> Obj:
        """A JSON merge patch of an object (or of its status with ``sub="status"``)."""
        response = self.http.patch(
            self.path(kind, namespace, name, sub),
            content=json.dumps(patch),
            headers={"Content-Type": "application/merge-patch+json"},
        )
        patched: Obj = self._check(response)
        return patched

    def delete(
        self, kind: Kind, name: str, namespace: str = "", grace_seconds: int | None = None
    ) -> None:
        """Delete an object (a missing one is not an error); ``grace_seconds=0`` removes a
        terminating pod at once, as its kubelet does once the containers stopped."""
        params = {} if grace_seconds is None else {"gracePeriodSeconds": str(grace_seconds)}
        response = self.http.delete(self.path(kind, namespace, name), params=params)
        if response.status_code != 404:
            self._check(response)

    def bind(self, namespace: str, name: str, node: str) -> None:
        """POST pods/{name}/binding: one write binds a pod to a node."""
        body = {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": {"name": name, "namespace": namespace},
            "target": {"apiVersion": "v1", "kind": "Node", "name": node},
        }
        response = self.http.post(self.path(KINDS["Pod"], namespace, name, "binding"), json=body)
        if response.status_code >= 300:
            raise ApiError(response.status_code, response.text[:500])
