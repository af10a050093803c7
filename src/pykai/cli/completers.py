"""Shell completion's answers: the kinds and the names in the cluster file that the shell asks
pykai for when the user presses Tab (``pykai completion SHELL`` prints the script that asks;
cli/commands/completion.py)."""

from __future__ import annotations

import os
from pathlib import Path

import typer


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
