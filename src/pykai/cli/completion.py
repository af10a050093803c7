"""Shell completion: ``pykai completion bash|zsh|fish`` prints the script to source; the shell
then asks pykai itself for commands, options, kinds and the names in the cluster file."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Literal

import typer

Shell = Literal["bash", "zsh", "fish"]


def completion(
    shell: Annotated[Shell, typer.Argument(help="bash, zsh or fish")],
) -> None:
    """Print the shell completion script, e.g. `source <(pykai completion bash)`, or put it in
    ~/.bashrc, ~/.zshrc or ~/.config/fish/completions/pykai.fish."""
    from typer._completion_shared import get_completion_script  # what --show-completion prints

    typer.echo(
        get_completion_script(prog_name="pykai", complete_var="_PYKAI_COMPLETE", shell=shell)
    )


def complete_kind(incomplete: str) -> list[str]:
    """Kind names (plurals, as kubectl completes them) after any kinds already typed with
    commas."""
    from pykai.model.kinds import KIND_SPECS

    done, _, last = incomplete.rpartition(",")
    prefix = f"{done}," if done else ""
    return sorted(prefix + info.plural for info in KIND_SPECS if info.plural.startswith(last))


def complete_name(ctx: typer.Context, incomplete: str) -> list[str]:
    """Names of the objects of the kind typed before, from the cluster file (nothing when
    there is none or it cannot be read)."""
    from pykai.cli.kinds import resolve
    from pykai.embedded.reader import open_readonly

    kind = str(ctx.params.get("kind") or "").split(",")[0]
    namespace = str(ctx.params.get("namespace") or "default")
    try:
        info = resolve(kind)
        reader = open_readonly(_cluster(ctx))
    except (ValueError, OSError):
        return []
    try:
        names = [o["metadata"]["name"] for o in reader.list(info.kind, namespace)]
    finally:
        reader.close()
    return sorted(n for n in names if n.startswith(incomplete))


def _cluster(ctx: typer.Context) -> Path:
    """The cluster the command line names (completion runs no callbacks: read the params)."""
    from pykai.cli.options import DEFAULT_CLUSTER

    named = ctx.params.get("cluster") or ctx.find_root().params.get("cluster")
    return Path(named or os.environ.get("PYKAI_CLUSTER") or DEFAULT_CLUSTER)
