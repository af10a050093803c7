"""pykai's own figures in a Queue's status: KAI's Queue status has no fields for them, so they
travel as the message (JSON) of a ``FairShare`` condition, which KAI lets applications add. Kept
apart from the controllers so that reading commands need no engine to show them."""

from __future__ import annotations

import json
from typing import Any

from pykai.model.conditions import find_condition
from pykai.model.meta import mapping

FAIR_SHARE_CONDITION = "FairShare"


def queue_figures(status: object) -> dict[str, Any]:
    """pykai's figures in a queue status (``fairShare`` and ``deserved`` ResourceLists,
    ``evictions``), read from its FairShare condition; {} without one."""
    condition = find_condition(mapping(status).get("conditions"), FAIR_SHARE_CONDITION)
    try:
        figures = json.loads(str(condition.get("message", "")))
    except ValueError:
        return {}
    return figures if isinstance(figures, dict) else {}
