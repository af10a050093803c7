"""Reading manifests: files, directories and stdin; multi-document YAML or JSON; kind List."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import yaml

from pykai.model.meta import Obj

SUFFIXES = (".yaml", ".yml", ".json")


class ManifestError(ValueError):
    """A manifest that cannot be read, with the file and line."""


def read_manifests(sources: list[str]) -> list[Obj]:
    """Every object in the given files, directories (their *.yaml, *.yml and *.json files in
    name order) or ``-`` (stdin), in order."""
    objects: list[Obj] = []
    for source in sources:
        if source == "-":
            objects += parse_documents(sys.stdin.read(), "<stdin>")
            continue
        for path in _files(source):
            try:
                text = path.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as exc:
                raise ManifestError(f"{path}: cannot be read: {exc}") from exc
            objects += parse_documents(text, str(path), as_json=path.suffix == ".json")
    return objects


def _files(source: str) -> list[Path]:
    path = Path(source)
    if path.is_dir():
        return sorted(p for p in path.iterdir() if p.is_file() and p.suffix in SUFFIXES)
    if path.exists():
        return [path]
    raise ManifestError(f'the path "{source}" does not exist')


def parse_documents(text: str, origin: str, *, as_json: bool = False) -> list[Obj]:
    """The objects of a text: one JSON document, or multi-document YAML. Empty documents are
    skipped and ``kind: List`` expanded; errors name ``origin`` and the line."""
    if as_json:
        try:
            documents = [json.loads(text)] if text.strip() else []
        except json.JSONDecodeError as exc:
            raise ManifestError(f"{origin}:{exc.lineno}: {exc.msg}") from exc
    else:
        documents = _yaml_documents(text, origin)
    objects: list[Obj] = []
    for number, document in enumerate(documents, start=1):
        if document is None:
            continue
        if not isinstance(document, dict):
            raise ManifestError(f"{origin}: document {number} is not a mapping (an object)")
        if document.get("kind") == "List":
            items = document.get("items") or []
            if not isinstance(items, list) or not all(isinstance(i, dict) for i in items):
                raise ManifestError(f"{origin}: document {number}: List items must be objects")
            objects += items
        else:
            objects.append(document)
    return objects


def _yaml_documents(text: str, origin: str) -> list[object]:
    try:
        return list(yaml.safe_load_all(text))
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = f":{mark.line + 1}" if mark is not None else ""
        raise ManifestError(f"{origin}{line}: {exc.problem or exc.context or exc}") from exc
    except yaml.YAMLError as exc:
        raise ManifestError(f"{origin}: {exc}") from exc
