"""A live cluster read as the reading commands read the embedded one: objects, events and the
clock through the apiserver (each kind listed once per command; a kind the cluster does not
serve reads as none)."""

from __future__ import annotations

import builtins
import time

from pykai.kube.api import ApiError, KubeApi
from pykai.model.kinds import BY_KIND
from pykai.model.meta import Obj
from pykai.model.positions import Board


class KubeReader:
    """Objects, events and the clock of a live cluster."""

    def __init__(self, api: KubeApi) -> None:
        self.api = api
        self._lists: dict[str, builtins.list[Obj]] = {}
        self._now = time.time()

    def list(self, kind: str, namespace: str | None = None) -> builtins.list[Obj]:
        """Objects of a kind, in one namespace or (None) all."""
        if kind not in self._lists:
            try:
                self._lists[kind] = self.api.list(BY_KIND[kind])[0]
            except ApiError as exc:
                if exc.status != 404:  # 404: no such resource (a CRD not installed)
                    raise
                self._lists[kind] = []
        return [
            obj
            for obj in self._lists[kind]
            if namespace is None or obj["metadata"].get("namespace", "") == namespace
        ]

    def get(self, kind: str, name: str, namespace: str = "") -> Obj | None:
        """One object, or None."""
        scoped = namespace if BY_KIND[kind].namespaced else ""
        for obj in self.list(kind):
            meta = obj["metadata"]
            if meta["name"] == name and meta.get("namespace", "") == scoped:
                return obj
        return None

    def events_for(self, kind: str, name: str, namespace: str = "") -> builtins.list[Obj]:
        """Events about one object, first recorded first."""
        scoped = namespace if BY_KIND[kind].namespaced else ""
        found = [
            event
            for event in self.list("Event")
            if (event.get("involvedObject") or {}).get("kind") == kind
            and event["involvedObject"].get("name") == name
            and (event["involvedObject"].get("namespace") or "") == scoped
        ]
        return sorted(found, key=lambda e: str(e.get("firstTimestamp") or e.get("eventTime") or ""))

    def now(self) -> float:
        """The time the command started, in seconds since the epoch."""
        return self._now

    def positions(self) -> Board | None:
        """None: the apiserver keeps no positions (``pykai run`` serves its own over HTTP,
        kube/pending.py), so the reading commands work them out."""
        return None
