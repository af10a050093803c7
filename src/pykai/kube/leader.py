"""Leader election with a coordination.k8s.io/v1 Lease: of several replicas, only the holder of
the lease acts. As client-go's leaderelection (kube-scheduler's defaults: lease 15 s, renew
deadline 10 s, retry period 2 s), the lease is tried every ``retry_period`` seconds from a
thread of its own, so a long cycle never lets it lapse; another replica takes it over when its
holder has not renewed it for ``duration`` seconds. A holder that has not renewed for
``renew_deadline`` seconds (shorter than the lease) stops leading, so it has stopped acting
before anyone may take over: ``fence`` refuses every write of its client from then on.
Writes carry the lease's resourceVersion, so two candidates can never both win. A 401/403
before the lease was ever read ends the process (RefusedAtStart): without lease rights a
replica could never lead."""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass, field

import httpx

from pykai.kube.api import API_ERRORS, ApiError, AuthError, KubeApi, RefusedAtStart
from pykai.model.errors import PykaiError
from pykai.model.kinds import BY_KIND
from pykai.model.meta import format_time, parse_time

LEASE = BY_KIND["Lease"]
log = logging.getLogger("pykai.leader")


class NotLeading(PykaiError, httpx.TransportError):
    """A write refused before it was sent: this replica does not hold the lease (to the
    writer it is like an apiserver that did not answer: tried again, never reported)."""


@dataclass
class LeaderElector:
    """Tries to hold one Lease for ``identity``; times are seconds."""

    api: KubeApi
    identity: str
    name: str = "pykai-scheduler"
    namespace: str = "default"
    duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0
    leader: bool = False  # the last answer said this replica holds the lease
    refused: RefusedAtStart | None = None  # the first lease request was refused
    _last_renew: float = 0.0  # the renewTime this replica last wrote
    _answered: bool = False  # a lease request has succeeded once
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def __post_init__(self) -> None:
        """Refuse timings under which a replica could act after another took over."""
        if not 0 < self.renew_deadline < int(self.duration):  # the lease holds whole seconds
            raise ValueError(
                f"the renew deadline ({self.renew_deadline:g} s) must be positive and shorter "
                f"than the lease duration ({self.duration:g} s)"
            )
        if not 0 < self.retry_period < self.renew_deadline:
            raise ValueError(
                f"the retry period ({self.retry_period:g} s) must be positive and shorter than "
                f"the renew deadline ({self.renew_deadline:g} s)"
            )

    def leading(self, now: float | None = None) -> bool:
        """True while this replica holds the lease and renewed it within the renew deadline;
        raises RefusedAtStart if the first lease request was refused."""
        if self.refused is not None:
            raise self.refused
        return self._holds(time.time() if now is None else now)

    def _holds(self, now: float) -> bool:
        with self._lock:
            return self.leader and now - self._last_renew < self.renew_deadline

    def step(self, now: float | None = None) -> bool:
        """Acquire or renew the lease if possible; True while this replica leads."""
        now = time.time() if now is None else now
        try:
            held = self._try(now)
            self._answered = True
        except API_ERRORS as exc:
            if isinstance(exc, AuthError) and not self._answered:
                raise RefusedAtStart(exc) from exc
            log.warning("lease %s/%s not renewed: %s", self.namespace, self.name, exc)
            held = self.leader  # the renew deadline ends it if no later try succeeds
        with self._lock:
            if held and not self.leader:
                log.info("leading: lease %s/%s acquired", self.namespace, self.name)
            elif self.leader and not held:
                log.warning("not leading: lease %s/%s lost", self.namespace, self.name)
            self.leader = held
            if held:
                self._last_renew = now  # the renewTime just written
        return self._holds(now)

    def start(self, stop: threading.Event) -> threading.Thread:
        """Fence this client's writes, then try the lease every retry period until ``stop``
        is set (a refusal at start stops there and is raised by ``leading``)."""
        self.fence(self.api)

        def renew() -> None:
            while not stop.is_set():
                try:
                    self.step()
                except RefusedAtStart as exc:
                    self.refused = exc
                    return
                except Exception:  # e.g. a malformed Lease: the deadline ends leading
                    log.exception("lease %s/%s not tried", self.namespace, self.name)
                stop.wait(self.retry_period)

        thread = threading.Thread(target=renew, name="leader-election", daemon=True)
        thread.start()
        return thread

    def fence(self, api: KubeApi) -> None:
        """Make ``api`` refuse every write but the lease's own while this replica does not
        lead (NotLeading), through httpx and through the raw poster alike: whatever a cycle
        or a background write still holds never lands."""
        lease_paths = {
            self.api.path(LEASE, self.namespace),
            self.api.path(LEASE, self.namespace, self.name),
        }

        def refuse(method: str, path: str) -> None:
            if method in ("GET", "HEAD") or path.split("?", 1)[0] in lease_paths:
                return
            if not self._holds(time.time()):
                raise NotLeading(
                    f"{method} {path} not sent: this replica does not hold "
                    f"lease {self.namespace}/{self.name}"
                )

        def refuse_unless_leading(request: httpx.Request) -> None:
            refuse(request.method, request.url.path)

        hooks = api.http.event_hooks
        api.http.event_hooks = {
            **hooks,
            "request": [*hooks.get("request", []), refuse_unless_leading],
        }
        if api.poster is not None:
            api.poster.before.append(refuse)

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
            return self.api.create_if_absent(LEASE, body) is not None  # None: another was first
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
        return True
