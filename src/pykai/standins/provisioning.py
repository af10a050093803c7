"""A stand-in for a cluster autoscaler's ProvisioningRequests, where none runs (the embedded
cluster; a local control plane, as ``pykai run --components provisioning``): every request is
answered as the ``check-capacity.autoscaling.x-k8s.io`` class does, whatever class it names
(the gang guide's ``queued-provisioning.gke.io`` is GKE's autoscaler): Accepted at once;
Provisioned (``CapacityIsFound``) once all its pods fit on the current nodes at the same time,
placed by pykai's engine, else not (``CapacityIsNotFound``), checked again each round (adding
a node plays the autoscaler). Once Provisioned it stays so, as a booked request does. On a real
cluster the real autoscaler answers."""

from __future__ import annotations

from pykai.controllers.host import Host
from pykai.engine.config import SchedulerConfig
from pykai.engine.kueue_admission import NodeFit
from pykai.model.meta import Obj, format_time, mapping, objects

FOUND = ("True", "CapacityIsFound", "Capacity is found in the cluster")
NOT_FOUND = ("False", "CapacityIsNotFound", "Capacity is not found, CA will try to find it later.")


def answer_provisioning_requests(host: Host) -> None:
    """Answer each ProvisioningRequest not yet provisioned."""
    for request in host.list("ProvisioningRequest"):
        if request["metadata"].get("deletionTimestamp"):
            continue
        found = {
            c.get("type"): c for c in objects(mapping(request.get("status")).get("conditions"))
        }
        if found.get("Provisioned", {}).get("status") == "True":
            continue
        state = FOUND if _fits(host, request) else NOT_FOUND
        wanted = {
            "Accepted": ("True", "Accepted", "ProvisioningRequest is accepted"),
            "Provisioned": state,
        }
        if all(
            (found.get(k, {}).get("status"), found.get(k, {}).get("reason")) == v[:2]
            for k, v in wanted.items()
        ):
            continue
        stamp = format_time(host.now())
        conditions = [
            {"type": k, "status": status, "reason": reason, "message": message,
             "lastTransitionTime": stamp}
            for k, (status, reason, message) in wanted.items()
        ]  # fmt: skip
        host.patch(request, {"status": {"conditions": conditions}}, status=True)


def _fits(host: Host, request: Obj) -> bool:
    """Whether every pod of the request fits on the current nodes at once."""
    namespace = str(request["metadata"].get("namespace") or "default")
    templates: list[tuple[str, int, Obj]] = []
    for pod_set in objects(mapping(request.get("spec")).get("podSets")):
        name = str(mapping(pod_set.get("podTemplateRef")).get("name") or "")
        found = host.get("PodTemplate", name, namespace)
        if found is None:
            return False
        templates.append((name, int(pod_set.get("count") or 0), mapping(found.get("template"))))
    fit = NodeFit(host.state, SchedulerConfig(), host.now(), {})
    try:
        return fit.place_pods(request["metadata"], templates) is None
    finally:
        fit.close()
