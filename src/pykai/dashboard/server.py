"""Serving the dashboard over HTTP with the standard library: the page and its script and
style (package files: no CDN, nothing fetched from elsewhere) and ``/api/dashboard``, the page
model as JSON, which the script polls. Read-only: every other method is refused."""

from __future__ import annotations

import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib.resources import files

API_PATH = "/api/dashboard"
_ASSETS = {
    "/": ("index.html", "text/html; charset=utf-8"),
    "/dashboard.js": ("dashboard.js", "text/javascript; charset=utf-8"),
    "/dashboard.css": ("dashboard.css", "text/css; charset=utf-8"),
}


def asset(name: str) -> bytes:
    """A file of the page, as shipped in the package."""
    return files("pykai.dashboard").joinpath("static", name).read_bytes()


def serve_dashboard(address: tuple[str, int], page: Callable[[], bytes]) -> ThreadingHTTPServer:
    """Serve the dashboard on ``address`` from a daemon thread (``shutdown()`` stops it);
    ``page`` gives the page model's JSON."""
    assets = {path: (asset(name), kind) for path, (name, kind) in _ASSETS.items()}

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            path = self.path.split("?", 1)[0]
            if path == API_PATH:
                self._send(200, page(), "application/json")
            elif path in assets:
                self._send(200, *assets[path])
            else:
                self._send(404, b"not found\n", "text/plain; charset=utf-8")

        def _send(self, code: int, body: bytes, content_type: str) -> None:
            self.send_response(code)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Cache-Control", "no-store")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            """Page loads and polls are not logged."""

    server = ThreadingHTTPServer(address, Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, name="dashboard", daemon=True).start()
    return server
