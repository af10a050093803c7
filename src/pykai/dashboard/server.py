"""Serving the dashboard over HTTP with the standard library: the page and its script and
style (package files: no CDN, nothing fetched from elsewhere) and ``/api/dashboard``, the page
model as JSON, which the script polls. Read-only: every other method is refused."""

from __future__ import annotations

from collections.abc import Callable
from http.server import ThreadingHTTPServer
from importlib.resources import files

from pykai.serving import QuietHandler, serve_in_thread

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

    class Handler(QuietHandler):
        extra_headers = (("Cache-Control", "no-store"),)  # pages change every poll

        def do_GET(self) -> None:
            path = self.path.split("?", 1)[0]
            if path == API_PATH:
                self.send_body(200, page(), "application/json")
            elif path in assets:
                self.send_body(200, *assets[path])
            else:
                self.send_body(404, b"not found\n", "text/plain; charset=utf-8")

    return serve_in_thread(address, Handler, "dashboard")
