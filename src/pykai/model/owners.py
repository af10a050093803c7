"""Owner references (``metadata.ownerReferences``) as Kubernetes' controllers write them: the
object that made another, so that deleting the owner deletes what it owns."""

from __future__ import annotations

from typing import Any

from pykai.model.meta import Obj


def owner_ref(owner: Obj) -> dict[str, Any]:
    """A controlling ownerReference to ``owner`` (``controller`` and ``blockOwnerDeletion``
    set, as ``metav1.NewControllerRef`` makes it)."""
    return {
        "apiVersion": owner.get("apiVersion", "v1"),
        "kind": owner["kind"],
        "name": owner["metadata"]["name"],
        "uid": owner["metadata"]["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }
