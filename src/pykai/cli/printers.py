"""``-o`` output formats: tables (default, wide), json, yaml, name and custom-columns."""

from __future__ import annotations

import json
from typing import Any

from pykai.cli.cells import NONE, Context
from pykai.cli.columns import render_table
from pykai.cli.jsonpath import select, template
from pykai.cli.kinds import display_name
from pykai.cli.tables import table
from pykai.model.errors import PykaiError
from pykai.model.meta import Obj

FORMATS = "custom-columns,json,jsonpath,name,wide,yaml"


class OutputError(PykaiError, ValueError):
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
    show_labels: bool = False,
    name_prefix: str = "",
) -> str:
    """``objects`` printed as ``-o output`` asks (a table when empty); ``single`` prints the one
    object itself rather than a List. Tables may end with a LABELS column and show names as
    ``PREFIX/NAME`` (as kubectl does when one get shows several kinds)."""
    if output in ("", "wide"):
        return render_table(
            kind,
            objects,
            ctx,
            wide=output == "wide",
            namespace_column=all_namespaces,
            no_headers=no_headers,
            show_labels=show_labels,
            name_prefix=name_prefix,
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
    if output.startswith("jsonpath="):
        return template(_document(objects, single), output.removeprefix("jsonpath="))
    if output.startswith("custom-columns="):
        return custom_columns(output.removeprefix("custom-columns="), objects, no_headers)
    raise _unknown(output)


def check_output(output: str) -> None:
    """Refuse an ``-o`` format pykai cannot print (before any work is done)."""
    if output in ("", "wide", "json", "yaml", "name"):
        return
    if output.startswith("jsonpath="):
        template({}, output.removeprefix("jsonpath="))
    elif output.startswith("custom-columns="):
        custom_columns(output.removeprefix("custom-columns="), [])
    else:
        raise _unknown(output)


def _unknown(output: str) -> OutputError:
    return OutputError(
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
        select({}, path)  # a path that cannot parse fails before any object is read
        columns.append((header, path))
    rows = [
        [",".join(_go_format(v) for v in select(obj, path)) or NONE for _, path in columns]
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
