"""Reading manifests: files, directories and stdin; multi-document YAML or JSON; kind List.

Hostile input is refused before it costs anything: more than MAX_INPUT_BYTES per source, YAML
aliases beyond MAX_ALIASES per document or expanding beyond MAX_NODES (an alias bomb is refused
from its node graph, never expanded), nesting deeper than MAX_DEPTH, duplicate keys (which YAML
would silently resolve to the last one). Timestamps stay strings and numbers are read as
kubectl reads them (``1e30`` is a float; one past float64 stays a string).
"""

from __future__ import annotations

import json
import math
import re
import sys
from pathlib import Path

import yaml

from pykai.model.errors import PykaiError
from pykai.model.meta import Obj

SUFFIXES = (".yaml", ".yml", ".json")
MAX_INPUT_BYTES = 64 * 1024 * 1024
"""Per file or stdin: kubectl has no limit, but each object it sends must fit in the
apiserver's 3 MiB request limit; 64 MiB holds tens of thousands of objects."""
MAX_ALIASES = 100  # per document: real manifests use a handful of anchors
MAX_NODES = 1_000_000  # per document, aliases expanded: more than a 1.5 MiB object can hold
MAX_DEPTH = 100  # nesting: a pod template inside a RayJob is about 15 levels deep


class ManifestError(PykaiError, ValueError):
    """A manifest that cannot be read, with the file and line."""


def read_manifests(sources: list[str]) -> list[Obj]:
    """Every object in the given files, directories (their *.yaml, *.yml and *.json files in
    name order) or ``-`` (stdin), in order."""
    objects: list[Obj] = []
    for source in sources:
        if source == "-":
            text = sys.stdin.read(MAX_INPUT_BYTES + 1)
            _check_size(len(text.encode()), "<stdin>")
            objects += parse_documents(text, "<stdin>")
            continue
        for path in _files(source):
            try:
                _check_size(path.stat().st_size, str(path))
                text = path.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as exc:
                raise ManifestError(f"{path}: cannot be read: {exc}") from exc
            objects += parse_documents(text, str(path), as_json=path.suffix == ".json")
    return objects


def _check_size(size: int, origin: str) -> None:
    if size > MAX_INPUT_BYTES:
        raise ManifestError(
            f"{origin}: is larger than {MAX_INPUT_BYTES} bytes; split it into several files"
        )


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
    documents = _json_documents(text, origin) if as_json else _yaml_documents(text, origin)
    objects: list[Obj] = []
    for number, (line, document) in enumerate(documents, start=1):
        if document is None:
            continue
        where = f"{origin}:{line}: document {number}"
        if not isinstance(document, dict):
            raise ManifestError(f"{where} is not a mapping (an object)")
        if document.get("kind") == "List":
            items = document.get("items") or []
            if not isinstance(items, list) or not all(isinstance(i, dict) for i in items):
                raise ManifestError(f"{where}: List items must be objects")
            objects += items
        else:
            objects.append(document)
    return objects


def _json_documents(text: str, origin: str) -> list[tuple[int, object]]:
    def unique(pairs: list[tuple[str, object]]) -> dict[str, object]:
        keys = [k for k, _ in pairs]
        repeated = sorted({k for k in keys if keys.count(k) > 1})
        if repeated:
            raise ManifestError(f'{origin}: duplicate key "{repeated[0]}"')
        return dict(pairs)

    if not text.strip():
        return []
    try:
        return [(1, json.loads(text, object_pairs_hook=unique))]
    except json.JSONDecodeError as exc:
        raise ManifestError(f"{origin}:{exc.lineno}: {exc.msg}") from exc
    except RecursionError as exc:
        raise ManifestError(f"{origin}: nested too deeply") from exc


