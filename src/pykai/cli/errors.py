"""Errors as the command line shows them.

- pykai's own errors (every :class:`~pykai.model.errors.PykaiError`: invalid manifests and
  objects, unknown kinds, unreadable files, a damaged cluster file, refused credentials, ...)
  and the operating system's about what the command was given (OSError: a folder that cannot
  be written, a port in use) are the user's to act on: one line on stderr per problem, as
  kubectl prints them, exit code :data:`USER_ERROR`, no traceback.
- Anything else is a bug in pykai, caught once at the top (:func:`internal_error`): one line
  naming it, its traceback only with ``--debug`` (or ``PYKAI_DEBUG=1``), exit code
  :data:`INTERNAL_ERROR`.
"""

from __future__ import annotations

import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from typing import NoReturn

import typer

from pykai.model.errors import PykaiError

USER_ERROR = 1
"""Exit code of an error the user can act on (kubectl's)."""
INTERNAL_ERROR = 70
"""Exit code of an unexpected error, a bug (EX_SOFTWARE of sysexits.h)."""
_debug = {"traceback": False}  # set by the root option --debug


def fail(message: str) -> NoReturn:
    """Print ``message`` to stderr, each line prefixed ``error:`` unless it is already a
    kubectl-style error (``Error from server (NotFound): ...``), and exit 1."""
    for line in message.splitlines() or ["failed"]:
        prefixed = line.startswith(("error:", "Error from server"))
        typer.echo(line if prefixed else f"error: {line}", err=True)
    raise typer.Exit(USER_ERROR)


def not_found(resource: str, name: str) -> str:
    """kubectl's message for a missing object, e.g. ``pods "x"``."""
    return f'Error from server (NotFound): {resource} "{name}" not found'


@contextmanager
def reported() -> Iterator[None]:
    """Turn the errors a user can act on into :func:`fail`: pykai's own, and the operating
    system's about a file or address the command was given (a folder that cannot be written,
    a port in use); anything else goes on to :func:`internal_error`."""
    try:
        yield
    except (PykaiError, OSError) as exc:
        fail(str(exc) or type(exc).__name__)


def show_tracebacks(debug: bool) -> None:
    """Whether :func:`internal_error` prints the traceback (the root option ``--debug``)."""
    _debug["traceback"] = debug


def internal_error(exc: Exception) -> NoReturn:
    """The last resort for an exception no command expected (a bug): one line naming it, the
    traceback with ``--debug``, and exit :data:`INTERNAL_ERROR`."""
    if _debug["traceback"]:
        traceback.print_exception(exc)
    typer.echo(f"error: internal error (a bug in pykai): {type(exc).__name__}: {exc}", err=True)
    if not _debug["traceback"]:
        typer.echo("error: run again with --debug for the traceback", err=True)
    raise SystemExit(INTERNAL_ERROR)


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
