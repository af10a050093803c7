"""The KubeRay emulator on a real cluster (component ``kuberay`` of ``pykai run``), for local
clusters without KubeRay. Deployments, ReplicaSets and Jobs need nothing here: the real
kube-controller-manager runs them."""

from __future__ import annotations

import itertools
import secrets
from collections.abc import Callable
from typing import Any

from pykai.controllers.faults import Isolation
from pykai.controllers.validation import StoredCheck
from pykai.controllers.workloads import KUBERAY
from pykai.kube.api import KINDS, KubeApi
from pykai.kube.events import EventRecorder
from pykai.model.meta import Obj

Objects = dict[tuple[str, str, str], Obj]


class KubeWorkloads:
    """A WorkloadHost over the runner's object cache and the API."""

    def __init__(self, api: KubeApi, events: EventRecorder) -> None:
        self.api, self.events = api, events
        self.objects: Objects = {}
        self.remember: Callable[[Obj], None] = lambda _: None
        self._serials = itertools.count(secrets.randbelow(1 << 30))  # fresh names per process
        self._recorded: set[str] = set()
        # apply's rules and its pod cap: the emulator stands in for KubeRay on local clusters
        self.check = StoredCheck()

    def reconcile(
        self,
        objects: Objects,
        remember: Callable[[Obj], None],
        isolation: Callable[[str], Isolation],
    ) -> None:
        """Run the KubeRay emulator once over the cached Ray objects; ``remember`` puts
        what it writes into the cache at once (before the watch reports it). An object the
        emulator cannot handle is reported and skipped."""
        self.objects, self.remember = objects, remember
        for kind, controller in KUBERAY:
            guard = isolation(f"the {kind} controller")
            for key, obj in list(objects.items()):
                if key[0] == kind and not obj["metadata"].get("deletionTimestamp"):
                    with guard.isolated(obj):
                        self.check(obj)
                        controller(self, obj)

    # ---- WorkloadHost --------------------------------------------------------------------------

    def owned(self, owner: Obj, kind: str) -> list[Obj]:
        """Cached objects of ``kind`` controlled by ``owner``."""
        uid = owner["metadata"].get("uid")
        return [
            obj
            for key, obj in self.objects.items()
            if key[0] == kind
            and any(ref.get("uid") == uid for ref in obj["metadata"].get("ownerReferences") or [])
        ]

    def create(self, obj: Obj) -> Obj:
        """Create an object (one that exists already is taken as it is)."""
        kind, meta = KINDS[obj["kind"]], obj["metadata"]
        created = (
            self.api.create_if_absent(kind, obj)
            or self.api.get(kind, meta["name"], meta.get("namespace", ""))
            or obj
        )
        created.setdefault("kind", kind.kind)
        created.setdefault("apiVersion", kind.api_version)
        self.remember(created)
        return created

    def remove(self, kind: str, name: str, namespace: str) -> None:
        """Delete an object."""
        self.api.delete(KINDS[kind], name, namespace)

    def set_status(self, obj: Obj, status: dict[str, Any]) -> None:
        """Replace the status (status subresource)."""
        meta = obj["metadata"]
        patch = {k: None for k in obj.get("status") or {} if k not in status} | status
        updated = self.api.patch(
            KINDS[obj["kind"]], meta["name"], {"status": patch}, meta["namespace"], "status"
        )
        updated.setdefault("kind", obj["kind"])
        self.remember(updated)

    def serial(self, scope: str) -> int:
        """A number this process has not handed out (random start: restarts do not collide)."""
        return next(self._serials)

    def record(self, involved: Obj, reason: str, message: str, kind: str) -> bool:
        """An event, written once per (object, reason, message) by this process."""
        key = f"{involved['metadata'].get('uid')}/{reason}/{message}"
        if key in self._recorded:
            return False
        self._recorded.add(key)
        self.events.record(involved, reason, message, kind)
        return True
