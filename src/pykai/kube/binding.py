"""Binding on a real cluster as the scheduler and the binder agree on it, with the fewest
writes each case allows.

- A pod on whole GPUs (or none) is bound by the scheduler itself: one POST of pods/binding.
- A pod on shared GPUs needs more than one write (a reservation pod holding the device, the
  ConfigMap its GPU env comes from, the pod's GPU-group labels, the bind), so the scheduler
  writes a BindRequest (KAI's scheduling.run.ai/v1alpha2 contract, named after the pod,
  ``bind_request``) and the binder (kube/binder.py) carries it out, retrying with backoff up
  to ``spec.backoffLimit``. Anyone with the rights may write one, so both sides read it back
  checked (``read_bind_request``). Until the binder gives a BindRequest up, the scheduler
  counts its pod as bound to the selected node (``bound_view``; also once it succeeded,
  before the pod's own watch tells the bind), so a restart never places it twice.
- A bind that fails puts the pod's job on hold (exponential backoff, ``BindBackoff``; the pod
  is shown gated, ``held_view``), so a pod that keeps failing cannot take the same resources
  every cycle (KAI issue #2074).
- Reservation pods live in ``RESERVATION_NAMESPACE``; the engine does not count them (the
  group already holds the device). A GPU group is in use while a live pod or a BindRequest
  holds it (``groups_in_use``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from pykai.engine.decisions import Bind
from pykai.model import constants as c
from pykai.model.kinds import BY_KIND
from pykai.model.meta import Obj, mapping
from pykai.model.pod import gpu_group_labels

RESERVATION_NAMESPACE = "pykai-resv"
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
        "apiVersion": BY_KIND["BindRequest"].api_version,
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
