"""Kueue's admission checks with the ProvisioningRequest controller (kubernetes-sigs/kueue
``pkg/controller/admissionchecks/provisioning/``, ``pkg/controller/core/workload_controller.go``):
an AdmissionCheck of controller ``kueue.x-k8s.io/provisioning-request`` is Active when its
ProvisioningRequestConfig exists; a Workload holding quota in a ClusterQueue with such a check
gets a ProvisioningRequest ``<workload>-<check>-1`` (PodTemplates ``ppt-<request>-<pod set>``
for the PodSets that use a managed resource), whose conditions set the check's state (Provisioned
→ Ready); once every check is Ready the Workload is Admitted. A Workload that no longer holds
quota loses its requests. Who answers a request is not Kueue's business: a cluster autoscaler,
or on the embedded cluster the check-capacity stand-in (standins/provisioning.py)."""

from __future__ import annotations

from pykai.controllers.events import NORMAL
from pykai.controllers.host import Host
from pykai.controllers.kueue.jobs import pod_set_infos
from pykai.model.conditions import Condition, condition_of, is_true, with_conditions
from pykai.model.kueue.api import GROUP
from pykai.model.kueue.jobs import with_pod_set_info
from pykai.model.meta import Obj, format_time, mapping, objects, parse_time
from pykai.model.owners import owner_ref

PROVISIONING_CONTROLLER = "kueue.x-k8s.io/provisioning-request"
CONFIG_KIND = "ProvisioningRequestConfig"
REQUEST_API = "autoscaling.x-k8s.io/v1"
NOT_NEEDED = "the provisioning request is not needed"
CONSUME_ANNOTATION = "autoscaling.x-k8s.io/consume-provisioning-request"
CLASS_ANNOTATION = "autoscaling.x-k8s.io/provisioning-class-name"
UNSERVED = (
    "this cluster does not serve ProvisioningRequests (autoscaling.x-k8s.io/v1): install a "
    "cluster autoscaler with ProvisioningRequest support, or remove the check from the "
    "ClusterQueue"
)


def run_admission_checks(host: Host, *, provisioning: bool = True) -> None:
    """One pass: the provisioning AdmissionChecks' Active condition, then each Workload's
    requests and check states, and Admitted once every check is Ready. Where the cluster does
    not serve ProvisioningRequests (``provisioning`` false: no cluster autoscaler answers) the
    checks are inactive, so their ClusterQueues admit nothing, as with Kueue there."""
    configs = {str(c["metadata"]["name"]): c for c in host.list(CONFIG_KIND)}
    active: dict[str, Obj] = {}  # check name -> its ProvisioningRequestConfig
    for check in host.list("AdmissionCheck"):
        spec = mapping(check.get("spec"))
        if spec.get("controllerName") != PROVISIONING_CONTROLLER:
            continue
        config, problem = _config(spec, configs) if provisioning else (None, UNSERVED)
        _write_active(host, check, problem)
        if config is not None:
            active[str(check["metadata"]["name"])] = config
    for workload in host.list("Workload"):
        if is_true(workload, "QuotaReserved") and not is_true(workload, "Finished"):
            _reconcile(host, workload, active)
        else:
            for request in host.owned(workload, "ProvisioningRequest"):
                host.delete(request)


def _config(spec: Obj, configs: dict[str, Obj]) -> tuple[Obj | None, str]:
    """The check's ProvisioningRequestConfig, or why not (Kueue's ``ConfigFromRef``)."""
    ref = mapping(spec.get("parameters"))
    if not ref:
        return None, "missing parameters"
    if ref.get("apiGroup") != GROUP or ref.get("kind") != CONFIG_KIND:
        return None, f"wrong parameters reference: {ref.get('apiGroup')}/{ref.get('kind')}"
    found = configs.get(str(ref.get("name")))
    if found is None:
        return None, f'{CONFIG_KIND}.{GROUP} "{ref.get("name")}" not found'
    return found, ""


def _write_active(host: Host, check: Obj, problem: str) -> None:
    reason = "ProvisioningRequestUnavailable" if problem == UNSERVED else "BadParametersRef"
    state = ("False", reason, problem) if problem else (
        "True", "Active", "The admission check is active"
    )  # fmt: skip
    old = condition_of(check, "Active")
    if (old.get("status"), old.get("reason"), old.get("message")) != state:
        status = {"conditions": with_conditions(check, host.now(), Condition("Active", *state))}
        host.patch(check, {"status": status}, status=True)


