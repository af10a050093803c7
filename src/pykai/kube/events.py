"""v1 Events on a real cluster, written in the background.

Callers report transitions (an eviction, a new reason a job cannot run, a failed bind), not
every cycle's view, so events cost few writes. A repeat of the same (object, type, reason,
message) bumps ``count`` on the event already written, as the apiserver's own recorders do.
No "Scheduled" event is written per bind: a bind stays one write (docs/architecture.md).
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from concurrent.futures import Executor

from pykai.kube.api import API_ERRORS, KINDS, ApiError, KubeApi
from pykai.model.meta import Obj, format_time

log = logging.getLogger("pykai.events")
NORMAL = "Normal"
WARNING = "Warning"
COMPONENT = "kai-scheduler"


class EventRecorder:
    """Creates or bumps Events through a thread pool (failures are logged, never raised)."""

    def __init__(self, api: KubeApi, pool: Executor) -> None:
        self.api, self.pool = api, pool
        self._counts: dict[str, int] = {}  # event name -> count written
        self._lock = threading.Lock()

    def record(self, involved: Obj, reason: str, message: str, kind: str = NORMAL) -> None:
        """Report that ``reason``/``message`` happened to ``involved`` now."""
        meta = involved["metadata"]
        uid = str(meta.get("uid", ""))
        digest = hashlib.sha256(f"{uid}\0{kind}\0{reason}\0{message}".encode()).hexdigest()
        name = f"{meta['name']}.{digest[:16]}"
        namespace = str(meta.get("namespace") or "default")
        with self._lock:
            count = self._counts.get(name, 0) + 1
            self._counts[name] = count
        stamp = format_time(time.time())
        event: Obj = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": name, "namespace": namespace},
            "involvedObject": {
                "apiVersion": involved.get("apiVersion", "v1"),
                "kind": involved["kind"],
                "name": meta["name"],
                "namespace": str(meta.get("namespace") or ""),
                "uid": uid,
            },
            "reason": reason,
            "message": message,
            "type": kind,
            "count": count,
            "firstTimestamp": stamp,
            "lastTimestamp": stamp,
            "source": {"component": COMPONENT},
        }
        self.pool.submit(self._write, event)

    def _write(self, event: Obj) -> None:
        meta = event["metadata"]
        try:
            if event["count"] == 1:
                try:
                    self.api.create(KINDS["Event"], event)
                    return
                except ApiError as exc:
                    if exc.status != 409:  # written before a restart of this process: bump it
                        raise
                current = self.api.get(KINDS["Event"], meta["name"], meta["namespace"]) or {}
                event["count"] = int(current.get("count", 0)) + 1
            patch = {"count": event["count"], "lastTimestamp": event["lastTimestamp"]}
            self.api.patch(KINDS["Event"], meta["name"], patch, meta["namespace"])
        except API_ERRORS as exc:
            log.warning("event %s/%s not written: %s", meta["namespace"], meta["name"], exc)
