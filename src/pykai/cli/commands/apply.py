"""``pykai apply`` and ``pykai delete``: writes from manifests (or by kind and name), after
which the cluster settles."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from pykai.cli.clusterfile import writing
from pykai.cli.errors import fail, not_found, reported
from pykai.cli.options import ClusterOption, FilenameOption, NameArgument, NamespaceOption

if TYPE_CHECKING:
    from pykai.model.kinds import KindSpec


def apply(
    ctx: typer.Context,
    filename: FilenameOption,
    max_cycles: Annotated[int, typer.Option(help="Scheduling rounds to settle", min=1)] = 100,
    cluster: ClusterOption = None,
) -> None:
    """Create or update objects from manifests, then let the cluster settle. Their namespaces
    must exist (pykai create namespace NAME), or be among the objects."""
    from pykai.cli.kinds import display_name
    from pykai.cli.manifests import read_manifests

    with reported():
        objects = read_manifests(filename)
    if not objects:
        fail(f"no objects passed to apply: {', '.join(filename)} holds no object")
    versions = {str(o.get("kind")): str(o.get("apiVersion", "")) for o in objects}
    with writing(ctx, cluster) as store:
        outcomes = store.apply(objects, max_cycles=max_cycles, create_namespaces=False)
    for outcome in outcomes:
        name = display_name(outcome.kind, versions.get(outcome.kind, ""))
        typer.echo(f"{name}/{outcome.name} {outcome.action}")


def delete(
    ctx: typer.Context,
    kind: Annotated[str | None, typer.Argument(help="Kind or KIND/NAME")] = None,
    name: NameArgument = None,
    filename: Annotated[
        list[str] | None, typer.Option("--filename", "-f", help="File, directory or -")
    ] = None,
    namespace: NamespaceOption = "default",
    cluster: ClusterOption = None,
) -> None:
    """Delete the objects named in manifests, or one object by kind and name."""
    from pykai.cli.kinds import resolve_target

    with reported():
        if filename:
            targets = _manifest_targets(filename, namespace)
        elif kind:
            info, target = resolve_target(kind, name)
            if target is None:
                fail("resource(s) were provided, but no name was specified")
            targets = [(info, target, namespace)]
        else:
            fail("give KIND NAME or -f FILE")
    missing = []
    with writing(ctx, cluster) as store:
        for info, target, target_namespace in targets:
            if store.delete(info.kind, target, target_namespace):
                typer.echo(f'{info.display} "{target}" deleted')
            else:
                missing.append(not_found(info.resource, target))
    if missing:
        fail("\n".join(missing))


def _manifest_targets(filename: list[str], namespace: str) -> list[tuple[KindSpec, str, str]]:
    """(kind, name, namespace) of each object in the manifests."""
    from pykai.cli.kinds import info_for
    from pykai.cli.manifests import ManifestError, read_manifests

    targets = []
    for obj in read_manifests(filename):
        meta = obj.get("metadata") or {}
        if not obj.get("kind") or not meta.get("name"):
            raise ManifestError("every object to delete needs a kind and a metadata.name")
        info = info_for(str(obj["kind"]), str(obj.get("apiVersion", "")))
        targets.append((info, str(meta["name"]), str(meta.get("namespace") or namespace)))
    return targets
