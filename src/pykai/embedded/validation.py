"""Apply-time validation: every object checked before anything is written."""

from __future__ import annotations

from collections.abc import Callable

from pykai.engine.config import config_from_mapping
from pykai.model.errors import FieldProblem, ValidationError
from pykai.model.meta import Obj
from pykai.model.node import parse_node
from pykai.model.pod import parse_pod
from pykai.model.podgroup import parse_podgroup
from pykai.model.priorityclass import parse_priority_class
from pykai.model.queue import QueueView, parse_queue, validate_queue_tree

_PARSERS: dict[str, Callable[[Obj], object]] = {
    "Pod": parse_pod,
    "Node": parse_node,
    "PodGroup": parse_podgroup,
    "PriorityClass": parse_priority_class,
    "Queue": parse_queue,
    "SchedulingShard": config_from_mapping,
}


def validate_objects(objects: list[Obj], stored_queues: list[Obj]) -> None:
    """Raise ValidationError listing every problem in ``objects`` (and in the queue tree they
    make with the stored queues); return quietly if all is well."""
    problems: list[FieldProblem] = []
    queues: dict[str, QueueView] = {}
    for obj in stored_queues:
        queue = parse_queue(obj)
        queues[queue.name] = queue
    for index, obj in enumerate(objects):
        kind = obj.get("kind")
        name = (
            (obj.get("metadata") or {}).get("name")
            if isinstance(obj.get("metadata"), dict)
            else None
        )
        if not kind or not obj.get("apiVersion"):
            problems.append(
                FieldProblem(
                    str(kind or "object"),
                    str(name or f"#{index + 1}"),
                    "apiVersion/kind",
                    "are required",
                    "start the document with apiVersion and kind",
                )
            )
            continue
        if not name:
            problems.append(
                FieldProblem(str(kind), f"#{index + 1}", "metadata.name", "is required")
            )
            continue
        parser = _PARSERS.get(str(kind))
        if parser is None:
            continue
        try:
            parsed = parser(obj)
        except ValidationError as exc:
            problems.extend(exc.problems)
            continue
        if isinstance(parsed, QueueView):
            queues[parsed.name] = parsed
    if any(o.get("kind") == "Queue" for o in objects):
        problems.extend(validate_queue_tree(queues))
    if problems:
        raise ValidationError(problems)
