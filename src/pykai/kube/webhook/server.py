"""The HTTPS server of the webhook: every request gets an answer (a malformed or oversized
one, or an error of the webhook itself, is a refusal with a message, never a dropped
connection); HTTP/1.1 with keep-alive and TCP_NODELAY, since the apiserver reuses its
connections."""

from __future__ import annotations

import json
import logging
import socket
import ssl
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from pykai.controllers.validation import Lister
from pykai.kube.webhook.mutation import mutate
from pykai.kube.webhook.tls import Tls
from pykai.kube.webhook.validation import review
from pykai.model.meta import Obj

log = logging.getLogger("pykai.webhook")
PATH = "/validate"
MUTATE_PATH = "/mutate"
MAX_BODY = 6 * 1024 * 1024
"""The largest review read: an UPDATE carries the object and the old one, each at most the
1.5 MiB etcd stores, plus the review around them; anything larger is refused unread."""
HANDSHAKE_SECONDS = 10
IDLE_SECONDS = 100  # beyond the apiserver's 90 s idle timeout: it closes first, never us mid-reuse


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
