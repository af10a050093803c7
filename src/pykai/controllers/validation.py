"""Checks made before anything is written, by `pykai apply` and by the admission webhook: what
Kubernetes, KAI, KubeRay and Kubeflow refuse. Every applied object must be of a known kind and
apiVersion, with valid metadata, within the apiserver's size limit, and parse with the model's
views (the engine reads objects with the same functions); then the objects are checked against
each other and the stored ones: the queue tree, the priority classes pods name, one global
default class. Nothing is written unless everything is valid."""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterator

from pykai.engine.config import config_from_mapping
from pykai.model import kinds
from pykai.model.errors import FieldProblem, ValidationError
from pykai.model.kinds import KUEUE_KINDS
from pykai.model.kueue.validation import immutable_problems, kueue_problems
from pykai.model.meta import Obj, mapping
from pykai.model.names import metadata_problems
from pykai.model.node import parse_node
from pykai.model.podgroup import parse_podgroup
from pykai.model.podspec import pod_problems
from pykai.model.priorityclass import priority_class_problems
from pykai.model.queue import QueueView, parse_queue, validate_queue_tree
from pykai.model.workloads import CHECKS as WORKLOAD_CHECKS
from pykai.model.workloads import (
    MAX_EMBEDDED_PODS,
    new_workload_problems,
    pod_templates,
    pods_wanted,
    workload_problems,
)

Lister = Callable[[str], list[Obj]]  # kind -> the stored objects of that kind
Problems = list[FieldProblem]

MAX_OBJECT_BYTES = 3 * 1024 * 1024 // 2
"""The largest object, as JSON (etcd's default request limit, 1.5 MiB: the apiserver cannot
store a larger one)."""


def _parsed(parse: Callable[[Obj], object]) -> Callable[[Obj], Problems]:
    """A check made of a view's parser: its ValidationError's problems, or none."""

    def check(obj: Obj) -> Problems:
        try:
            parse(obj)
        except ValidationError as exc:
            return exc.problems
        return []

    return check


_CHECKS: dict[str, Callable[[Obj], Problems]] = {
    "Pod": pod_problems,
    "Node": _parsed(parse_node),
    "PodGroup": _parsed(parse_podgroup),
    "PriorityClass": priority_class_problems,
    "Queue": _parsed(parse_queue),
    "SchedulingShard": _parsed(config_from_mapping),
    **dict.fromkeys(WORKLOAD_CHECKS, workload_problems),
    **dict.fromkeys(KUEUE_KINDS, kueue_problems),
}


def validate_objects(
    objects: list[Obj], stored: Lister, *, max_pods: int | None = MAX_EMBEDDED_PODS
) -> None:
    """Raise ValidationError listing every problem of ``objects``, alone and together with
    the stored objects (``stored(kind)``; an applied object replaces the stored one of its
    name). ``max_pods`` caps the pods one workload makes (None: only Kubernetes' int32
    bounds, as on a real cluster). What the apiserver refuses only in new objects is refused
    too (the webhook lets an UPDATE keep what the old object had; StoredCheck never asks)."""
    problems: Problems = []
    valid: list[Obj] = []
    for index, obj in enumerate(objects):
        found = object_problems(obj, index, max_pods) or new_workload_problems(obj)
        problems += found
        if not found:
            valid.append(obj)
    problems += _queue_tree_problems(valid, stored)
    problems += _priority_class_problems(valid, stored)
    problems += _kueue_update_problems(valid, stored)
    if problems:
        raise ValidationError(problems)


def object_problems(obj: object, index: int, max_pods: int | None = None) -> Problems:
    """What is wrong with one object on its own (``index`` names an object without a name)."""
    identity = _identity_problem(obj, index)
    if identity is not None or not isinstance(obj, dict):
        return [identity] if identity else []
    kind, name = str(obj["kind"]), str(obj["metadata"]["name"])
    try:
        size = len(json.dumps(obj, default=repr))
        if size > MAX_OBJECT_BYTES:
            return [
                FieldProblem(
                    kind,
                    name,
                    "",
                    f"is {size} bytes as JSON; the apiserver stores at most {MAX_OBJECT_BYTES}",
                    "move large data out of the object (e.g. into a volume)",
                )
            ]
        problems = metadata_problems(obj, kinds.known(kind), kind, name)
        if problems:
            return problems
        check = _CHECKS.get(kind)
        problems = check(obj) if check else []
        if not problems:
            problems = list(_json_problems(obj, kind, name))
        if not problems and max_pods is not None:
            problems = _pod_cap_problems(obj, kind, name, max_pods)
    except (
        ValueError,
        TypeError,
        LookupError,
        AttributeError,
        ArithmeticError,
        RecursionError,
    ) as exc:
        # a shape no check foresaw: still a refusal naming the object, never a crash
        problems = [FieldProblem(kind, name, "", f"cannot be read: {exc!r}")]
    return problems


