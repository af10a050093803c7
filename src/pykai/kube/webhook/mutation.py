"""The mutating review: defaults written into objects as they are created."""

from __future__ import annotations

import base64
import json
import logging
from typing import Any

from pykai.kube.gpu_env import env_patch
from pykai.kube.webhook.answer import answer
from pykai.model.meta import Obj

log = logging.getLogger("pykai.webhook")


def mutate(body: Any) -> Obj:
    """The AdmissionReview answering a mutating review: a GPU-sharing pod gets the ConfigMap
    its GPU env will come from (kube/gpu_env.py); everything else passes unchanged. Never
    raises: a pod it cannot read is refused with the reason."""
    request = body.get("request") if isinstance(body, dict) else None
    if not isinstance(request, dict) or not isinstance(request.get("uid"), str):
        return answer(body, "", False, 400, "not an AdmissionReview with a request")
    reply = answer(body, request["uid"], True, 200, "")
    pod = request.get("object")
    if request.get("operation") == "CREATE" and isinstance(pod, dict) and "metadata" in pod:
        try:
            ops = env_patch(pod)
        except Exception as exc:  # a refusal with a message, never a crash
            log.exception("mutation %s failed", request["uid"])
            return answer(body, request["uid"], False, 400, f"cannot read the pod: {exc!r}")
        if ops:
            reply["response"]["patchType"] = "JSONPatch"
            reply["response"]["patch"] = base64.b64encode(json.dumps(ops).encode()).decode()
    return reply
