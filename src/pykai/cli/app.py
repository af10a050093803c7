"""The ``pykai`` command line: kubectl-like commands over the embedded cluster.

This module only assembles the commands (``commands/``, one module per family, the ``bench``,
``create`` and ``local-cluster`` sub-apps among them); each imports what it needs when it runs,
so that ``pykai version``, ``--help`` and the reading commands start quickly.
"""

from __future__ import annotations

import typer

from pykai.cli.commands import (
    apply,
    bench,
    clock,
    compare,
    completion,
    crds,
    create,
    dashboard,
    demo,
    describe,
    explain,
    get,
    local_cluster,
    serve,
    snapshot,
    version,
)
from pykai.cli.errors import internal_error
from pykai.cli.options import root

app = typer.Typer(
    help="pykai: the KAI scheduler in Python. kubectl-like commands over an embedded cluster.",
    no_args_is_help=True,
    add_completion=True,  # --install-completion, --show-completion; `completion SHELL` too
    rich_markup_mode=None,  # plain help, as kubectl prints it: rich would double its start-up
)
app.callback()(root)
for command in (
    apply.apply,
    apply.delete,
    get.get,
    describe.describe,
    explain.explain,
    snapshot.snapshot,
    clock.schedule,
    clock.advance,
    compare.compare,
    version.version,
    completion.completion,
    demo.demo,
    crds.crds,
    serve.run,
    serve.webhook,
    dashboard.dashboard,
):
    app.command()(command)
app.add_typer(create.app, name="create")
app.add_typer(bench.app, name="bench")
app.add_typer(local_cluster.app, name="local-cluster")


def main() -> None:
    """Console entry point of ``pykai`` and ``python -m pykai``: a command's own errors are
    reported by the command (cli/errors.py); anything else here, as a bug."""
    try:
        app(prog_name="pykai")
    except Exception as exc:  # the last resort: every other error is a PykaiError, reported
        internal_error(exc)
