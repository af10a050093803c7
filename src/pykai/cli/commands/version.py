"""``pykai version``."""

from __future__ import annotations

import typer

from pykai import __version__


def version() -> None:
    """Print pykai's version."""
    typer.echo(f"pykai {__version__}")
