"""``pykai get``: list objects or show some, kubectl-style, from the store alone."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated

import typer

from pykai.cli.clusterfile import reading
from pykai.cli.errors import fail, not_found, reported
from pykai.cli.options import (
    AllNamespacesOption,
    ClusterOption,
    KindsArgument,
    NamesArgument,
    NamespaceOption,
    SelectorOption,
)

if TYPE_CHECKING:
    from pykai.embedded.reader import ClusterReader
    from pykai.model.kinds import KindSpec
    from pykai.model.meta import Obj

Found = list[tuple["KindSpec", list["Obj"]]]


def get(
    ctx: typer.Context,
    kind: KindsArgument,
    names: NamesArgument = None,
    namespace: NamespaceOption = "default",
    all_namespaces: AllNamespacesOption = False,
    output: Annotated[
        str,
        typer.Option(
            "--output",
            "-o",
            help="wide|json|yaml|name|jsonpath=TEMPLATE|custom-columns=HEADER:PATH,...",
        ),
    ] = "",
    selector: SelectorOption = "",
    sort_by: Annotated[
        str, typer.Option("--sort-by", help="JSONPath to sort by, e.g. .metadata.name")
    ] = "",
    show_labels: Annotated[bool, typer.Option("--show-labels", help="Add a LABELS column")] = False,
    no_headers: Annotated[bool, typer.Option("--no-headers", help="Omit table headers")] = False,
    watch: Annotated[
        bool, typer.Option("--watch", "-w", help="After listing, show changes until Ctrl-C")
    ] = False,
    cluster: ClusterOption = None,
) -> None:
    """List objects (or show some), kubectl-style: `get pods`, `get pod a b`,
    `get pods,podgroups`, `get pod/a queue/q`."""
    from pykai.cli.jsonpath import select
    from pykai.cli.kinds import resolve_targets
    from pykai.cli.printers import check_output

    with reported():
        targets = resolve_targets([kind, *(names or [])])
        check_output(output)
        if sort_by:
            select({}, sort_by)
    named = any(wanted for _, wanted in targets)
    if named and all_namespaces:
        fail("a resource cannot be retrieved by name across all namespaces")
    if named and selector:
        fail("name cannot be provided when a selector is specified")
    if watch and len(targets) > 1:
        fail("you may only specify a single resource type")
    with reading(ctx, cluster, snapshot=False) as reader:
        with reader.store.snapshot():
            found, missing = _found(reader, targets, namespace, all_namespaces, selector)
            found = [(info, _sorted(objects, sort_by)) for info, objects in found]
            text = _text(reader, found, output, named, all_namespaces, no_headers, show_labels)
        if text:
            typer.echo(text, nl=not output.startswith("jsonpath="))  # kubectl adds none there
        elif not missing and output in ("", "wide"):
            scoped = not all_namespaces and any(info.namespaced for info, _ in targets)
            typer.echo(
                f"No resources found{f' in {namespace} namespace' if scoped else ''}.", err=True
            )
        if missing:
            fail("\n".join(missing))
        if watch:
            info, objects = found[0]
            scope = None if all_namespaces or not info.namespaced else namespace

            def show(changed: list[Obj]) -> None:
                table = output in ("", "wide")
                for batch in [changed] if table else [[obj] for obj in changed]:
                    shown = [(info, batch)]
                    text = _text(reader, shown, output, True, all_namespaces, True, show_labels)
                    typer.echo(text)

            _watch(reader, info, scope, targets[0][1], selector, objects, show)


def _found(
    reader: ClusterReader,
    targets: list[tuple[KindSpec, list[str]]],
    namespace: str,
    all_namespaces: bool,
    selector: str,
) -> tuple[Found, list[str]]:
    """The objects asked for, by kind, and a NotFound line for each name that is missing."""
    from pykai.cli.selectors import select

    found: Found = []
    missing: list[str] = []
    for info, wanted in targets:
        if not wanted:
            scope = None if all_namespaces or not info.namespaced else namespace
            found.append((info, select(reader.list(info.kind, scope), selector)))
            continue
        objects = []
        for name in wanted:
            obj = reader.get(info.kind, name, namespace)
            if obj is None:
                missing.append(not_found(info.resource, name))
            else:
                objects.append(obj)
        found.append((info, objects))
    return found, missing


def _sorted(objects: list[Obj], path: str) -> list[Obj]:
    """``objects`` in the order of the first value ``path`` selects in each, as kubectl
    sorts: numbers and quantities ("500m", "2Gi") by amount, then text, then anything else
    as JSON; objects without one first."""
    if not path:
        return objects
    import json

    from pykai.cli.jsonpath import select
    from pykai.model.quantity import parse_quantity

    def key(obj: Obj) -> tuple[int, float, str]:
        values = select(obj, path)
        if not values:
            return (0, 0.0, "")
        value = values[0]
        if isinstance(value, int | float) and not isinstance(value, bool):
            return (1, float(value), "")
        if isinstance(value, str):
            try:
                return (1, float(parse_quantity(value)), "")
            except ValueError:
                return (2, 0.0, value)
        return (3, 0.0, json.dumps(value, sort_keys=True))

    return sorted(objects, key=key)


def _text(
    reader: ClusterReader,
    found: Found,
    output: str,
    named: bool,
    all_namespaces: bool,
    no_headers: bool,
    show_labels: bool,
) -> str:
    """The objects as ``-o`` asks: a table per kind (names as KIND/NAME when there are
    several kinds), else one document of them all."""
    from pykai.cli.cells import Context
    from pykai.cli.printers import render

    context = Context(reader)
    if output in ("", "wide"):
        several = len(found) > 1
        tables = [
            render(
                objects,
                output,
                context,
                kind=info.kind,
                all_namespaces=all_namespaces and info.namespaced,
                no_headers=no_headers,
                show_labels=show_labels,
                name_prefix=info.display if several else "",
            )
            for info, objects in found
            if objects
        ]
        return "\n\n".join(tables)
    everything = [obj for _, objects in found for obj in objects]
    single = named and len(found) == 1 and len(everything) == 1 and len(found[0][1]) == 1
    kind = found[0][0].kind if found else ""
    return render(everything, output, context, kind=kind, single=single, no_headers=no_headers)


def _watch(
    reader: ClusterReader,
    info: KindSpec,
    scope: str | None,
    names: list[str],
    selector: str,
    seen: list[Obj],
    show: Callable[[list[Obj]], None],
) -> None:
    """Show changes until Ctrl-C (or SIGTERM), then exit quietly."""
    import signal

    from pykai.cli.selectors import select
    from pykai.cli.watch import follow
    from pykai.embedded.store import namespace_of

    def wanted(obj: Obj) -> bool:
        if scope is not None and namespace_of(obj) != scope:
            return False
        if names and obj["metadata"]["name"] not in names:
            return False
        return bool(select([obj], selector))

    stop = threading.Event()
    # Ctrl-C and SIGTERM both end it, also where SIGINT came in ignored (a shell's background
    # job, and whatever it starts, inherits SIGINT ignored)
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stop.set())
    with contextlib.suppress(KeyboardInterrupt):
        follow(reader.store, info.kind, wanted, seen, show, stop)
