"""Small read-only HTTP servers on the standard library, each in a daemon thread: the base of
``pykai run``'s metrics and health endpoints and of the dashboard. Requests are not logged
(probes, scrapes and polls would flood the log)."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import ClassVar


class QuietHandler(BaseHTTPRequestHandler):
    """A request handler that answers with whole bodies and logs nothing."""

    extra_headers: ClassVar[tuple[tuple[str, str], ...]] = ()  # sent with every answer

    def send_body(self, code: int, body: bytes, content_type: str) -> None:
        """Answer ``code`` with ``body``."""
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for name, value in self.extra_headers:
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        """Requests are not logged."""


def serve_in_thread(
    address: tuple[str, int], handler: type[QuietHandler], name: str
) -> ThreadingHTTPServer:
    """Serve ``handler`` on ``address`` from a daemon thread named ``name``; ``shutdown()``
    stops it."""
    server = ThreadingHTTPServer(address, handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, name=name, daemon=True).start()
    return server
