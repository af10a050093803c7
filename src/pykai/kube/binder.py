"""Binding on a real cluster, with the fewest writes each case allows.

- A pod on whole GPUs (or none) is bound by the scheduler itself: one POST of pods/binding.
- A pod on shared GPUs needs more than one write (a reservation pod holding the device, the
  ConfigMap its GPU env comes from (kube/gpu_env.py), the pod's GPU-group labels, the bind),
  so the scheduler writes a BindRequest (KAI's scheduling.run.ai/v1alpha2 contract, named
  after the pod) and the binder carries it out,
  retrying with backoff up to ``spec.backoffLimit``. Until the binder gives a BindRequest up,
  the scheduler counts its pod as bound to the selected node (also once it succeeded, before
  the pod's own watch tells the bind), so a restart never places it twice.
- A bind that fails puts the pod's job on hold (exponential backoff, see ``BindBackoff``), so a
  pod that keeps failing cannot take the same resources every cycle (KAI issue #2074).

A reservation pod lives in ``pykai-resv`` (made on first use when missing), is bound to its node
at creation, requests one ``nvidia.com/gpu`` (so the device plugin of a real node picks the
device) and is labelled with its GPU group; the engine does not count it (the group already holds
the device). It is deleted when no pod uses its group any more.

The ConfigMap a shared-GPU pod's env comes from is only ever created, never changed (see
kube/gpu_env.py): a name that is taken by someone else's ConfigMap, or by the binder's own for an
earlier placement, fails the bind with a Warning event on the pod and the reason on the
BindRequest; the ConfigMap stays as it was.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Mapping
from concurrent.futures import Executor
from dataclasses import dataclass, field
from typing import Any

from pykai.controllers.faults import Isolation
from pykai.engine.decisions import Bind
from pykai.kube.api import API_ERRORS, KINDS, ApiError, KubeApi
from pykai.kube.events import WARNING, EventRecorder
from pykai.kube.gpu_env import CONFIG_ANNOTATION, WRITTEN_ANNOTATION, config_map, written
from pykai.model import constants as c
from pykai.model.errors import PykaiError
from pykai.model.meta import Obj, mapping
from pykai.model.pod import gpu_group_labels

log = logging.getLogger("pykai.binder")

RESERVATION_NAMESPACE = "pykai-resv"
RESERVATION_LABEL = "pykai.io/gpu-reservation"
BACKOFF_GATE = "pykai.io/bind-backoff"
DEFAULT_BACKOFF_LIMIT = 5
SUCCEEDED, FAILED = "Succeeded", "Failed"


@dataclass
class BindBackoff:
    """Pods whose bind failed, held back for ``base`` × 2^(failures − 1) seconds (at most
    ``cap``)."""

    base: float = 1.0
    cap: float = 60.0
    failures: dict[str, int] = field(default_factory=dict)  # pod uid -> failed binds
    until: dict[str, float] = field(default_factory=dict)  # pod uid -> held until

    def fail(self, uid: str, now: float) -> float:
        """Record a failed bind; return how long the pod is held."""
        count = self.failures.get(uid, 0) + 1
        self.failures[uid] = count
        delay = min(self.base * 2.0 ** (count - 1), self.cap)
        self.until[uid] = now + delay
        return delay

    def held(self, uid: str, now: float) -> bool:
        """True while the pod waits out its backoff."""
        return self.until.get(uid, 0.0) > now

    def expired(self, now: float) -> list[str]:
        """Uids whose hold ended since the last call (their pods may be scheduled again)."""
        done = [uid for uid, until in self.until.items() if until <= now]
        for uid in done:
            del self.until[uid]
        return done

    def forget(self, uid: str) -> None:
        """The pod is bound or gone."""
        self.failures.pop(uid, None)
        self.until.pop(uid, None)


def bind_request(decision: Bind, backoff_limit: int = DEFAULT_BACKOFF_LIMIT) -> Obj:
    """The BindRequest asking the binder to bind a shared-GPU pod."""
    return {
        "apiVersion": KINDS["BindRequest"].api_version,
        "kind": "BindRequest",
        "metadata": {
            "name": decision.name,
            "namespace": decision.namespace,
            "labels": {"pod-name": decision.name, "selected-node": decision.node},
            "ownerReferences": [
                {"apiVersion": "v1", "kind": "Pod", "name": decision.name, "uid": decision.uid}
            ],
        },
        "spec": {
            "podName": decision.name,
            "selectedNode": decision.node,
            "selectedGPUGroups": list(decision.gpu_groups),
            "receivedResourceType": "Fraction",
            "receivedGPU": {
                "count": len(decision.gpu_groups),
                "portion": f"{decision.gpu_portion:.2f}",
            },
            "backoffLimit": backoff_limit,
        },
    }


@dataclass(frozen=True, slots=True)
class BindRequestView:
    """What the binder and the scheduler read of a BindRequest, checked: anyone with the
    rights may create one by hand."""

    pod: str
    node: str
    groups: tuple[str, ...]
    portion: str
    backoff_limit: int
    failed_attempts: int


def read_bind_request(request: Obj) -> BindRequestView:
    """The checked fields of a BindRequest; ValueError naming the first one that is wrong."""
    spec, status = request.get("spec"), mapping(request.get("status"))
    if not isinstance(spec, dict):
        raise ValueError("spec: must be an object")
    node, pod = spec.get("selectedNode"), spec.get("podName", request["metadata"]["name"])
    if not isinstance(node, str) or not node:
        raise ValueError("spec.selectedNode: must name the node to bind to")
    if not isinstance(pod, str) or not pod:
        raise ValueError("spec.podName: must name the pod to bind")
    groups = spec.get("selectedGPUGroups") or []
    if not isinstance(groups, list) or not all(isinstance(g, str) and g for g in groups):
        raise ValueError("spec.selectedGPUGroups: must be a list of GPU group names")
    return BindRequestView(
        pod=pod,
        node=node,
        groups=tuple(groups),
        portion=str(mapping(spec.get("receivedGPU")).get("portion", "")),
        backoff_limit=_count(spec, "spec.backoffLimit", "backoffLimit", DEFAULT_BACKOFF_LIMIT),
        failed_attempts=_count(status, "status.failedAttempts", "failedAttempts", 0),
    )


def _count(fields: Obj, path: str, key: str, default: int) -> int:
    value = fields.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{path}: must be a whole number of at least 0, got {value!r}")
    return value


def pending_request(request: Obj) -> bool:
    """True while a BindRequest is neither done nor given up."""
    return (request.get("status") or {}).get("phase") not in (SUCCEEDED, FAILED)


def given_up(request: Obj) -> bool:
    """True once the binder gave a BindRequest up (its pod was not bound)."""
    return (request.get("status") or {}).get("phase") == FAILED


def requested_for(request: Obj, pod: Obj) -> bool:
    """True if ``request`` was made for this pod (not for an earlier pod of the same name)."""
    owner = (request["metadata"].get("ownerReferences") or [{}])[0].get("uid")
    return not owner or owner == pod["metadata"].get("uid")


def bound_view(pod: Obj, request: BindRequestView) -> Obj:
    """The pod as the scheduler should count it while its BindRequest is pending: on the
    selected node, in the selected GPU groups."""
    view = {**pod, "spec": {**pod.get("spec", {}), "nodeName": request.node}}
    view["metadata"] = {**pod["metadata"], "labels": {**pod["metadata"].get("labels", {})}}
    view["metadata"]["labels"].update(gpu_group_labels(request.groups))
    return view


def held_view(pod: Obj) -> Obj:
    """The pod as the scheduler should see it while its bind backs off: gated."""
    gates = [*(pod.get("spec", {}).get("schedulingGates") or []), {"name": BACKOFF_GATE}]
    return {**pod, "spec": {**pod.get("spec", {}), "schedulingGates": gates}}


def groups_in_use(pods: Mapping[tuple[str, str], Obj], requests: Iterable[Obj]) -> set[str]:
    """GPU groups held by bound, live pods, or asked for by BindRequests that are pending or
    succeeded for a live pod (whose own watch may not have told its bind yet). ``pods`` maps
    (namespace, name) to pods."""
    used = {
        value
        for pod in pods.values()
        if (pod.get("spec") or {}).get("nodeName")
        and _live(pod)
        and pod["metadata"].get("namespace") != RESERVATION_NAMESPACE
        for key, value in (pod["metadata"].get("labels") or {}).items()
        if key == c.GPU_GROUP_LABEL or key.startswith(f"{c.GPU_GROUP_LABEL}/")
    }
    for request in requests:
        spec = request.get("spec") or {}
        meta = request["metadata"]
        pod = pods.get((meta.get("namespace", ""), str(spec.get("podName", meta["name"]))))
        succeeded = (request.get("status") or {}).get("phase") == SUCCEEDED
        if pending_request(request) or (
            succeeded and pod is not None and requested_for(request, pod) and _live(pod)
        ):
            used.update(spec.get("selectedGPUGroups") or [])
    return used


def _live(pod: Obj) -> bool:
    return (pod.get("status") or {}).get("phase") not in ("Succeeded", "Failed")


class ConfigMapTaken(PykaiError):
    """The pod's GPU env ConfigMap exists and does not hold what this bind needs."""


