"""The mutating review: defaults written into objects as they are created: a GPU-sharing pod
gets the ConfigMap its GPU env comes from, and a Kueue-managed job starts suspended (Kueue's
defaulting webhook: its controllers unsuspend it once its Workload is admitted)."""

from __future__ import annotations

import base64
import json
import logging
from typing import Any

from pykai.kube.gpu_env import env_patch
from pykai.kube.webhook.answer import answer
from pykai.model.kueue.jobs import MANAGED_KINDS, is_managed
from pykai.model.meta import Obj, mapping, objects

log = logging.getLogger("pykai.webhook")


def mutate(body: Any) -> Obj:
    """The AdmissionReview answering a mutating review: a GPU-sharing pod gets the ConfigMap
    its GPU env will come from (kube/gpu_env.py), a Kueue-managed job ``spec.suspend: true``;
    everything else passes unchanged. Never raises: an object it cannot read is refused with
    the reason."""
    request = body.get("request") if isinstance(body, dict) else None
    if not isinstance(request, dict) or not isinstance(request.get("uid"), str):
        return answer(body, "", False, 400, "not an AdmissionReview with a request")
    reply = answer(body, request["uid"], True, 200, "")
    obj = request.get("object")
    if request.get("operation") == "CREATE" and isinstance(obj, dict) and "metadata" in obj:
        kind = str(mapping(request.get("kind")).get("kind") or obj.get("kind") or "")
        try:
            ops = _suspend_patch({**obj, "kind": kind}) if kind in MANAGED_KINDS else env_patch(obj)
        except Exception as exc:  # a refusal with a message, never a crash
            log.exception("mutation %s failed", request["uid"])
            return answer(body, request["uid"], False, 400, f"cannot read the {kind}: {exc!r}")
        if ops:
            reply["response"]["patchType"] = "JSONPatch"
            reply["response"]["patch"] = base64.b64encode(json.dumps(ops).encode()).decode()
    return reply


def _suspend_patch(job: Obj) -> list[Obj]:
    """The JSON patch that creates a Kueue-managed job suspended: none for other jobs, nor for
    one a job of a managed kind controls (a RayJob's RayCluster: its owner's Workload governs
    it); a RayService's RayCluster is suspended (Kueue manages it for the RayService)."""
    owners = objects(mapping(job.get("metadata")).get("ownerReferences"))
    if not is_managed(job) or mapping(job.get("spec")).get("suspend") is True:
        return []
    if any(ref.get("controller") and ref.get("kind") in MANAGED_KINDS for ref in owners):
        return []
    if not isinstance(job.get("spec"), dict):
        return [{"op": "add", "path": "/spec", "value": {"suspend": True}}]
    return [{"op": "add", "path": "/spec/suspend", "value": True}]
