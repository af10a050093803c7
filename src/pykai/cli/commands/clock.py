"""``pykai schedule`` and ``pykai advance``: scheduling rounds and the virtual clock."""

from __future__ import annotations

from typing import Annotated

import typer

from pykai.cli.clusterfile import writing
from pykai.cli.errors import reported
from pykai.cli.options import ClusterOption


def schedule(
    ctx: typer.Context,
    cycles: Annotated[int, typer.Option(help="Rounds to run", min=1)] = 1,
    cluster: ClusterOption = None,
) -> None:
    """Run scheduling rounds explicitly (each: controllers, one scheduling cycle, binds)."""
    with writing(ctx, cluster) as store:
        store.schedule(cycles)
    typer.echo(f"ran {cycles} round(s)")


def advance(
    ctx: typer.Context,
    duration: Annotated[str, typer.Argument(help="e.g. 61s, 5m, 1h30m")],
    cluster: ClusterOption = None,
) -> None:
    """Move the virtual clock forward, then let the cluster settle."""
    from pykai.model.duration import parse_duration

    with reported():
        seconds = parse_duration(duration)
    with writing(ctx, cluster) as store:
        store.advance(seconds)
    typer.echo(f"clock advanced by {duration}")
