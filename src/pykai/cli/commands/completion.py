"""``pykai completion bash|zsh|fish``: print the script to source; the shell then asks pykai
itself for commands, options, kinds and the names in the cluster file (cli/completers.py)."""

from __future__ import annotations

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
