"""``-o`` output formats: tables (default, wide), json, yaml, name and custom-columns."""

from __future__ import annotations

import json
import re
from typing import Any

from pykai.cli.columns import NONE, Context, render_table
from pykai.cli.kinds import display_name
from pykai.cli.tables import table
from pykai.model.meta import Obj

FORMATS = "custom-columns,json,name,wide,yaml"
# A step of a JSONPath: ``.key`` (a dot inside a key written ``\.``) or ``[2]`` / ``[*]``.
_STEP = re.compile(r"\.((?:\\\.|[^.\[])+)|\[(\*|\d+)\]")


class OutputError(ValueError):
    """An output format pykai cannot print."""


def render(
    objects: list[Obj],
    output: str,
    ctx: Context,
    *,
    kind: str,
    single: bool = False,
    all_namespaces: bool = False,
    no_headers: bool = False,
) -> str:
    """``objects`` printed as ``-o output`` asks (a table when empty); ``single`` prints the one
    object itself rather than a List."""
    if output in ("", "wide"):
        return render_table(
            kind,
            objects,
            ctx,
            wide=output == "wide",
            namespace_column=all_namespaces,
            no_headers=no_headers,
        )
    if output == "json":
        return json.dumps(_document(objects, single), indent=4, sort_keys=True)
    if output == "yaml":
        import yaml

        return yaml.safe_dump(_document(objects, single), sort_keys=True).rstrip()
    if output == "name":
        return "\n".join(
            f"{display_name(o['kind'], o.get('apiVersion', ''))}/{o['metadata']['name']}"
            for o in objects
        )
    if output.startswith("custom-columns="):
        return custom_columns(output.removeprefix("custom-columns="), objects, no_headers)
    raise OutputError(
        f'unable to match a printer suitable for the output format "{output}", '
        f"allowed formats are: {FORMATS}"
    )


def _document(objects: list[Obj], single: bool) -> Obj:
    if single:
        return objects[0]
    return {
        "apiVersion": "v1",
        "items": objects,
        "kind": "List",
        "metadata": {"resourceVersion": ""},
    }


def jsonpath(obj: Any, path: str) -> list[Any]:
    """The values a simple kubectl JSONPath selects: ``.metadata.annotations.gpu-fraction``,
    ``.spec.containers[0].image``, ``.items[*].metadata.name``; ``{...}`` may wrap it, and a dot
    inside a key is written ``\\.`` (``.metadata.labels.ray\\.io/cluster``)."""
    text = path.strip()
    if text.startswith("{") and text.endswith("}"):
        text = text[1:-1]
    if not text.startswith((".", "[")):
        text = "." + text
    values = [obj]
    position = 0
    for match in _STEP.finditer(text):
        if match.start() != position:
            break
        position = match.end()
        key, index = match.group(1), match.group(2)
        if key is not None:
            key = key.replace("\\.", ".")
            values = [v[key] for v in values if isinstance(v, dict) and key in v]
        elif index == "*":
            values = [x for v in values if isinstance(v, list) for x in v]
        else:
            values = [v[int(index)] for v in values if isinstance(v, list) and int(index) < len(v)]
    if position != len(text):
        raise OutputError(f'unexpected path "{path}": write e.g. .metadata.name or .spec.items[0]')
    return [v for v in values if v is not None]


def custom_columns(spec: str, objects: list[Obj], no_headers: bool = False) -> str:
    """``-o custom-columns=NAME:.metadata.name,NODE:.spec.nodeName``: one column per
    ``HEADER:PATH``; ``<none>`` where a path selects nothing, several values joined by commas."""
    columns = []
    for part in spec.split(","):
        header, colon, path = part.partition(":")
        if not colon or not header or not path:
            raise OutputError(
                f"unexpected custom-columns spec: {part}, expected <header>:<json-path-expr>"
            )
        columns.append((header, path))
    rows = [
        [",".join(_go_format(v) for v in jsonpath(obj, path)) or NONE for _, path in columns]
        for obj in objects
    ]
    return table([header for header, _ in columns], rows, no_headers=no_headers)


def _go_format(value: Any) -> str:
    """A value as kubectl prints it with Go's ``%v``: ``map[a:1 b:2]``, ``[x y]``, ``true``."""
    if isinstance(value, dict):
        return "map[" + " ".join(f"{k}:{_go_format(v)}" for k, v in sorted(value.items())) + "]"
    if isinstance(value, list):
        return "[" + " ".join(_go_format(v) for v in value) + "]"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)
