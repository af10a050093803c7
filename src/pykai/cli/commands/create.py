"""``pykai create namespace NAME``: kubectl's imperative create, for what apply will not make
on its own."""

from __future__ import annotations

from typing import Annotated

import typer

from pykai.cli.clusterfile import writing
from pykai.cli.errors import fail
from pykai.cli.options import ClusterOption

app = typer.Typer(help="Create an object from the command line.", no_args_is_help=True)


@app.command("namespace")
def namespace(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="The namespace's name")],
    cluster: ClusterOption = None,
) -> None:
    """Create a namespace (also: create ns NAME)."""
    from pykai.embedded.cluster import new_namespace

    with writing(ctx, cluster) as store:
        if store.get("Namespace", name) is not None:
            fail(f'Error from server (AlreadyExists): namespaces "{name}" already exists')
        store.apply([new_namespace(name)])
    typer.echo(f"namespace/{name} created")


app.command("ns", hidden=True)(namespace)
