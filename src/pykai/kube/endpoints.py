"""What the JSON endpoints of ``pykai run``'s HTTP server share (the queues' pending
PodGroups, kube/pending.py; Kueue's visibility API, kube/visibility.py): a paged request's
``limit`` and ``offset``, and the Kubernetes Status that answers a failed request, as an
apiserver's does."""

from __future__ import annotations

from typing import NamedTuple
from urllib.parse import parse_qs

from pykai.model.meta import Obj

Answer = tuple[int, Obj]
"""An HTTP status and the JSON body that goes with it."""


class Page(NamedTuple):
    """Which items a paged request asks for: ``limit`` of them from ``offset``."""

    limit: int
    offset: int


def page(query: str, default_limit: int) -> Page | Answer:
    """The page a request's query string asks for, as given (the caller bounds it; the limit
    is ``default_limit`` and the offset 0 when not given); a 400 answer when the limit or the
    offset is not a whole number."""
    values = parse_qs(query)
    try:
        limit = int(values.get("limit", [str(default_limit)])[0])
        offset = int(values.get("offset", ["0"])[0])
    except ValueError:
        return failure(400, "BadRequest", "limit and offset must be whole numbers")
    return Page(limit, offset)


def failure(code: int, reason: str, message: str) -> Answer:
    """A failed request's answer: ``code`` and a Kubernetes Status saying why."""
    status = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    }
    return code, status
