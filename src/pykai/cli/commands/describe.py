"""``pykai describe``: objects in detail, from the store alone."""

from __future__ import annotations

import typer

from pykai.cli.clusterfile import reading
from pykai.cli.errors import fail, not_found, reported
from pykai.cli.options import ClusterOption, KindArgument, NameArgument, NamespaceOption


def describe(
    ctx: typer.Context,
    kind: KindArgument,
    name: NameArgument = None,
    namespace: NamespaceOption = "default",
    cluster: ClusterOption = None,
) -> None:
    """Describe objects: state, why they are pending, related objects and events.

    Without a name, every object of the kind; a name that matches none is taken as a prefix.
    """
    from pykai.cli.describe import describe as describe_object
    from pykai.cli.kinds import resolve_target

    with reported():
        info, name = resolve_target(kind, name)
    with reading(ctx, cluster) as reader:
        found = reader.get(info.kind, name, namespace) if name is not None else None
        objects = [found] if found else reader.list(info.kind, namespace)
        if name is not None and found is None:
            objects = [o for o in objects if o["metadata"]["name"].startswith(name)]
            if not objects:
                fail(not_found(info.resource, name))
        typer.echo("\n\n\n".join(describe_object(reader, obj) for obj in objects))
