"""The binder component: it carries out the binds the scheduler asks for (kube/binding.py
holds what the two agree on): directly for whole GPUs, through BindRequests for shared ones.

A reservation pod lives in ``pykai-resv`` (made on first use when missing), is bound to its node
at creation, requests one ``nvidia.com/gpu`` (so the device plugin of a real node picks the
device) and is labelled with its GPU group. It is deleted when no pod uses its group any more.

The ConfigMap a shared-GPU pod's env comes from is only ever created, never changed (see
kube/gpu_env.py): a name that is taken by someone else's ConfigMap, or by the binder's own for an
earlier placement, fails the bind with a Warning event on the pod and the reason on the
BindRequest; the ConfigMap stays as it was.
"""

from __future__ import annotations

import logging
import time
from concurrent.futures import Executor
from typing import Any

from pykai.controllers.faults import Isolation
from pykai.engine.decisions import Bind
from pykai.kube.api import API_ERRORS, ApiError, KubeApi
from pykai.kube.binding import (
    FAILED,
    RESERVATION_NAMESPACE,
    SUCCEEDED,
    BindRequestView,
    bind_request,
    pending_request,
    read_bind_request,
    requested_for,
)
from pykai.kube.events import WARNING, EventRecorder
from pykai.kube.gpu_env import CONFIG_ANNOTATION, WRITTEN_ANNOTATION, config_map, written
from pykai.model import constants as c
from pykai.model.errors import PykaiError
from pykai.model.kinds import BY_KIND
from pykai.model.meta import Obj
from pykai.model.pod import gpu_group_labels

log = logging.getLogger("pykai.binder")

RESERVATION_LABEL = "pykai.io/gpu-reservation"


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
        kind = BY_KIND["BindRequest"]
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
                self.api.patch(BY_KIND["Pod"], meta["name"], patch, meta["namespace"])
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
        current = self.api.get(BY_KIND["Pod"], meta["name"], meta["namespace"]) or pod
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
        if self.api.create_if_absent(BY_KIND["ConfigMap"], config) is not None:
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
        self.api.patch(BY_KIND["Pod"], meta["name"], patch, meta["namespace"])

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
            BY_KIND["BindRequest"], meta["name"], {"status": status}, meta["namespace"], "status"
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
            self.api.create_if_absent(BY_KIND["Pod"], pod)
        except ApiError as exc:
            if exc.status != 404:
                raise
            # no reservation namespace yet (the Helm chart makes it; the binder may then not)
            namespace = {"metadata": {"name": RESERVATION_NAMESPACE}}
            self.api.create_if_absent(BY_KIND["Namespace"], namespace)
            self.api.create_if_absent(BY_KIND["Pod"], pod)

    def _delete_request(self, request: Obj) -> None:
        meta = request["metadata"]
        try:
            self.api.delete(BY_KIND["BindRequest"], meta["name"], meta["namespace"])
        except API_ERRORS as exc:
            log.warning("BindRequest %s/%s not deleted: %s", meta["namespace"], meta["name"], exc)

    def release(self, reservation_pods: list[Obj], in_use: set[str]) -> None:
        """Delete reservation pods whose GPU group no pod uses any more."""
        for pod in reservation_pods:
            group = (pod["metadata"].get("labels") or {}).get(c.GPU_GROUP_LABEL, "")
            if group not in in_use and not pod["metadata"].get("deletionTimestamp"):
                self.pool.submit(
                    self.api.delete, BY_KIND["Pod"], pod["metadata"]["name"], RESERVATION_NAMESPACE
                )
