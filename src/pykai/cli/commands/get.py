"""``pykai get``: list objects or show some, kubectl-style, from the store alone."""

from __future__ import annotations

from typing import Annotated

import typer

from pykai.cli.clusterfile import reading
from pykai.cli.errors import fail, not_found, reported
from pykai.cli.options import ClusterOption, KindArgument, NameArgument, NamespaceOption


def get(
    ctx: typer.Context,
    kind: KindArgument,
    name: NameArgument = None,
    namespace: NamespaceOption = "default",
    all_namespaces: Annotated[
        bool, typer.Option("--all-namespaces", "-A", help="Every namespace")
    ] = False,
    output: Annotated[
        str,
        typer.Option("--output", "-o", help="wide|json|yaml|name|custom-columns=HEADER:PATH,..."),
    ] = "",
    selector: Annotated[
        str, typer.Option("--selector", "-l", help="Labels: key=value, key!=value, key, ...")
    ] = "",
    no_headers: Annotated[bool, typer.Option("--no-headers", help="Omit table headers")] = False,
    cluster: ClusterOption = None,
) -> None:
    """List objects (or show one), kubectl-style."""
    from pykai.cli.columns import Context
    from pykai.cli.kinds import resolve_target
    from pykai.cli.printers import render
    from pykai.cli.selectors import select

    with reported():
        info, name = resolve_target(kind, name)
    if name is not None and all_namespaces:
        fail("a resource cannot be retrieved by name across all namespaces")
    if name is not None and selector:
        fail("name cannot be provided when a selector is specified")
    scope = None if all_namespaces or not info.namespaced else namespace
    with reading(ctx, cluster) as reader:
        if name is None:
            objects = select(reader.list(info.kind, scope), selector)
        else:
            found = reader.get(info.kind, name, namespace)
            if found is None:
                fail(not_found(info.resource, name))
            objects = [found]
        if not objects and output in ("", "wide"):
            where = f" in {scope} namespace" if scope else ""
            typer.echo(f"No resources found{where}.", err=True)
            return
        text = render(
            objects,
            output,
            Context(reader),
            kind=info.kind,
            single=name is not None,
            all_namespaces=all_namespaces and info.namespaced,
            no_headers=no_headers,
        )
    if text:
        typer.echo(text)
