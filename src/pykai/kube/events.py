"""v1 Events on a real cluster, written in the background.

Callers report transitions (an eviction, a new reason a job cannot run, a failed bind), not
every cycle's view, so events cost few writes. A repeat of the same (object, type, reason,
message) bumps ``count`` on the event already written, as the apiserver's own recorders do.
"""

from __future__ import annotations

import logging
import threading
import time
from concurrent.futures import Executor
from typing import Unpack

from pykai.controllers.events import NORMAL, WARNING, Recording, new_event
from pykai.kube.api import API_ERRORS, KubeApi
from pykai.model.kinds import BY_KIND
from pykai.model.meta import Obj, format_time
from pykai.model.problems import object_version

__all__ = ["NORMAL", "WARNING", "EventRecorder"]
log = logging.getLogger("pykai.events")


class EventRecorder:
    """Creates or bumps Events through a thread pool (failures are logged, never raised)."""

    def __init__(self, api: KubeApi, pool: Executor) -> None:
        self.api, self.pool = api, pool
        self._counts: dict[str, int] = {}  # event name -> count written
        self._lock = threading.Lock()

    def record(
        self, involved: Obj, reason: str, message: str, kind: str = NORMAL, **how: Unpack[Recording]
    ) -> None:
        """Report that ``reason``/``message`` happened to ``involved`` now, as ``how`` says
        (controllers/events.py)."""
        once = how.get("once", False)
        salt = object_version(involved) if once else ""
        stamp = format_time(time.time())
        event = new_event(involved, reason, message, kind, stamp, salt, how.get("facts"))
        name = event["metadata"]["name"]
        with self._lock:
            if once and name in self._counts:
                return
            event["count"] = 1 if once else self._counts.get(name, 0) + 1
            self._counts[name] = event["count"]
        self.pool.submit(self._write_once if once else self._write, event)

    def record_once(self, involved: Obj, reason: str, message: str, kind: str = NORMAL) -> None:
        """A standing fact: one event per version of the object, never counted up (kept
        across restarts: the event's name says which version)."""
        self.record(involved, reason, message, kind, once=True)

    def _write_once(self, event: Obj) -> None:
        try:
            self.api.create_if_absent(BY_KIND["Event"], event)
        except API_ERRORS as exc:
            meta = event["metadata"]
            log.warning("event %s/%s not written: %s", meta["namespace"], meta["name"], exc)

    def _write(self, event: Obj) -> None:
        meta = event["metadata"]
        try:
            if event["count"] == 1:
                if self.api.create_if_absent(BY_KIND["Event"], event) is not None:
                    return
                # written before a restart of this process: bump it
                current = self.api.get(BY_KIND["Event"], meta["name"], meta["namespace"]) or {}
                event["count"] = int(current.get("count", 0)) + 1
            patch = {"count": event["count"], "lastTimestamp": event["lastTimestamp"]}
            self.api.patch(BY_KIND["Event"], meta["name"], patch, meta["namespace"])
        except API_ERRORS as exc:
            log.warning("event %s/%s not written: %s", meta["namespace"], meta["name"], exc)
