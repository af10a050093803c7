"""The validating review: what ``pykai apply`` refuses, refused before anything is stored
(controllers/validation.py), per kind and operation."""

from __future__ import annotations

import logging
from typing import Any

from pykai.controllers.validation import Lister, check_queue_unused, validate_objects
from pykai.kube.api import API_ERRORS, KubeApi
from pykai.kube.gpu_env import SHARING_ANNOTATIONS
from pykai.kube.webhook.answer import answer
from pykai.model.errors import FieldProblem, ValidationError
from pykai.model.kinds import BY_KIND, KUEUE_KINDS
from pykai.model.meta import Obj
from pykai.model.workloads import pod_templates

log = logging.getLogger("pykai.webhook")


def review(body: Any, stored: Lister, gpu_sharing: bool = True) -> Obj:
    """The AdmissionReview answering ``body`` (same apiVersion); never raises. With
    ``gpu_sharing`` off, pods (and pod templates) asking for a GPU fraction or GPU memory are
    refused."""
    request = body.get("request") if isinstance(body, dict) else None
    if not isinstance(request, dict) or not isinstance(request.get("uid"), str):
        return answer(body, "", False, 400, "not an AdmissionReview with a request")
    uid = request["uid"]
    try:
        problem = _problem(request, stored, gpu_sharing)
    except (KeyError, TypeError, AttributeError) as exc:
        return answer(body, uid, False, 400, f"malformed admission request: {exc!r}")
    except API_ERRORS as exc:
        return answer(body, uid, False, 500, f"cannot read the stored objects: {exc}")
    except Exception as exc:  # a refusal with a message, never a crash
        log.exception("review %s failed", uid)
        return answer(body, uid, False, 500, f"the pykai webhook failed to review it: {exc!r}")
    if problem:
        return answer(body, uid, False, 422, problem)
    return answer(body, uid, True, 200, "")


def _problem(request: Obj, stored: Lister, gpu_sharing: bool) -> str:
    """Why the request must be refused, or ""."""
    kind = request["kind"]["kind"]
    operation = request["operation"]
    if operation == "DELETE":
        if kind == "Queue":
            try:
                check_queue_unused(request["name"], stored("Queue"), stored("PodGroup"))
            except ValidationError as exc:
                return str(exc)
        return ""
    obj = request["object"]
    if not isinstance(obj, dict):
        raise TypeError("request.object is not an object")
    obj.setdefault("kind", kind)
    if not gpu_sharing and (refusal := _sharing_refusal(obj)):
        return refusal
    old = request.get("oldObject")
    if kind in KUEUE_KINDS:  # the object's stored self is the request's oldObject, if any
        stored = _stored_as(kind, old if operation == "UPDATE" else None, stored)
    problems = _problems(obj, stored)
    if operation == "UPDATE" and isinstance(old, dict) and problems:
        old.setdefault("kind", kind)
        before = {str(p) for p in _problems(old, stored)}
        problems = [p for p in problems if str(p) not in before]
    return str(ValidationError(problems)) if problems else ""


def _stored_as(kind: str, old: object, stored: Lister) -> Lister:
    """``stored``, but objects of ``kind`` are just ``old`` (none on a CREATE)."""
    own = [old] if isinstance(old, dict) else []
    return lambda wanted: own if wanted == kind else stored(wanted)


def _problems(obj: Obj, stored: Lister) -> list[FieldProblem]:
    """What pykai apply would refuse in ``obj`` (without the embedded cluster's pod cap)."""
    try:
        validate_objects([obj], stored, max_pods=None)
    except ValidationError as exc:
        return exc.problems
    return []


def _sharing_refusal(obj: Obj) -> str:
    """Why a pod or pod template asking for a shared GPU is refused when sharing is off."""
    places = [("", obj)] if obj.get("kind") == "Pod" else pod_templates(obj)
    for path, holder in places:
        meta = holder.get("metadata") or {}
        asked = sorted(set(meta.get("annotations") or {}) & SHARING_ANNOTATIONS)
        if asked:
            name = (obj.get("metadata") or {}).get("name", "")
            where = f"{path}.metadata" if path else "metadata"
            return (
                f'{obj["kind"]} "{name}": {where}.annotations[{asked[0]}]: GPU sharing is '
                "disabled in this cluster; request whole GPUs (nvidia.com/gpu) instead"
            )
    return ""


def api_lister(api: KubeApi) -> Lister:
    """Stored objects read from the apiserver at review time."""
    return lambda kind: api.list(BY_KIND[kind])[0]
