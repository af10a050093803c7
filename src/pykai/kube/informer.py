"""Informers: list then watch each kind, feeding events into one queue; relist on 410 Gone,
reconnect with backoff on any other failure. Lists are paged; the first is served from the
apiserver's watch cache (``resourceVersion=0``, as client-go's reflector), a relist after 410
reads the latest from etcd (the cache may be behind what the watch already told). A 401/403
on the first list ends the informer with a ``REFUSED`` change: the process cannot work with
its credentials (later ones are retried like any failure: they are logged at ERROR by the
client). A 404 (the apiserver serves no such kind: its CRD is not installed, or the version is
not served) is said once, at WARNING, naming the kind and what to install, and retried
quietly: a CRD installed later is picked up (and that is said once too)."""

from __future__ import annotations

import logging
import queue
import threading
import time
from dataclasses import dataclass

import httpx

from pykai.kube.api import ApiError, AuthError, KubeApi, RefusedAtStart
from pykai.model.kinds import KindSpec, provider
from pykai.model.meta import Obj

log = logging.getLogger("pykai.informer")


@dataclass(frozen=True, slots=True)
class Change:
    """One change seen by an informer: ``SYNC`` (a full relist of the kind) or an event."""

    kind: str
    type: str  # SYNC, ADDED, MODIFIED, DELETED, REFUSED
    obj: Obj | None
    objects: tuple[Obj, ...] = ()
    error: RefusedAtStart | None = None  # why the first list of a kind was refused


class Informer(threading.Thread):
    """Watches one kind (the objects ``selector`` selects, if given) until stopped."""

    def __init__(
        self,
        api: KubeApi,
        kind: KindSpec,
        changes: queue.Queue[Change],
        stop: threading.Event,
        selector: str = "",
    ) -> None:
        super().__init__(name=f"informer-{kind.plural}", daemon=True)
        self.api, self.kind, self.changes, self.stop_event = api, kind, changes, stop
        self.selector = selector
        self.missing = False  # the apiserver answered 404 for the kind (said once)

    def run(self) -> None:
        backoff = 0.2
        version = ""
        listed = False
        while not self.stop_event.is_set():
            try:
                if not version:  # the first list from the watch cache, a relist from etcd
                    items, version = self.api.list(
                        self.kind,
                        resource_version="" if listed else "0",
                        label_selector=self.selector,
                    )
                    listed = True
                    self._served(len(items))
                    self.changes.put(Change(self.kind.kind, "SYNC", None, tuple(items)))
                events = self.api.watch(self.kind, version, 30, self.selector)
                for event_type, obj in events:
                    if self.stop_event.is_set():
                        return
                    version = str(obj.get("metadata", {}).get("resourceVersion", version))
                    if event_type == "ERROR":
                        if obj.get("code") == 410:
                            version = ""  # too old: relist
                        break
                    if event_type != "BOOKMARK":
                        self.changes.put(Change(self.kind.kind, event_type, obj))
                backoff = 0.2
            except (httpx.HTTPError, ApiError) as exc:
                if isinstance(exc, AuthError) and not listed:
                    refused = RefusedAtStart(exc)
                    self.changes.put(Change(self.kind.kind, "REFUSED", None, error=refused))
                    return
                if isinstance(exc, ApiError) and exc.status == 410:
                    version = ""
                if isinstance(exc, ApiError) and exc.status == 404:
                    version = ""  # gone (a CRD deleted): list again once it is back
                    self._missing()
                time.sleep(backoff)
                backoff = min(backoff * 2, 5.0)

    def _missing(self) -> None:
        """The apiserver serves no such kind: said once, until it is served again."""
        if not self.missing:
            self.missing = True
            log.warning(
                "the apiserver serves no %s (%s, 404 on %s): install %s; "
                "pykai keeps asking and picks it up once served",
                self.kind.kind,
                self.kind.api_version,
                self.kind.plural,
                provider(self.kind),
            )

    def _served(self, count: int) -> None:
        """A kind said missing is listed now."""
        if self.missing:
            self.missing = False
            kind = self.kind
            log.info("%s (%s) is served now: %d listed", kind.kind, kind.api_version, count)