class StoredCheck:
    """``object_problems`` for objects already stored (that got in some other way, or before
    a check existed), so a controller skips what it cannot run: raises ValidationError naming
    the fields. The answer is remembered per object version (resourceVersion)."""

    def __init__(self, max_pods: int | None = MAX_EMBEDDED_PODS, remember: int = 4096) -> None:
        self.max_pods = max_pods
        self._remember = remember
        self._answers: dict[tuple[str, str, str, str], Problems] = {}

    def __call__(self, obj: Obj) -> None:
        meta = mapping(obj.get("metadata"))
        key = (
            str(obj.get("kind")),
            str(meta.get("namespace") or ""),
            str(meta.get("name")),
            str(meta.get("resourceVersion") or ""),
        )
        problems = self._answers.get(key) if key[3] else None
        if problems is None:
            problems = object_problems(obj, 0, self.max_pods)
            if len(self._answers) >= self._remember:
                self._answers.clear()
            self._answers[key] = problems
        if problems:
            raise ValidationError(problems)


def _identity_problem(obj: object, index: int) -> FieldProblem | None:
    """What is wrong with an object's apiVersion, kind or metadata.name, if anything."""
    where = f"#{index + 1}"
    if not isinstance(obj, dict):
        return FieldProblem("object", where, "", "is not a mapping", "write a YAML mapping")
    kind, api_version, meta = obj.get("kind"), obj.get("apiVersion"), obj.get("metadata")
    raw_name = meta.get("name") if isinstance(meta, dict) else None
    name = str(raw_name) if raw_name not in (None, "") else where
    if not kind or not api_version or not isinstance(kind, str) or not isinstance(api_version, str):
        return FieldProblem(
            str(kind or "object"),
            name,
            "apiVersion/kind",
            "are required (strings)",
            "start the document with apiVersion and kind",
        )
    spec = kinds.known(kind)
    if spec is None:
        close = kinds.suggestion(kind)
        return FieldProblem(
            kind,
            name,
            "kind",
            f'no matches for kind "{kind}" in version "{api_version}"',
            f'did you mean "{close}"?' if close else "pykai knows the kinds `pykai get` lists",
        )
    if api_version not in spec.api_versions:  # kubectl's words for what the apiserver lacks
        removed = kinds.REMOVED.get((kind, api_version))
        return FieldProblem(
            kind,
            name,
            "apiVersion",
            f'no matches for kind "{kind}" in version "{api_version}"'
            + (f": Kubernetes {removed} stopped serving it" if removed else ""),
            f"use apiVersion {' or '.join(spec.api_versions)}",
        )
    if not isinstance(meta, dict):
        return FieldProblem(kind, name, "metadata", "is required (a map)", "give it a name")
    if raw_name in (None, ""):
        return FieldProblem(kind, where, "metadata.name", "is required", "give it a name")
    if not isinstance(raw_name, str):
        return FieldProblem(kind, name, "metadata.name", "must be a string", "quote the name")
    return None


def _json_problems(obj: Obj, kind: str, name: str) -> Iterator[FieldProblem]:
    """Values JSON (and so the apiserver) cannot carry: non-finite numbers, keys that are
    not strings, values of other types."""
    stack: list[tuple[str, object]] = [("", obj)]
    while stack:
        path, value = stack.pop()
        if isinstance(value, dict):
            for key, item in value.items():
                if not isinstance(key, str):
                    yield FieldProblem(kind, name, path, f"key {key!r} must be a string")
                stack.append((f"{path}.{key}" if path else str(key), item))
        elif isinstance(value, list):
            stack.extend((f"{path}[{i}]", item) for i, item in enumerate(value))
        elif isinstance(value, float) and not math.isfinite(value):
            yield FieldProblem(kind, name, path, f"must be a finite number, got {value!r}")
        elif value is not None and not isinstance(value, str | int | float | bool):
            yield FieldProblem(kind, name, path, f"{type(value).__name__} is not a JSON value")


def _pod_cap_problems(obj: Obj, kind: str, name: str, max_pods: int) -> Problems:
    field, pods = pods_wanted(obj)
    if pods <= max_pods:
        return []
    return [
        FieldProblem(
            kind,
            name,
            field,
            f"makes {pods} pods; the embedded cluster runs at most {max_pods} per workload",
            "make it smaller, or split it into several workloads",
        )
    ]