def _reconcile(host: Host, workload: Obj, active: dict[str, Obj]) -> None:
    status = mapping(workload.get("status"))
    states = [dict(s) for s in objects(status.get("admissionChecks"))]
    events: list[str] = []
    for state in states:
        config = active.get(str(state.get("name")))
        if config is None or state.get("state") not in ("Pending", "Ready"):
            continue
        new, message, updates = _provision(host, workload, str(state["name"]), config)
        if (new, message) == (state.get("state"), state.get("message", "")):
            continue
        if new != state.get("state"):
            said = f" with message: {message}" if message else ""
            events.append(
                f"Admission check {state['name']} updated state from {state.get('state')} "
                f"to {new}{said}"
            )
            state["lastTransitionTime"] = format_time(host.now())
        state.update({"state": new, "message": message})
        if updates:
            state["podSetUpdates"] = updates
    if states != objects(status.get("admissionChecks")):
        host.patch(workload, {"status": {"admissionChecks": states}}, status=True)
        for message in events:
            host.record(workload, "AdmissionCheckUpdated", message, NORMAL)
    ready = states and all(s.get("state") == "Ready" for s in states)
    if ready and not is_true(workload, "Admitted") and not is_true(workload, "Evicted"):
        admitted = with_conditions(
            workload,
            host.now(),
            Condition("Admitted", "True", "Admitted", "The workload is admitted"),
        )
        host.patch(workload, {"status": {"conditions": admitted}}, status=True)
        cq = mapping(status.get("admission")).get("clusterQueue")
        reserved = condition_of(workload, "QuotaReserved").get("lastTransitionTime")
        waited = host.now() - parse_time(reserved) if reserved else 0.0
        host.record(
            workload,
            "Admitted",
            f"Admitted by ClusterQueue {cq}, wait time since reservation was {waited:.0f}s",
            NORMAL,
        )


def _provision(host: Host, workload: Obj, check: str, config: Obj) -> tuple[str, str, list[Obj]]:
    """The check's (state, message, podSetUpdates) from its ProvisioningRequest, made if
    missing (Kueue's ``syncCheckStates``)."""
    meta = workload["metadata"]
    namespace = str(meta.get("namespace") or "default")
    name = f"{meta['name']}-{check}-1"
    spec = mapping(config.get("spec"))
    pod_sets = _managed(workload, [str(r) for r in spec.get("managedResources") or []])
    if not pod_sets:
        return "Ready", NOT_NEEDED, []
    request = host.get("ProvisioningRequest", name, namespace)
    if request is None:
        _create(host, workload, name, spec, pod_sets)
        return "Pending", "", []
    provisioned = condition_of(request, "Provisioned")
    if provisioned.get("status") == "True":
        updates = [
            {
                "name": str(p.get("name")),
                "annotations": {
                    CONSUME_ANNOTATION: name,
                    CLASS_ANNOTATION: str(spec.get("provisioningClassName") or ""),
                },
            }
            for p in pod_sets
        ]
        return "Ready", str(provisioned.get("message") or ""), updates
    if is_true(request, "Accepted") and provisioned:
        return "Pending", str(provisioned.get("message") or ""), []
    return "Pending", "", []


def _managed(workload: Obj, resources: list[str]) -> list[Obj]:
    """The Workload's PodSets that request a managed resource (all without a list)."""
    pod_sets = objects(mapping(workload.get("spec")).get("podSets"))
    if not resources:
        return pod_sets

    def requests(pod_set: Obj) -> set[str]:
        spec = mapping(mapping(pod_set.get("template")).get("spec"))
        return {
            str(r)
            for c in objects(spec.get("containers")) + objects(spec.get("initContainers"))
            for part in ("requests", "limits")
            for r in mapping(mapping(c.get("resources")).get(part))
        }

    return [p for p in pod_sets if requests(p) & set(resources)]


def _create(host: Host, workload: Obj, name: str, config: Obj, pod_sets: list[Obj]) -> None:
    """PodTemplates with the assigned flavors, and the ProvisioningRequest, owned by the
    Workload."""
    namespace = str(workload["metadata"].get("namespace") or "default")
    admission = mapping(mapping(workload.get("status")).get("admission"))
    infos = pod_set_infos(host, admission)
    refs: list[Obj] = []
    for pod_set in pod_sets:
        pod_set_name = str(pod_set.get("name"))
        template_name = f"ppt-{name}-{pod_set_name}"
        if host.get("PodTemplate", template_name, namespace) is None:
            selector, tolerations = infos.get(pod_set_name, ({}, []))
            template = with_pod_set_info(mapping(pod_set.get("template")), selector, tolerations)
            host.create(
                {
                    "apiVersion": "v1",
                    "kind": "PodTemplate",
                    "metadata": {
                        "name": template_name,
                        "namespace": namespace,
                        "ownerReferences": [owner_ref(workload)],
                    },
                    "template": template,
                }
            )
        refs.append({"podTemplateRef": {"name": template_name}, "count": pod_set.get("count", 1)})
    spec: Obj = {"provisioningClassName": str(config.get("provisioningClassName") or "")}
    if config.get("parameters"):
        spec["parameters"] = dict(mapping(config.get("parameters")))
    spec["podSets"] = refs
    host.create(
        {
            "apiVersion": REQUEST_API,
            "kind": "ProvisioningRequest",
            "metadata": {
                "name": name,
                "namespace": namespace,
                "labels": {"kueue.x-k8s.io/managed": "true"},
                "ownerReferences": [owner_ref(workload)],
            },
            "spec": spec,
        }
    )
