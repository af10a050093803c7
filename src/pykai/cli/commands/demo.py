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
    with reported():
        _play(step=step, path=cluster)
    if cluster is not None:
        typer.echo(
            f"\nThe story is in {cluster}: explore it with, e.g., "
            f"pykai --cluster {cluster} get pods -A, or describe podgroup NAME"
        )


def _play(*, step: bool, path: Path | None) -> None:
    """Play the story's chapters on a fresh cluster (in memory, or a new file at ``path`` that
    keeps it), printing what each shows."""
    from pykai.cli.demo import CHAPTERS
    from pykai.embedded.cluster import EmbeddedCluster

    cluster = EmbeddedCluster.open(path)
    for number, chapter in enumerate(CHAPTERS, start=1):
        if step and number > 1:
            typer.prompt("Press Enter for the next chapter", default="", show_default=False)
        typer.secho(f"\n== {number}. {chapter.title}", bold=True)
        chapter.act(cluster)
        typer.echo(chapter.show(cluster))
    cluster.close()
