"""``pykai demo``: the public guides' story, replayed."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from pykai.cli.errors import fail, reported


def demo(
    step: Annotated[bool, typer.Option("--step", help="Wait for Enter between chapters")] = False,
    cluster: Annotated[
        Path | None,
        typer.Option(
            "--cluster",
            help="A new cluster file to keep the story in, to explore afterwards "
            "(default: in memory)",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Replay the public guides' story on a fresh cluster."""
    if cluster is not None and cluster.exists():
        fail(f'"{cluster}" exists: the story needs a fresh cluster; name a new file')
    from pykai.cli.demo import run_demo

    with reported():
        run_demo(step=step, path=cluster).close()
    if cluster is not None:
        typer.echo(
            f"\nThe story is in {cluster}: explore it with, e.g., "
            f"pykai --cluster {cluster} get pods -A, or describe podgroup NAME"
        )
