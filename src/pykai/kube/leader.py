"""Leader election with a coordination.k8s.io/v1 Lease: of several replicas, only the holder of
the lease schedules. The lease is renewed every ``renew`` seconds and taken over when its
holder has not renewed it for ``duration`` seconds; writes carry the lease's resourceVersion,
so two candidates can never both win. A 401/403 before the lease was ever read ends the
process (RefusedAtStart): without lease rights a replica could never lead."""

from __future__ import annotations

import time
from dataclasses import dataclass

from pykai.kube.api import API_ERRORS, KINDS, ApiError, AuthError, KubeApi, RefusedAtStart
from pykai.model.meta import format_time, parse_time

LEASE = KINDS["Lease"]


@dataclass
class LeaderElector:
    """Tries to hold one Lease for ``identity``."""

    api: KubeApi
    identity: str
    name: str = "pykai-scheduler"
    namespace: str = "default"
    duration: float = 10.0
    leader: bool = False
    _last_renew: float = 0.0
    _answered: bool = False  # a lease request has succeeded once

    def step(self, now: float | None = None) -> bool:
        """Acquire or renew the lease if possible; True while this replica leads."""
        now = time.time() if now is None else now
        try:
            self.leader = self._try(now)
            self._answered = True
        except API_ERRORS as exc:
            if isinstance(exc, AuthError) and not self._answered:
                raise RefusedAtStart(exc) from exc
            self.leader = self.leader and now - self._last_renew < self.duration
        return self.leader

    def _spec(self, now: float, transitions: int) -> dict[str, object]:
        stamp = format_time(now)
        return {
            "holderIdentity": self.identity,
            "leaseDurationSeconds": int(self.duration),
            "acquireTime": stamp,
            "renewTime": stamp,
            "leaseTransitions": transitions,
        }

    def _try(self, now: float) -> bool:
        lease = self.api.get(LEASE, self.name, self.namespace)
        if lease is None:
            body = {
                "apiVersion": "coordination.k8s.io/v1",
                "kind": "Lease",
                "metadata": {"name": self.name, "namespace": self.namespace},
                "spec": self._spec(now, 0),
            }
            if self.api.create_if_absent(LEASE, body) is None:
                return False  # another replica created it first
            self._last_renew = now
            return True
        spec = lease.get("spec") or {}
        holder = spec.get("holderIdentity")
        renewed = parse_time(spec.get("renewTime")) if spec.get("renewTime") else 0.0
        expired = now - renewed > float(spec.get("leaseDurationSeconds", self.duration))
        if holder != self.identity and not expired:
            return False
        transitions = int(spec.get("leaseTransitions", 0)) + (0 if holder == self.identity else 1)
        new_spec = self._spec(now, transitions)
        if holder == self.identity:
            new_spec["acquireTime"] = spec.get("acquireTime", new_spec["acquireTime"])
        patch = {
            "metadata": {"resourceVersion": lease["metadata"]["resourceVersion"]},
            "spec": new_spec,
        }
        try:
            self.api.patch(LEASE, self.name, patch, self.namespace)
        except ApiError as exc:
            if exc.status == 409:  # someone else wrote first
                return False
            raise
        self._last_renew = now
        return True
