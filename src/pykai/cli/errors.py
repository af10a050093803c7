"""Errors as kubectl shows them: one line on stderr (one per problem), exit code 1, no traceback."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from typing import NoReturn

import typer


def fail(message: str) -> NoReturn:
    """Print ``message`` to stderr, each line prefixed ``error:`` unless it is already a
    kubectl-style error (``Error from server (NotFound): ...``), and exit 1."""
    for line in message.splitlines() or ["failed"]:
        prefixed = line.startswith(("error:", "Error from server"))
        typer.echo(line if prefixed else f"error: {line}", err=True)
    raise typer.Exit(1)


def not_found(resource: str, name: str) -> str:
    """kubectl's message for a missing object, e.g. ``pods "x"``."""
    return f'Error from server (NotFound): {resource} "{name}" not found'


@contextmanager
def reported() -> Iterator[None]:
    """Turn errors a user can act on (invalid manifests and objects, unknown kinds, unreadable
    files, a damaged cluster file) into :func:`fail`."""
    try:
        yield
    except (ValueError, OSError, sqlite3.Error) as exc:
        fail(str(exc) or type(exc).__name__)


@contextmanager
def refused() -> Iterator[None]:
    """The apiserver refused the credentials (401/403) where the command cannot go on: one
    line saying what was refused, with which credentials, and what to check."""
    from pykai.kube.api import AuthError, RefusedAtStart

    try:
        yield
    except RefusedAtStart as exc:
        fail(str(exc))
    except AuthError as exc:
        fail(exc.advice())
