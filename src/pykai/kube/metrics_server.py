"""The HTTP endpoints of ``pykai run --metrics-address``: ``/metrics`` (Prometheus text format),
``/healthz`` (liveness: the run loop still turns) and ``/readyz`` (readiness: every informer
has listed its kind). A standby replica is ready: its caches are warm for a failover, and
whether it leads is said in the body and by ``pykai_leader``. Given routes, it also answers
their JSON endpoints: the queues' pending PodGroups (kube/pending.py) and Kueue's pending
Workloads (kube/visibility.py)."""

from __future__ import annotations

import json
from collections.abc import Callable
from http.server import ThreadingHTTPServer

from prometheus_client import generate_latest

from pykai.kube.endpoints import Answer
from pykai.kube.metrics import RunMetrics
from pykai.serving import QuietHandler, serve_in_thread

Route = Callable[[str], Answer | None]
"""More JSON endpoints: (status, body) for a request path it serves, else None."""

# the classic text format, which every Prometheus reads (and what generate_latest writes)
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


def serve_metrics(
    address: tuple[str, int], metrics: RunMetrics, routes: tuple[Route, ...] = ()
) -> ThreadingHTTPServer:
    """Start serving in a daemon thread (and ``routes``, e.g. Kueue's visibility API);
    ``shutdown()`` stops it."""

    class Handler(QuietHandler):
        def do_GET(self) -> None:
            path = self.path.partition("?")[0]
            if path == "/metrics":
                self.send_body(200, generate_latest(metrics.registry), CONTENT_TYPE)
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
                self.send_body(code, json.dumps(body).encode(), "application/json")
            else:
                self._text(404, "not found: /metrics, /healthz or /readyz")

        def _text(self, code: int, text: str) -> None:
            self.send_body(code, (text + "\n").encode(), "text/plain; charset=utf-8")

    return serve_in_thread(address, Handler, "metrics")
