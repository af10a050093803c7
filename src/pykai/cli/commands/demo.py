"""``pykai demo``: the public guides' story, replayed."""

from __future__ import annotations

from typing import Annotated

import typer

from pykai.cli.errors import reported


def demo(
    step: Annotated[bool, typer.Option("--step", help="Wait for Enter between chapters")] = False,
) -> None:
    """Replay the public guides' story on a fresh in-memory cluster."""
    from pykai.cli.demo import run_demo

    with reported():
        run_demo(step=step).close()
