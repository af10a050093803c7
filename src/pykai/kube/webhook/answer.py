"""The AdmissionReview a webhook answers with (same apiVersion as the request)."""

from __future__ import annotations

from typing import Any

from pykai.model.meta import Obj


def answer(body: Any, uid: str, allowed: bool, code: int, message: str) -> Obj:
    """The review answering ``body``: allowed, or refused with ``code`` and ``message``."""
    api_version = "admission.k8s.io/v1"
    if isinstance(body, dict) and body.get("apiVersion") == "admission.k8s.io/v1beta1":
        api_version = "admission.k8s.io/v1beta1"
    response: Obj = {"uid": uid, "allowed": allowed}
    if not allowed:
        response["status"] = {"code": code, "message": message}
    return {"apiVersion": api_version, "kind": "AdmissionReview", "response": response}