class Binder:
    """Carries out binds: directly for whole GPUs, through BindRequests for shared ones."""

    def __init__(self, api: KubeApi, pool: Executor, events: EventRecorder) -> None:
        self.api, self.pool, self.events = api, pool, events
        self._next_try: dict[str, float] = {}  # BindRequest uid -> earliest retry

    # ---- the scheduler's side ----------------------------------------------------------------

    def bind(self, decision: Bind) -> str:
        """One write: pods/binding, or a BindRequest for a shared-GPU pod. Returns "" on
        success, else why it failed (the caller stops assuming the bind)."""
        try:
            if decision.gpu_groups:
                self._request(decision)
            else:
                self.api.bind(decision.namespace, decision.name, decision.node, decision.uid)
        except API_ERRORS as exc:
            return str(exc)
        return ""

    def _request(self, decision: Bind) -> None:
        body = bind_request(decision)
        kind = KINDS["BindRequest"]
        if self.api.create_if_absent(kind, body) is None:
            # left by an earlier pod of the same name: replace it
            self.api.delete(kind, decision.name, decision.namespace)
            self.api.create(kind, body)

    # ---- the binder's side -------------------------------------------------------------------

    def reconcile(
        self,
        requests: list[Obj],
        pods: dict[tuple[str, str], Obj],
        reservations: set[str],
        isolation: Isolation,
    ) -> None:
        """Carry out each pending BindRequest whose retry time has come; delete those whose
        pod is gone. ``pods`` maps (namespace, name) to pods; ``reservations`` holds the GPU
        groups that have a reservation pod. A request that cannot be read is reported and
        left alone."""
        now = time.monotonic()
        for request in requests:
            with isolation.isolated(request):
                self._reconcile(request, read_bind_request(request), pods, reservations, now)

    def _reconcile(
        self,
        request: Obj,
        view: BindRequestView,
        pods: dict[tuple[str, str], Obj],
        reservations: set[str],
        now: float,
    ) -> None:
        meta = request["metadata"]
        pod = pods.get((meta["namespace"], view.pod))
        if pod is None or not requested_for(request, pod):
            self.pool.submit(self._delete_request, request)
        elif pending_request(request) and self._next_try.get(meta["uid"], 0.0) <= now:
            self._next_try[meta["uid"]] = float("inf")  # in flight
            self.pool.submit(self._carry_out, request, view, pod, reservations)

    def _carry_out(
        self, request: Obj, view: BindRequestView, pod: Obj, reservations: set[str]
    ) -> None:
        meta = request["metadata"]
        node, groups, portion = view.node, list(view.groups), view.portion
        try:
            for group in groups:
                if group not in reservations:
                    self._reserve(node, group)
            if not (pod.get("spec") or {}).get("nodeName"):
                annotations = {
                    c.GPU_PORTION_ANNOTATION: portion,
                    c.VISIBLE_DEVICES_ANNOTATION: ",".join(groups),
                }
                config = config_map(pod, portion, groups)
                prior = self._written(pod, config) if config else None
                if config and prior is None:  # recorded before the create: see _create_config
                    annotations[WRITTEN_ANNOTATION] = written(config)
                patch = {
                    "metadata": {"labels": gpu_group_labels(groups), "annotations": annotations}
                }
                self.api.patch(KINDS["Pod"], meta["name"], patch, meta["namespace"])
                if config:
                    self._create_config(pod, config, prior)
                self.api.bind(meta["namespace"], meta["name"], node)
            self._status(request, {"phase": SUCCEEDED})
            self._next_try.pop(meta["uid"], None)
        except ConfigMapTaken as exc:
            self.events.record(pod, "FailedBinding", str(exc), WARNING)
            self._failed(request, view, str(exc))
        except API_ERRORS as exc:
            self._failed(request, view, str(exc))

    def _written(self, pod: Obj, config: Obj) -> str | None:
        """What an earlier attempt recorded on the pod about this ConfigMap (the pod is read
        afresh: the cache may lag behind that attempt)."""
        meta = pod["metadata"]
        current = self.api.get(KINDS["Pod"], meta["name"], meta["namespace"]) or pod
        record = (current["metadata"].get("annotations") or {}).get(WRITTEN_ANNOTATION)
        if record and record.partition(" ")[0] == config["metadata"]["name"]:
            return str(record)
        return None

    def _create_config(self, pod: Obj, config: Obj, prior: str | None) -> None:
        """Create the pod's GPU env ConfigMap. ``prior`` is what an earlier attempt recorded
        on the pod before its create (None: no attempt did, and this one has recorded
        ``written(config)`` before calling). If the name is taken, the ConfigMap is this
        binder's only when the record says so, and usable only if it holds these values."""
        want = written(config)
        if self.api.create_if_absent(KINDS["ConfigMap"], config) is not None:
            if prior not in (None, want):
                self._record(pod, want)
            return
        if prior == want:  # created by an earlier attempt, e.g. before a restart
            return
        name = config["metadata"]["name"]
        if prior is None:
            self._record(pod, None)  # not created by this binder: take the record back
            raise ConfigMapTaken(
                f'ConfigMap "{name}" (annotation {CONFIG_ANNOTATION}) already exists and was '
                "not created by pykai for this pod; pykai never changes a ConfigMap it did not "
                "create: recreate the pod without that annotation (the admission webhook then "
                "names a new one)"
            )
        raise ConfigMapTaken(
            f'ConfigMap "{name}" holds the GPU env of an earlier placement '
            f"({prior.partition(' ')[2]}), not {want.partition(' ')[2]}; pykai only creates "
            "these ConfigMaps and cannot rewrite it: recreate the pod"
        )

    def _record(self, pod: Obj, value: str | None) -> None:
        meta = pod["metadata"]
        patch = {"metadata": {"annotations": {WRITTEN_ANNOTATION: value}}}
        self.api.patch(KINDS["Pod"], meta["name"], patch, meta["namespace"])

    def _failed(self, request: Obj, view: BindRequestView, reason: str) -> None:
        meta = request["metadata"]
        attempts, limit = view.failed_attempts + 1, view.backoff_limit
        phase = FAILED if attempts >= limit else "Pending"
        log.warning(
            "bind of %s/%s failed (%d/%d): %s",
            meta["namespace"],
            meta["name"],
            attempts,
            limit,
            reason,
        )
        self._next_try[meta["uid"]] = time.monotonic() + min(0.5 * 2.0 ** (attempts - 1), 30.0)
        try:
            self._status(request, {"phase": phase, "failedAttempts": attempts, "reason": reason})
        except API_ERRORS as exc:
            log.warning("status of BindRequest %s not written: %s", meta["name"], exc)

    def _status(self, request: Obj, status: dict[str, Any]) -> None:
        meta = request["metadata"]
        self.api.patch(
            KINDS["BindRequest"], meta["name"], {"status": status}, meta["namespace"], "status"
        )

    def _reserve(self, node: str, group: str) -> None:
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": f"gpu-reservation-{group}",
                "namespace": RESERVATION_NAMESPACE,
                "labels": {c.GPU_GROUP_LABEL: group, RESERVATION_LABEL: "true"},
            },
            "spec": {
                "nodeName": node,
                "containers": [
                    {
                        "name": "reservation",
                        "image": "registry.k8s.io/pause:3.9",
                        "resources": {"limits": {"nvidia.com/gpu": "1"}},
                    }
                ],
                "tolerations": [{"operator": "Exists"}],
                "terminationGracePeriodSeconds": 0,  # a pause container: nothing to wind down
            },
        }
        try:
            self.api.create_if_absent(KINDS["Pod"], pod)
        except ApiError as exc:
            if exc.status != 404:
                raise
            # no reservation namespace yet (the Helm chart makes it; the binder may then not)
            namespace = {"metadata": {"name": RESERVATION_NAMESPACE}}
            self.api.create_if_absent(KINDS["Namespace"], namespace)
            self.api.create_if_absent(KINDS["Pod"], pod)

    def _delete_request(self, request: Obj) -> None:
        meta = request["metadata"]
        try:
            self.api.delete(KINDS["BindRequest"], meta["name"], meta["namespace"])
        except API_ERRORS as exc:
            log.warning("BindRequest %s/%s not deleted: %s", meta["namespace"], meta["name"], exc)

    def release(self, reservation_pods: list[Obj], in_use: set[str]) -> None:
        """Delete reservation pods whose GPU group no pod uses any more."""
        for pod in reservation_pods:
            group = (pod["metadata"].get("labels") or {}).get(c.GPU_GROUP_LABEL, "")
            if group not in in_use and not pod["metadata"].get("deletionTimestamp"):
                self.pool.submit(
                    self.api.delete, KINDS["Pod"], pod["metadata"]["name"], RESERVATION_NAMESPACE
                )
