"""Options and arguments shared by several commands, and the root callback that keeps
``--cluster`` given before the command."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

import typer

from pykai.cli.completers import complete_kind, complete_name
from pykai.cli.errors import show_tracebacks

DEFAULT_CLUSTER = Path(".pykai/cluster.db")
_CLUSTER_HELP = "Cluster file (default ./.pykai/cluster.db)"

ClusterOption = Annotated[
    Path | None, typer.Option("--cluster", help=_CLUSTER_HELP, show_default=False)
]
NamespaceOption = Annotated[str, typer.Option("--namespace", "-n", help="Namespace")]
KindsArgument = Annotated[
    str,
    typer.Argument(
        help="Kinds (pods, po, queues, pg, ...; several: pods,podgroups) or KIND/NAME",
        autocompletion=complete_kind,
    ),
]
NamesArgument = Annotated[
    list[str] | None,
    typer.Argument(
        help="Names, or more KIND/NAME", show_default=False, autocompletion=complete_name
    ),
]
AllNamespacesOption = Annotated[
    bool, typer.Option("--all-namespaces", "-A", help="Every namespace")
]
SelectorOption = Annotated[
    str, typer.Option("--selector", "-l", help="Labels: key=value, key!=value, key, ...")
]
NameArgument = Annotated[
    str | None, typer.Argument(help="Name", show_default=False, autocompletion=complete_name)
]
FilenameOption = Annotated[
    list[str], typer.Option("--filename", "-f", help="File, directory or - (stdin)")
]
KubeconfigOption = Annotated[
    Path | None,
    typer.Option(
        "--kubeconfig",
        help="kubeconfig file (default: the files KUBECONFIG lists, merged; else the pod's "
        "service account; else ~/.kube/config)",
    ),
]
ContextOption = Annotated[
    str | None, typer.Option("--context", help="kubeconfig context (default: current-context)")
]
LogFormat = Literal["text", "json"]
LogLevel = Literal["debug", "info", "warning", "error"]


def root(
    ctx: typer.Context,
    cluster: Annotated[
        Path | None,
        typer.Option("--cluster", envvar="PYKAI_CLUSTER", help=_CLUSTER_HELP, show_default=False),
    ] = None,
    debug: Annotated[
        bool,
        typer.Option(
            "--debug", envvar="PYKAI_DEBUG", help="On an internal error, print its traceback"
        ),
    ] = False,
) -> None:
    """Keep the cluster path given before the command (or in PYKAI_CLUSTER) for it; with
    ``--debug``, an internal error shows its traceback."""
    ctx.obj = cluster
    show_tracebacks(debug)
