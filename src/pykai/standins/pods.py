"""Making pods and other objects as Kubernetes' controllers make them: from a pod template,
owned by their controller, with generated names that are tried again while taken (as the API
server's ``generateName`` does; the first try gives the name it always gave, so names stay
reproducible)."""

from __future__ import annotations

import copy
import hashlib
from collections.abc import Callable
from functools import partial
from typing import Any

from pykai.controllers.host import Host
from pykai.model.errors import AlreadyExists
from pykai.model.meta import Obj
from pykai.model.names import generated_name
from pykai.model.owners import owner_ref

_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"  # Kubernetes' suffix alphabet (no vowels)
NAME_ATTEMPTS = 8
"""Names tried for one generated object before giving up."""


def suffix(seed: str, length: int = 5) -> str:
    """A Kubernetes-style random-looking suffix, reproducible from ``seed``."""
    digest = hashlib.sha256(seed.encode()).digest()
    return "".join(_ALPHABET[b % len(_ALPHABET)] for b in digest[:length])


def create_named(host: Host, make: Callable[[str], Obj], seed: str) -> Obj:
    """Create ``make(seed)``; while its name is taken, ``make(seed/1)``, ``make(seed/2)``,
    ... (at most NAME_ATTEMPTS names)."""
    for attempt in range(NAME_ATTEMPTS):
        try:
            return host.create(make(f"{seed}/{attempt}" if attempt else seed))
        except AlreadyExists:
            continue
    raise AlreadyExists(f"every name generated from {seed!r} is taken")


def with_suffix(obj: Obj, prefix: str, token: str) -> Obj:
    """``obj``, named ``prefix`` and the suffix made from ``token`` (the prefix cut as the
    apiserver cuts a generateName)."""
    obj["metadata"]["name"] = generated_name(prefix, suffix(token))
    return obj


def pod_from_template(
    template: dict[str, Any], name: str, owner: Obj, labels: dict[str, str]
) -> Obj:
    """A pod prototype (name prefix ``name``) from a pod template, owned by ``owner``."""
    meta = template.get("metadata") or {}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": owner["metadata"].get("namespace", "default"),
            "labels": {**(meta.get("labels") or {}), **labels},
            "annotations": dict(meta.get("annotations") or {}),
            "ownerReferences": [owner_ref(owner)],
        },
        "spec": copy.deepcopy(template.get("spec") or {}),
    }


def reconcile_pods(host: Host, owner: Obj, wanted: dict[str, tuple[int, Obj]], key: str) -> None:
    """Make the owner's pods match ``wanted``: group -> (count, pod prototype); pods carry the
    group in label ``key``. Missing pods are created with fresh names; extra ones deleted."""
    pods = [p for p in host.owned(owner, "Pod") if not p["metadata"].get("deletionTimestamp")]
    for group, (count, prototype) in sorted(wanted.items()):
        mine = sorted(
            (p for p in pods if p["metadata"]["labels"].get(key) == group),
            key=lambda p: p["metadata"]["name"],
        )
        for extra in mine[count:]:
            host.delete(extra)
        for _ in range(count - len(mine)):
            pod = copy.deepcopy(prototype)
            serial = host.serial(f"pods/{owner['metadata']['uid']}")
            make = partial(with_suffix, pod, pod["metadata"]["name"])
            create_named(host, make, f"{owner['metadata']['uid']}/{group}/{serial}")


def merge_status(host: Host, obj: Obj, status: dict[str, Any]) -> None:
    """Set these status fields (a merge patch), unless they say so already."""
    current = obj.get("status") or {}
    if any(current.get(k) != v for k, v in status.items()):
        host.patch(obj, {"status": status}, status=True)
