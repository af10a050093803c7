"""The three-way merge behind ``apply`` (what ``kubectl apply`` does with its last-applied
configuration): a manifest owns the fields it sets; what servers and controllers wrote stays."""

from __future__ import annotations

import copy
from typing import Any

# Metadata the server owns: taken from the stored object, never from a re-applied manifest.
SERVER_METADATA = ("uid", "resourceVersion", "creationTimestamp", "generation")


def three_way_merge(
    live: dict[str, Any], last: dict[str, Any], new: dict[str, Any]
) -> dict[str, Any]:
    """``live`` with the user's edits from ``last`` (the previous manifest) to ``new``: keys the
    manifest dropped are removed, values it changed are set, maps are merged key by key, and
    everything the manifest never set (spec.nodeName, status, controller labels) is kept."""
    merged = copy.deepcopy(live)
    for key in last.keys() - new.keys():
        merged.pop(key, None)
    for key, value in new.items():
        before, current = last.get(key), merged.get(key)
        if isinstance(value, dict) and isinstance(current, dict):
            merged[key] = three_way_merge(
                current, before if isinstance(before, dict) else {}, value
            )
        elif key not in last or before != value:
            merged[key] = copy.deepcopy(value)
    return merged


def user_fields(manifest: dict[str, Any]) -> dict[str, Any]:
    """A shallow copy of a manifest without the metadata the server owns."""
    meta = manifest.get("metadata") or {}
    return {
        **manifest,
        "metadata": {k: v for k, v in meta.items() if k not in SERVER_METADATA},
    }
