"""What a dashboard backend remembers between pages: recent evictions and each queue's
allocation over time (kept in memory, sampled once per cycle or refresh). Thread-safe: the
loop that samples and the HTTP threads that read may differ."""

from __future__ import annotations

import re
import threading
from collections import deque
from collections.abc import Mapping
from typing import Any

from pykai.controllers.outcome import split_eviction_message
from pykai.dashboard.model import Eviction
from pykai.engine.decisions import EVICTING_ACTIONS, Evict
from pykai.model.meta import Obj, parse_time

EVICTIONS_KEPT = 200
SAMPLES_KEPT = 720  # an hour at one sample per 5 s
_JOB_KEY = re.compile(r"[a-z0-9][-a-z0-9.]*/[a-z0-9][-a-z0-9.]*")


def from_decision(evict: Evict, now: float) -> Eviction:
    """An eviction the engine decided at ``now``: its facts as the decision carries them."""
    return Eviction(now, evict.namespace, evict.name, evict.action, evict.preemptor, evict.message)


def from_event(event: Obj) -> Eviction | None:
    """The eviction an ``Evict`` event on a pod records (None for any other event): its
    ``action`` and ``related`` fields (controllers/outcome.py writes them) say the action and
    the preemptor; an event without them is read from its text (``from_text``)."""
    involved = event.get("involvedObject") or {}
    if event.get("reason") != "Evict" or involved.get("kind") != "Pod":
        return None
    stamp = event.get("lastTimestamp") or event.get("firstTimestamp") or ""
    time = parse_time(stamp) if stamp else 0.0
    namespace, pod = str(involved.get("namespace", "")), str(involved.get("name", ""))
    message, action = str(event.get("message", "")), str(event.get("action") or "")
    if not action:
        return from_text(time, namespace, pod, message)
    related = event.get("related") or {}
    preemptor = f"{related.get('namespace', '')}/{related.get('name', '')}" if related else ""
    why, _ = split_eviction_message(message)
    return Eviction(time, namespace, pod, action, preemptor, why)


def from_text(time: float, namespace: str, pod: str, message: str) -> Eviction:
    """An eviction from the text of an ``Evict`` event alone, for events written without the
    ``action`` and ``related`` fields (cluster files of pykai before it wrote them), and the
    only reader of the preemptor in that text: ``<why> (action: <action>)``, where the first
    job key (``namespace/name``) in ``<why>`` is the preemptor's (a stale gang has none)."""
    why, action = split_eviction_message(message)
    found = _JOB_KEY.search(why)
    preemptor = found.group(0) if found and action != EVICTING_ACTIONS["StaleGang"] else ""
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
