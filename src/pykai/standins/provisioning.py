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
from pykai.engine.kueue.admission import NodeFit
from pykai.engine.settings import SchedulerConfig
from pykai.model.conditions import Condition, condition_of, is_true, with_conditions
from pykai.model.meta import Obj, mapping, objects

ACCEPTED = Condition("Accepted", "True", "Accepted", "ProvisioningRequest is accepted")
FOUND = Condition("Provisioned", "True", "CapacityIsFound", "Capacity is found in the cluster")
NOT_FOUND = Condition(
    "Provisioned",
    "False",
    "CapacityIsNotFound",
    "Capacity is not found, CA will try to find it later.",
)


def answer_provisioning_requests(host: Host) -> None:
    """Answer each ProvisioningRequest not yet provisioned (its conditions written only when
    a status or reason changes)."""
    for request in host.list("ProvisioningRequest"):
        if request["metadata"].get("deletionTimestamp") or is_true(request, "Provisioned"):
            continue
        wanted = (ACCEPTED, FOUND if _fits(host, request) else NOT_FOUND)
        if all(_says(request, condition) for condition in wanted):
            continue
        conditions = with_conditions(request, host.now(), *wanted)
        host.patch(request, {"status": {"conditions": conditions}}, status=True)


def _says(obj: Obj, condition: Condition) -> bool:
    """Whether the object has the condition with this status and reason."""
    found = condition_of(obj, condition.type)
    return (found.get("status"), found.get("reason")) == (condition.status, condition.reason)


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