class _Loader(yaml.SafeLoader):
    """PyYAML's safe loader, counting aliases and depth while it composes, refusing duplicate
    keys, and keeping timestamps as strings."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self.aliases = 0
        self.depth = 0

    def compose_node(self, parent: yaml.Node | None, index: int) -> yaml.Node | None:
        mark = self.peek_event().start_mark  # type: ignore[no-untyped-call]
        if self.check_event(yaml.AliasEvent):
            self.aliases += 1
            if self.aliases > MAX_ALIASES:
                raise yaml.MarkedYAMLError(
                    problem=f"more than {MAX_ALIASES} aliases in one document", problem_mark=mark
                )
        self.depth += 1
        try:
            if self.depth > MAX_DEPTH:
                raise yaml.MarkedYAMLError(
                    problem=f"nested more than {MAX_DEPTH} levels deep", problem_mark=mark
                )
            return super().compose_node(parent, index)
        finally:
            self.depth -= 1

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[object, object]:
        seen: set[object] = set()
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key = self.construct_object(key_node, deep=True)
            if isinstance(key, str | int | float | bool) and key in seen:
                raise yaml.MarkedYAMLError(
                    problem=f'duplicate key "{key}"', problem_mark=key_node.start_mark
                )
            if isinstance(key, str | int | float | bool):
                seen.add(key)
        return super().construct_mapping(node, deep)


def _as_string(loader: _Loader, node: yaml.ScalarNode) -> str:
    return str(loader.construct_scalar(node))


def _as_int(loader: _Loader, node: yaml.ScalarNode) -> int | str:
    """An integer, or an error at its line (Python refuses to read one of over 4300 digits).
    YAML 1.1's base 60 (``10:30``) stays the string it is, as kubectl's reader (go-yaml v2,
    which has no sexagesimal numbers) leaves it."""
    if ":" in str(node.value):
        return str(node.value)
    try:
        return int(loader.construct_yaml_int(node))
    except ValueError as exc:
        raise yaml.MarkedYAMLError(problem=str(exc), problem_mark=node.start_mark) from exc


def _as_float(loader: _Loader, node: yaml.ScalarNode) -> float | str:
    """A float; one past float64 (``1e400``) as the string it is, as kubectl's YAML reader
    (go-yaml v2) leaves what strconv.ParseFloat refuses, for the schema to refuse."""
    if ":" in str(node.value):  # base 60, as _as_int
        return str(node.value)
    value = float(loader.construct_yaml_float(node))
    if math.isinf(value) and "inf" not in str(node.value).lower():
        return str(node.value)
    return value


_Loader.add_constructor("tag:yaml.org,2002:timestamp", _as_string)
_Loader.add_constructor("tag:yaml.org,2002:int", _as_int)
_Loader.add_constructor("tag:yaml.org,2002:float", _as_float)
# go-yaml v2's floats (resolve.go, yamlStyleFloat), tried after YAML 1.1's ints and floats:
# an exponent needs no dot and no sign (1e30, 2E-3), as kubectl reads them
_Loader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?(?:\.[0-9]+|[0-9][0-9_]*(?:\.[0-9_]*)?)(?:[eE][-+]?[0-9]+)?$"),
    list("-+0123456789."),
)


def _expanded_size(node: yaml.Node, sizes: dict[int, int], open_nodes: set[int]) -> int:
    """Nodes in ``node`` with every alias expanded, counted on the graph (shared nodes are
    counted once per use, computed once); a node inside itself is refused."""
    key = id(node)
    if key in sizes:
        return sizes[key]
    if key in open_nodes:
        raise yaml.MarkedYAMLError(
            problem="an alias refers to itself", problem_mark=node.start_mark
        )
    open_nodes.add(key)
    size = 1
    if isinstance(node, yaml.SequenceNode):
        size += sum(_expanded_size(item, sizes, open_nodes) for item in node.value)
    elif isinstance(node, yaml.MappingNode):
        for k, v in node.value:
            size += _expanded_size(k, sizes, open_nodes) + _expanded_size(v, sizes, open_nodes)
    open_nodes.discard(key)
    sizes[key] = min(size, MAX_NODES + 1)
    return sizes[key]


def _yaml_documents(text: str, origin: str) -> list[tuple[int, object]]:
    """(first line, document) of each YAML document."""
    loader = _Loader(text)
    documents: list[tuple[int, object]] = []
    try:
        while loader.check_node():
            loader.aliases = 0
            node = loader.get_node()
            if node is None:
                continue
            if _expanded_size(node, {}, set()) > MAX_NODES:
                raise yaml.MarkedYAMLError(
                    problem=f"expands to more than {MAX_NODES} values (an alias bomb?)",
                    problem_mark=node.start_mark,
                )
            documents.append((node.start_mark.line + 1, loader.construct_document(node)))
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = f":{mark.line + 1}" if mark is not None else ""
        raise ManifestError(f"{origin}{line}: {exc.problem or exc.context or exc}") from exc
    except yaml.YAMLError as exc:
        raise ManifestError(f"{origin}: {exc}") from exc
    except RecursionError as exc:
        raise ManifestError(f"{origin}: nested too deeply") from exc
    finally:
        loader.dispose()
    return documents
