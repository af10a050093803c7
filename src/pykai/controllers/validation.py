"""Checks made before anything is written: every applied object parses with the model's views,
the queues form a valid tree, and a deleted queue is no longer used."""

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
    """Raise ValidationError listing every problem in ``objects`` and in the queue tree they
    make with the stored queues (an applied queue replaces the stored one of its name).
    Kinds pykai does not model are only checked for apiVersion, kind and metadata.name."""
    problems: list[FieldProblem] = []
    queues = {queue.name: queue for queue in readable_queues(stored_queues)}
    for index, obj in enumerate(objects):
        problem = _identity_problem(obj, index)
        if problem is not None:
            problems.append(problem)
            continue
        parser = _PARSERS.get(str(obj["kind"]))
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


def readable_queues(stored: list[Obj]) -> list[QueueView]:
    """The stored queues that parse: one broken elsewhere must not block unrelated writes (the
    scheduler reports it and skips it)."""
    views = []
    for queue in stored:
        try:
            views.append(parse_queue(queue))
        except ValidationError:
            continue
    return views


def check_queue_unused(name: str, queues: list[Obj], podgroups: list[Obj]) -> None:
    """Raise ValidationError if child queues or PodGroups still use queue ``name``."""
    users = [
        f'queue "{q["metadata"]["name"]}"'
        for q in queues
        if (q.get("spec") or {}).get("parentQueue") == name
    ]
    users += [
        f'podgroup "{g["metadata"]["namespace"]}/{g["metadata"]["name"]}"'
        for g in podgroups
        if (g.get("spec") or {}).get("queue") == name
    ]
    if users:
        raise ValidationError.single(
            "Queue", name, "", f"is still used by {', '.join(users)}", "delete those first"
        )


def _identity_problem(obj: object, index: int) -> FieldProblem | None:
    """What is wrong with an object's apiVersion, kind or metadata.name, if anything."""
    where = f"#{index + 1}"
    if not isinstance(obj, dict):
        return FieldProblem("object", where, "", "is not a mapping", "write a YAML mapping")
    kind = obj.get("kind")
    meta = obj.get("metadata")
    name = meta.get("name") if isinstance(meta, dict) else None
    if not kind or not obj.get("apiVersion"):
        return FieldProblem(
            str(kind or "object"),
            str(name or where),
            "apiVersion/kind",
            "are required",
            "start the document with apiVersion and kind",
        )
    if not isinstance(meta, dict) or not name:
        return FieldProblem(str(kind), where, "metadata.name", "is required", "give it a name")
    return None
