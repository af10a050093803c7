"""The HTTP endpoints of ``pykai run --metrics-address``: ``/metrics`` (Prometheus text format),
``/healthz`` (liveness: the run loop still turns) and ``/readyz`` (readiness: every informer
has listed its kind). A standby replica is ready: its caches are warm for a failover, and
whether it leads is said in the body and by ``pykai_leader``. Given routes, it also answers
their JSON endpoints: the queues' pending PodGroups (kube/pending.py) and Kueue's pending
Workloads (kube/visibility.py)."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from prometheus_client import generate_latest

from pykai.kube.metrics import RunMetrics
from pykai.model.meta import Obj

Route = Callable[[str], tuple[int, Obj] | None]
"""More JSON endpoints: (status, body) for a request path it serves, else None."""

# the classic text format, which every Prometheus reads (and what generate_latest writes)
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


def serve_metrics(
    address: tuple[str, int], metrics: RunMetrics, routes: tuple[Route, ...] = ()
) -> ThreadingHTTPServer:
    """Start serving in a daemon thread (and ``routes``, e.g. Kueue's visibility API);
    ``shutdown()`` stops it."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            path = self.path.partition("?")[0]
            if path == "/metrics":
                self._send(200, generate_latest(metrics.registry), CONTENT_TYPE)
            elif path == "/healthz":
                alive = metrics.alive()
                self._text(200 if alive else 503, "ok" if alive else "the run loop is stuck")
            elif path == "/readyz":
                leader = "leader" if metrics.leading else "standby"
                if metrics.ready:
                    self._text(200, f"ok ({leader})")
                else:
                    self._text(503, "informers have not listed every kind yet")
            elif found := next(filter(None, (route(self.path) for route in routes)), None):
                code, body = found
                self._send(code, json.dumps(body).encode(), "application/json")
            else:
                self._text(404, "not found: /metrics, /healthz or /readyz")

        def _text(self, code: int, text: str) -> None:
            self._send(code, (text + "\n").encode(), "text/plain; charset=utf-8")

        def _send(self, code: int, body: bytes, content_type: str) -> None:
            self.send_response(code)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            """Scrapes and probes are not logged."""

    server = ThreadingHTTPServer(address, Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, name="metrics", daemon=True).start()
    return server