def _queue_tree_problems(objects: list[Obj], stored: Lister) -> Problems:
    """Problems of the tree the applied queues make with the stored ones (parents that do not
    exist, cycles), for the applied queues only: a stored queue broken before is not theirs."""
    applied = {str(o["metadata"]["name"]) for o in objects if o["kind"] == "Queue"}
    if not applied:
        return []
    queues = {view.name: view for view in readable_queues(stored("Queue"))}
    queues |= {v.name: v for v in (parse_queue(o) for o in objects if o["kind"] == "Queue")}
    return [p for p in validate_queue_tree(queues) if p.name in applied]


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


def _priority_class_problems(objects: list[Obj], stored: Lister) -> Problems:
    """Pods (and pod templates) naming a PriorityClass that does not exist, as Kubernetes'
    Priority admission refuses them; more than one global default class."""
    applied = {str(o["metadata"]["name"]): o for o in objects if o["kind"] == "PriorityClass"}
    named = [
        (o, path, template)
        for o in objects
        for path, template in ([("", o)] if o["kind"] == "Pod" else pod_templates(o))
    ]
    wanted = {_class_of(t) for _, _, t in named} - {""} - set(applied)
    defaults = [n for n, o in applied.items() if o.get("globalDefault") is True]
    if not wanted and not defaults:
        return []
    classes = {str(o["metadata"]["name"]): o for o in stored("PriorityClass")} | applied
    problems = [
        FieldProblem(
            str(o["kind"]),
            str(o["metadata"]["name"]),
            f"{path}.spec.priorityClassName" if path else "spec.priorityClassName",
            f'no PriorityClass with name "{_class_of(t)}" was found',
            f"create it, or use one of: {', '.join(sorted(classes))}",
        )
        for o, path, t in named
        if _class_of(t) and _class_of(t) not in classes
    ]
    every_default = sorted(n for n, o in classes.items() if o.get("globalDefault") is True)
    if len(every_default) > 1:
        problems += [
            FieldProblem(
                "PriorityClass",
                name,
                "globalDefault",
                f"only one PriorityClass may be the global default: {', '.join(every_default)}",
                "set globalDefault: false on all but one",
            )
            for name in defaults
        ]
    return problems


def _kueue_update_problems(objects: list[Obj], stored: Lister) -> Problems:
    """Kueue's immutable fields changed by an update of a stored object."""
    problems: Problems = []
    for obj in objects:
        if obj["kind"] in ("LocalQueue", "AdmissionCheck"):
            meta = obj["metadata"]
            old = next(
                (
                    s
                    for s in stored(obj["kind"])
                    if s["metadata"]["name"] == meta["name"]
                    and (s["metadata"].get("namespace") or "default")
                    == (meta.get("namespace") or "default")
                ),
                None,
            )
            problems += immutable_problems(obj, old)
    return problems


def _class_of(pod_or_template: Obj) -> str:
    spec = pod_or_template.get("spec")
    return str(spec.get("priorityClassName") or "") if isinstance(spec, dict) else ""


NAMED_USERS = 3
"""How many PodGroups a refusal names before it counts the rest, as kubectl prints a long list
(``a, b, c + 2 more...``)."""


def check_queue_unused(name: str, queues: list[Obj], podgroups: list[Obj]) -> None:
    """Raise ValidationError if child queues or PodGroups still use queue ``name``: every
    child queue named, the PodGroups counted and the first few named (namespace/name, in
    order; who may delete a cluster-scoped queue is told what still uses it)."""
    users = [
        f'queue "{q["metadata"]["name"]}"'
        for q in queues
        if (q.get("spec") or {}).get("parentQueue") == name
    ]
    groups = sorted(
        f"{g['metadata'].get('namespace') or 'default'}/{g['metadata']['name']}"
        for g in podgroups
        if (g.get("spec") or {}).get("queue") == name
    )
    if groups:
        named = ", ".join(groups[:NAMED_USERS])
        more = f" + {len(groups) - NAMED_USERS} more..." if len(groups) > NAMED_USERS else ""
        users.append(f"{len(groups)} PodGroup{'s' if len(groups) > 1 else ''} ({named}{more})")
    if users:
        raise ValidationError.single(
            "Queue",
            name,
            "",
            f"is still used by {', '.join(users)}",
            "delete those first (get podgroups --all-namespaces lists the PodGroups)",
        )
