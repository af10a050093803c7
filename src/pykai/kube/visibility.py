"""Kueue's visibility API on ``pykai run``'s HTTP server: the pending Workloads of a
ClusterQueue or LocalQueue with their positions, at Kueue's paths and in its
``PendingWorkloadsSummary`` shape (engine/kueue/positions.py computes them; the runner hands
over the latest after each Kueue pass, so a request never reads the cache under the cycle):

- ``/apis/visibility.kueue.x-k8s.io/VERSION/clusterqueues/NAME/pendingworkloads``
- ``/apis/visibility.kueue.x-k8s.io/VERSION/namespaces/NS/localqueues/NAME/pendingworkloads``

VERSION is ``v1beta1`` or ``v1beta2``; ``?limit=`` (default and at most 1000) and ``?offset=``
as Kueue reads them. Only the replica that leads computes them (a standby answers 503)."""

from __future__ import annotations

import re
import threading
from urllib.parse import urlsplit

from pykai.engine.kueue.positions import (
    MAX_LIMIT,
    PendingWorkload,
    in_local_queue,
    pending_workloads,
    summary,
)
from pykai.kube.endpoints import Answer, Page, failure, page
from pykai.model.meta import Obj

_PATH = re.compile(
    r"^/apis/visibility\.kueue\.x-k8s\.io/(?P<version>v1beta1|v1beta2)/"
    r"(?:clusterqueues/(?P<cq>[^/]+)|namespaces/(?P<ns>[^/]+)/localqueues/(?P<lq>[^/]+))"
    r"/pendingworkloads/?$"
)


class Visibility:
    """The latest positions, and the answers to visibility requests."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pending: dict[str, list[PendingWorkload]] | None = None
        self._local_queues: frozenset[tuple[str, str]] = frozenset()

    def update(
        self, workloads: list[Obj], local_queues: list[Obj], cluster_queues: list[Obj]
    ) -> None:
        """Positions from the objects as they are now."""
        pending = pending_workloads(workloads, local_queues, cluster_queues)
        names = frozenset(
            (str(q["metadata"].get("namespace") or "default"), str(q["metadata"]["name"]))
            for q in local_queues
        )
        with self._lock:
            self._pending, self._local_queues = pending, names

    def answer(self, target: str) -> Answer | None:
        """(HTTP status, JSON body) for a visibility request; None for any other path."""
        url = urlsplit(target)
        match = _PATH.match(url.path)
        if match is None:
            return None
        asked = page(url.query, MAX_LIMIT)
        if not isinstance(asked, Page):
            return asked
        limit, offset = asked
        with self._lock:
            pending, local_queues = self._pending, self._local_queues
        if pending is None:
            return failure(503, "ServiceUnavailable", "no Kueue pass yet on this replica")
        version = match["version"]
        if match["cq"] is not None:
            if match["cq"] not in pending:
                message = f'clusterqueues.kueue.x-k8s.io "{match["cq"]}" not found'
                return failure(404, "NotFound", message)
            return 200, summary(pending[match["cq"]], version, limit, offset)
        if (match["ns"], match["lq"]) not in local_queues:
            message = f'localqueues.kueue.x-k8s.io "{match["lq"]}" not found'
            return failure(404, "NotFound", message)
        found = in_local_queue(pending, match["ns"], match["lq"])
        return 200, summary(found, version, limit, offset)
