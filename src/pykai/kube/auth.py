"""Credentials as httpx Auth flows, as client-go applies them: a token file read again for
every request (the kubelet rotates service-account tokens), and exec plugins (the
ExecCredential protocol, v1alpha1 / v1beta1 / v1), whose answer is kept until it expires or
the apiserver answers 401. One flow serves every thread of a client."""

from __future__ import annotations

import base64
import json
import logging
import math
import os
import ssl
import subprocess
import threading
import time
from collections.abc import Generator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from pykai.kube.trust import show_certificate
from pykai.model.errors import PykaiError
from pykai.model.meta import parse_time

log = logging.getLogger("pykai.api")

EXEC_API_VERSIONS = tuple(
    f"client.authentication.k8s.io/{v}" for v in ("v1", "v1beta1", "v1alpha1")
)
EXEC_TIMEOUT = 60.0  # seconds a plugin may take (cloud CLIs may ask a remote service)


class CredentialsUnavailable(PykaiError, httpx.RequestError):
    """Credentials could not be had for a request (an exec plugin failed, a token file is
    missing): logged at ERROR, and tried again like a request the apiserver did not answer."""


def _unavailable(message: str) -> CredentialsUnavailable:
    log.error("%s", message)
    return CredentialsUnavailable(message)


def token_identity(token: str) -> str:
    """The subject a service-account token (a JWT) names, or "" for another kind of token."""
    try:
        payload = token.split(".")[1]
        claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
        return str(claims.get("sub", ""))
    except (IndexError, ValueError, AttributeError):
        return ""


class BearerToken(httpx.Auth):
    """A token given in the kubeconfig."""

    def __init__(self, token: str) -> None:
        self.header = f"Bearer {token}"

    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        request.headers["Authorization"] = self.header
        yield request


class TokenFile(httpx.Auth):
    """A token read from its file for every request, so a rotated token is used at once."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def read(self) -> str:
        """The token in the file now."""
        try:
            token = self.path.read_text().strip()
        except OSError as exc:
            raise _unavailable(f"cannot read the token file {self.path}: {exc}") from exc
        if not token:
            raise _unavailable(f"the token file {self.path} is empty")
        return token

    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        request.headers["Authorization"] = f"Bearer {self.read()}"
        yield request


@dataclass(frozen=True)
class ExecPlugin:
    """A kubeconfig user's ``exec`` section, its relative command already resolved."""

    api_version: str
    command: str
    args: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    install_hint: str = ""
    cluster: dict[str, Any] | None = None  # sent when provideClusterInfo

    def environment(self) -> dict[str, str]:
        """The plugin's environment: pykai's, its ``env`` entries, and KUBERNETES_EXEC_INFO
        (non-interactive, with the cluster when the kubeconfig asks for it)."""
        spec: dict[str, Any] = {"interactive": False}
        if self.cluster is not None:
            spec["cluster"] = self.cluster
        info = {"apiVersion": self.api_version, "kind": "ExecCredential", "spec": spec}
        return {**os.environ, **dict(self.env), "KUBERNETES_EXEC_INFO": json.dumps(info)}

    def run(self) -> dict[str, Any]:
        """Run the plugin once; its ExecCredential's ``status``."""
        name = f"exec plugin {self.command}"
        try:
            done = subprocess.run(
                [self.command, *self.args],
                env=self.environment(),
                stdin=subprocess.DEVNULL,
                capture_output=True,
                timeout=EXEC_TIMEOUT,
                check=False,
            )
        except FileNotFoundError as exc:
            hint = f" ({self.install_hint.strip()})" if self.install_hint else ""
            raise _unavailable(f"{name} not found{hint}") from exc
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise _unavailable(f"{name} failed: {exc}") from exc
        if done.returncode != 0:
            said = done.stderr.decode(errors="replace").strip()[-500:]
            raise _unavailable(f"{name} exited {done.returncode}: {said}")
        try:
            answer = json.loads(done.stdout)
        except ValueError as exc:
            raise _unavailable(f"{name} did not print an ExecCredential: {exc}") from exc
        if not isinstance(answer, dict) or answer.get("kind") != "ExecCredential":
            raise _unavailable(f"{name} did not print an ExecCredential")
        if answer.get("apiVersion") != self.api_version:
            raise _unavailable(
                f"{name} answered with apiVersion {answer.get('apiVersion')!r}; "
                f"the kubeconfig asks for {self.api_version}"
            )
        status = answer.get("status")
        if not isinstance(status, dict) or not (
            status.get("token")
            or (status.get("clientCertificateData") and status.get("clientKeyData"))
        ):
            raise _unavailable(f"{name} gave neither a token nor a client certificate and key")
        return status


class ExecCredentials(httpx.Auth):
    """Credentials from an exec plugin: run when first needed, again once they expire
    (``expirationTimestamp``) or the apiserver answers 401. A client certificate it gives
    is loaded into ``tls``, the client's TLS context, for the connections opened after."""

    def __init__(self, plugin: ExecPlugin, tls: ssl.SSLContext) -> None:
        self.plugin, self.tls = plugin, tls
        self._lock = threading.Lock()
        self._token = ""
        self._expires = 0.0
        self._generation = 0  # how many times the plugin answered

    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        token, generation = self._current()
        if token:
            request.headers["Authorization"] = f"Bearer {token}"
        response = yield request
        if response.status_code == 401:
            token, _ = self._current(refused=generation)
            if token:
                request.headers["Authorization"] = f"Bearer {token}"
            yield request

    def _current(self, refused: int = -1) -> tuple[str, int]:
        """The token, and which answer of the plugin it is; the plugin runs again when there
        is none yet, it expired, or ``refused`` is still the latest answer."""
        with self._lock:
            if time.time() >= self._expires or refused == self._generation:
                self._refresh()
            return self._token, self._generation

    def _refresh(self) -> None:
        status = self.plugin.run()
        if status.get("clientCertificateData"):
            cert, key = str(status["clientCertificateData"]), str(status["clientKeyData"])
            try:
                show_certificate(self.tls, cert.encode(), key.encode())
            except ssl.SSLError as exc:
                raise _unavailable(
                    f"exec plugin {self.plugin.command} gave an unusable certificate: {exc}"
                ) from exc
        self._token = str(status.get("token") or "")
        stamp = status.get("expirationTimestamp")
        try:
            self._expires = parse_time(stamp) if stamp else math.inf
        except ValueError as exc:
            raise _unavailable(
                f"exec plugin {self.plugin.command}: expirationTimestamp {stamp!r}: {exc}"
            ) from exc
        self._generation += 1
