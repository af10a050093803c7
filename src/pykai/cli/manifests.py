"""Reading manifests: files, directories and stdin; multi-document YAML; kind List."""

from __future__ import annotations

import sys
from pathlib import Path

import yaml

from pykai.model.meta import Obj


class ManifestError(ValueError):
    """A manifest that cannot be read, with the file and line."""


def read_manifests(sources: list[str]) -> list[Obj]:
    """Every object in the given files, directories (their *.yaml, *.yml, *.json files in name
    order) or ``-`` (stdin), in order."""
    objects: list[Obj] = []
    for source in sources:
        if source == "-":
            objects += parse_documents(sys.stdin.read(), "<stdin>")
            continue
        path = Path(source)
        if path.is_dir():
            files = sorted(p for p in path.iterdir() if p.suffix in (".yaml", ".yml", ".json"))
        elif path.exists():
            files = [path]
        else:
            raise ManifestError(f'the path "{source}" does not exist')
        for file in files:
            objects += parse_documents(file.read_text(), str(file))
    return objects


def parse_documents(text: str, origin: str) -> list[Obj]:
    """Objects of a multi-document YAML text; empty documents are skipped, Lists expanded."""
    try:
        documents = list(yaml.safe_load_all(text))
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark
        line = f":{mark.line + 1}" if mark is not None else ""
        raise ManifestError(f"{origin}{line}: {exc.problem or exc}") from exc
    except yaml.YAMLError as exc:
        raise ManifestError(f"{origin}: {exc}") from exc
    objects: list[Obj] = []
    for number, document in enumerate(documents, start=1):
        if document is None:
            continue
        if not isinstance(document, dict):
            raise ManifestError(f"{origin}: document {number} is not a mapping (an object)")
        if document.get("kind") == "List":
            objects += [item for item in document.get("items") or [] if isinstance(item, dict)]
        else:
            objects.append(document)
    return objects
