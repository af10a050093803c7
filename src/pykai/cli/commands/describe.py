"""``pykai describe``: objects in detail, from the store alone."""

from __future__ import annotations

from typing import TYPE_CHECKING

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
    from pykai.model.meta import Obj


def describe(
    ctx: typer.Context,
    kind: KindsArgument,
    names: NamesArgument = None,
    namespace: NamespaceOption = "default",
    all_namespaces: AllNamespacesOption = False,
    selector: SelectorOption = "",
    cluster: ClusterOption = None,
) -> None:
    """Describe objects: state, why they are pending, related objects and events.

    As kubectl: `describe pod a b`, `describe pods,podgroups`, `describe pod/a queue/q`.
    Without a name, every object of the kinds; a name that matches none is taken as a prefix.
    """
    from pykai.cli.describe import describe as describe_object
    from pykai.cli.kinds import resolve_targets

    with reported():
        targets = resolve_targets([kind, *(names or [])])
    if any(wanted for _, wanted in targets) and selector:
        fail("name cannot be provided when a selector is specified")
    with reading(ctx, cluster) as reader:
        objects: list[Obj] = []
        missing: list[str] = []
        for info, wanted in targets:
            scope = None if all_namespaces or not info.namespaced else namespace
            if not wanted:
                objects += _selected(reader, info.kind, scope, selector)
            for name in wanted:
                matched = _named(reader, info.kind, name, scope, namespace)
                objects += matched
                if not matched:
                    missing.append(not_found(info.resource, name))
        if objects:
            typer.echo("\n\n\n".join(describe_object(reader, obj) for obj in objects))
        elif not missing:
            typer.echo(
                f"No resources found{'' if scope is None else f' in {namespace} namespace'}.",
                err=True,
            )
        if missing:
            fail("\n".join(missing))


def _selected(reader: ClusterReader, kind: str, scope: str | None, selector: str) -> list[Obj]:
    """Every object of ``kind`` in ``scope`` (None: every namespace) that ``selector`` picks."""
    from pykai.cli.selectors import select

    return select(reader.list(kind, scope), selector)


def _named(
    reader: ClusterReader, kind: str, name: str, scope: str | None, namespace: str
) -> list[Obj]:
    """The objects called ``name`` in ``scope`` (None: every namespace, or a cluster-scoped
    kind) or, as kubectl describe does when there are none, those whose name starts with it."""
    found = reader.get(kind, name, scope or namespace)
    if found is not None and (scope is not None or not found["metadata"].get("namespace")):
        return [found]
    candidates = reader.list(kind, scope)
    exact = [o for o in candidates if o["metadata"]["name"] == name]
    return exact or [o for o in candidates if o["metadata"]["name"].startswith(name)]
