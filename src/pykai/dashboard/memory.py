"""What a dashboard backend remembers between pages: recent evictions and each queue's
allocation over time (kept in memory, sampled once per cycle or refresh). Thread-safe: the
loop that samples and the HTTP threads that read may differ."""

from __future__ import annotations

import re
import threading
from collections import deque
from collections.abc import Mapping
from typing import Any

from pykai.controllers.outcome import ACTIONS, eviction_message
from pykai.dashboard.model import Eviction
from pykai.engine.decisions import Evict
from pykai.model.meta import Obj, parse_time

EVICTIONS_KEPT = 200
SAMPLES_KEPT = 720  # an hour at one sample per 5 s
_ACTION_SUFFIX = re.compile(r"^(?P<message>.*) \(action: (?P<action>[a-z]+)\)$", re.DOTALL)
_JOB_KEY = re.compile(r"[a-z0-9][-a-z0-9.]*/[a-z0-9][-a-z0-9.]*")
_STALE_GANG = ACTIONS["StaleGang"]


def from_decision(evict: Evict, now: float) -> Eviction:
    """An eviction the engine decided at ``now``."""
    return from_message(now, evict.namespace, evict.name, eviction_message(evict))


def from_event(event: Obj) -> Eviction | None:
    """The eviction an ``Evict`` event on a pod records (None for any other event)."""
    involved = event.get("involvedObject") or {}
    if event.get("reason") != "Evict" or involved.get("kind") != "Pod":
        return None
    stamp = event.get("lastTimestamp") or event.get("firstTimestamp") or ""
    return from_message(
        parse_time(stamp) if stamp else 0.0,
        str(involved.get("namespace", "")),
        str(involved.get("name", "")),
        str(event.get("message", "")),
    )


def from_message(time: float, namespace: str, pod: str, message: str) -> Eviction:
    """An eviction from what its ``Evict`` event says: ``<why> (action: <action>)``, where the
    first job key (``namespace/name``) in ``<why>`` is the preemptor's (a stale gang has none)."""
    matched = _ACTION_SUFFIX.match(message)
    action = matched["action"] if matched else ""
    why = matched["message"] if matched else message
    found = _JOB_KEY.search(why)
    preemptor = found.group(0) if found and action != _STALE_GANG else ""
    return Eviction(time, namespace, pod, action, preemptor, why)


class Memory:
    """Recent evictions (newest kept) and samples of allocated GPUs per queue."""

    def __init__(self, evictions: int = EVICTIONS_KEPT, samples: int = SAMPLES_KEPT) -> None:
        self._lock = threading.Lock()
        self._evictions: deque[Eviction] = deque(maxlen=evictions)
        self._samples: deque[tuple[float, dict[str, float]]] = deque(maxlen=samples)

    def evicted(self, eviction: Eviction) -> None:
        """Remember an eviction."""
        with self._lock:
            self._evictions.append(eviction)

    def sample(self, now: float, allocated: Mapping[str, float]) -> None:
        """Remember each queue's allocation at ``now`` (a sample at the same time replaces
        the last one)."""
        with self._lock:
            if self._samples and self._samples[-1][0] == now:
                self._samples.pop()
            self._samples.append((now, dict(allocated)))

    def evictions(self) -> list[Eviction]:
        """The evictions remembered, oldest first."""
        with self._lock:
            return list(self._evictions)

    def history(self) -> dict[str, Any]:
        """``queues`` (every queue sampled) and ``samples``: [time, [GPUs per queue]]."""
        with self._lock:
            samples = list(self._samples)
        queues = sorted({name for _, allocated in samples for name in allocated})
        return {
            "queues": queues,
            "samples": [[t, [allocated.get(q, 0.0) for q in queues]] for t, allocated in samples],
        }
