"""Writes of small JSON bodies over plain ``http.client`` keep-alive connections, one per
thread (TLS set up once per connection): the binds and the status and annotation patches,
thousands at a time, cost the process a fraction of the CPU httpx spends on each request.
Trust, client certificates and credentials come from the same kubeconfig Connection as the
httpx client (kube/kubeconfig.py); a 401 is left to the caller, which asks again through
httpx (its auth flow refreshes credentials).
"""

from __future__ import annotations

import http.client
import select
import threading
from collections.abc import Callable
from urllib.parse import urlsplit

import httpx

from pykai.kube.kubeconfig import Connection


class RawPoster:
    """``send(method, path, body)`` -> (status, body) on this thread's connection to the apiserver;
    an error on the way is an httpx.TransportError (the callers' API_ERRORS). Each answer is
    told to the ``answered`` hooks (method, path, status), as httpx's response hooks are; the
    ``before`` hooks see each request first (method, path) and may refuse it by raising."""

    def __init__(self, connection: Connection, timeout: float = 30.0) -> None:
        url = urlsplit(connection.server)
        self.host, self.port = url.hostname or "", url.port
        self.prefix = url.path.rstrip("/")
        self.secure = url.scheme == "https"
        self.tls, self.auth, self.timeout = connection.tls, connection.auth, timeout
        self.headers = {"Content-Type": "application/json", "Accept": "application/json"}
        self.headers |= dict(connection.headers)
        self.answered: list[Callable[[str, str, int], None]] = []
        self.before: list[Callable[[str, str], None]] = []  # may refuse a request: it raises
        self._local = threading.local()

    def post(self, path: str, body: bytes) -> tuple[int, bytes]:
        """POST ``body`` (JSON) to ``path``; the answer's status and body."""
        return self.send("POST", path, body)

    def send(
        self, method: str, path: str, body: bytes, content_type: str = "application/json"
    ) -> tuple[int, bytes]:
        """``method`` with ``body`` (of ``content_type``) to ``path``; the answer's status
        and body."""
        for check in self.before:
            check(method, path)
        connection = self._connection()
        headers = self._headers(method, path)
        if content_type != headers["Content-Type"]:
            headers = headers | {"Content-Type": content_type}
        try:
            connection.request(method, self.prefix + path, body, headers)
            response = connection.getresponse()
            data = response.read()
        except (OSError, http.client.HTTPException) as exc:
            connection.close()
            self._local.connection = None
            raise httpx.TransportError(f"{method} {path}: {exc!r}") from exc
        for hook in self.answered:
            hook(method, path, response.status)
        return response.status, data

    def _connection(self) -> http.client.HTTPConnection:
        """This thread's connection, a new one if the server closed it while idle (its socket
        is readable: the close, or bytes no request asked for)."""
        connection: http.client.HTTPConnection | None = getattr(self._local, "connection", None)
        if connection is not None and connection.sock is not None:
            readable, _, _ = select.select([connection.sock], [], [], 0)
            if readable:
                connection.close()
                connection = None
        if connection is None:
            if self.secure:
                connection = http.client.HTTPSConnection(
                    self.host, self.port, timeout=self.timeout, context=self.tls
                )
            else:
                connection = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)
            self._local.connection = connection
        return connection

    def _headers(self, method: str, path: str) -> dict[str, str]:
        """The fixed headers and the credentials' (what the auth flow adds to a request)."""
        if self.auth is None:
            return self.headers
        request = httpx.Request(method, f"https://{self.host}{self.prefix}{path}")
        sent = next(self.auth.sync_auth_flow(request))
        authorization = sent.headers.get("Authorization")
        return self.headers | {"Authorization": authorization} if authorization else self.headers
