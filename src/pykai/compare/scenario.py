"""The scenario folder format of tests/scenarios, read and written: a ``scenario.yaml``
(description, semantics, optional ``config``, ``steps``) beside the manifests its ``apply`` and
``reject`` steps name.

Contract: ``read_scenario(folder)`` returns the folder's steps in order, each with its action
(``apply``, ``delete``, ``advance`` or ``reject``), the objects of its manifests in file and
document order (a pod, or a pod template of a controller's workload, without
``terminationGracePeriodSeconds`` gets 0: an evicted pod is gone at once), its delete targets
and its advance in seconds; it reads nothing else and checks only the shape it needs
(``ScenarioError`` otherwise). ``write_scenario`` writes a folder that ``read_scenario`` reads
back to equal steps. ``under_parents`` gives each top-level leaf queue a parent of its own
(KAI v0.12.0 schedules no job of a queue without a parent, docs/conformance.md row (a))."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml

from pykai.model.duration import parse_duration
from pykai.model.errors import PykaiError
from pykai.model.meta import Obj

ACTIONS = ("apply", "delete", "advance", "reject")
PARENT_SUFFIX = "-parent"  # under_parents: the parent of a top-level leaf queue


class ScenarioError(PykaiError, ValueError):
    """A folder that is not a scenario (the message says what is wrong)."""


@dataclass(frozen=True)
class Step:
    """One step: its ``action``, the ``files`` it names (apply, reject) and their ``objects``,
    the ``targets`` of a delete (kind, name, namespace) and the ``seconds`` of an advance."""

    action: str
    files: tuple[str, ...] = ()
    objects: tuple[Obj, ...] = ()
    targets: tuple[Obj, ...] = ()
    seconds: float = 0.0


@dataclass(frozen=True)
class Scenario:
    """A scenario folder as read: its ``name`` (the folder's path as given), ``config`` (the
    SchedulerConfig keys, may be empty), ``steps`` and the raw ``document``."""

    name: str
    folder: Path
    config: Obj
    steps: tuple[Step, ...]
    document: Obj = field(default_factory=dict, compare=False)


def read_manifests(folder: Path, files: list[str] | tuple[str, ...]) -> list[Obj]:
    """Every object of ``files`` in ``folder``, in file and document order; pods without a
    grace period get 0."""
    objects: list[Obj] = []
    for file in files:
        try:
            text = (folder / file).read_text()
        except OSError as exc:
            raise ScenarioError(f"{folder}: cannot read {file}: {exc.strerror}") from exc
        objects += [doc for doc in yaml.safe_load_all(text) if doc is not None]
    for obj in objects:
        if not isinstance(obj, dict) or "kind" not in obj or "metadata" not in obj:
            raise ScenarioError(f"{folder}: a manifest without kind or metadata: {obj!r:.80}")
        if obj["kind"] == "Pod":
            obj.setdefault("spec", {}).setdefault("terminationGracePeriodSeconds", 0)
        else:
            _release_at_once(obj.get("spec"))
    return objects


def _release_at_once(value: object) -> None:
    """Every pod template (``template.spec``) inside ``value`` without a grace period gets 0,
    as a bare pod does: the pods a controller makes from it are gone at once once evicted."""
    if isinstance(value, list):
        for item in value:
            _release_at_once(item)
    elif isinstance(value, dict):
        template = value.get("template")
        if isinstance(template, dict) and isinstance(template.get("spec"), dict):
            template["spec"].setdefault("terminationGracePeriodSeconds", 0)
        for item in value.values():
            _release_at_once(item)


def read_document(folder: Path) -> dict[str, Any]:
    """The folder's scenario.yaml, parsed."""
    try:
        document = yaml.safe_load((folder / "scenario.yaml").read_text())
    except OSError as exc:
        raise ScenarioError(f"{folder}: no scenario.yaml ({exc.strerror})") from exc
    if not isinstance(document, dict) or not isinstance(document.get("steps"), list):
        raise ScenarioError(f"{folder}/scenario.yaml: no list of steps")
    return document


def read_scenario(folder: Path, name: str = "") -> Scenario:
    """The scenario in ``folder`` (see the module's contract)."""
    document = read_document(folder)
    steps = []
    for number, raw in enumerate(document["steps"], start=1):
        actions = [a for a in ACTIONS if a in raw]
        if len(actions) != 1:
            raise ScenarioError(f"{folder}: step {number} has {actions or 'no action'}")
        action = actions[0]
        if action in ("apply", "reject"):
            files = tuple(raw[action])
            steps.append(Step(action, files, tuple(read_manifests(folder, files))))
        elif action == "delete":
            steps.append(Step(action, targets=tuple(raw["delete"])))
        else:
            steps.append(Step(action, seconds=parse_duration(str(raw["advance"]))))
    config = document.get("config") or {}
    return Scenario(name or str(folder), folder, config, tuple(steps), document)


def write_scenario(
    folder: Path, description: str, steps: list[Step], config: Obj | None = None
) -> Scenario:
    """Write ``steps`` as a scenario folder (each apply step's objects to the step's one file,
    ``files[0]``); the scenario as read back."""
    folder.mkdir(parents=True, exist_ok=True)
    document: Obj = {"description": description, "steps": []}
    if config:
        document["config"] = config
    for step in steps:
        if step.action in ("apply", "reject"):
            (folder / step.files[0]).write_text(yaml.safe_dump_all(list(step.objects)))
            document["steps"].append({step.action: [step.files[0]]})
        elif step.action == "delete":
            document["steps"].append({"delete": [dict(t) for t in step.targets]})
        else:
            document["steps"].append({"advance": f"{step.seconds:g}s"})
    (folder / "scenario.yaml").write_text(yaml.safe_dump(document, sort_keys=False))
    return read_scenario(folder)


def under_parents(scenario: Scenario) -> Scenario:
    """``scenario`` with each top-level leaf queue (created by an apply step without a
    ``parentQueue``, and named as parent by no queue of the scenario) put under a new queue
    ``<name>-parent`` created just before it, with the leaf's own spec: a lone child of a parent
    with its own quota, limit, weight and priority gets what it would get alone, in KAI's
    division as in pykai's. Top-level queues with children stay as they are; a scenario with no
    top-level leaf is returned unchanged."""
    queues = [
        o
        for step in scenario.steps
        if step.action == "apply"
        for o in step.objects
        if o["kind"] == "Queue"
    ]
    parents = {(q.get("spec") or {}).get("parentQueue") for q in queues}
    leaves = {
        q["metadata"]["name"]
        for q in queues
        if not (q.get("spec") or {}).get("parentQueue") and q["metadata"]["name"] not in parents
    }
    if not leaves:
        return scenario

    def placed(obj: Obj) -> list[Obj]:
        if obj["kind"] != "Queue" or obj["metadata"]["name"] not in leaves:
            return [obj]
        name = f"{obj['metadata']['name']}{PARENT_SUFFIX}"
        spec = dict(obj.get("spec") or {})
        parent = {"apiVersion": obj["apiVersion"], "kind": "Queue", "metadata": {"name": name}}
        return [{**parent, "spec": spec}, {**obj, "spec": {**spec, "parentQueue": name}}]

    steps = [
        replace(step, objects=tuple(p for o in step.objects for p in placed(o)))
        if step.action == "apply"
        else step
        for step in scenario.steps
    ]
    return replace(scenario, steps=tuple(steps))
