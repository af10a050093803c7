"""``pykai crds``: the CustomResourceDefinitions of KAI's kinds, generated from pykai's models."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from pykai.cli.errors import reported


def crds(
    output_dir: Annotated[
        Path | None,
        typer.Option("--output-dir", help="Write one file per CRD here (default: print them)"),
    ] = None,
) -> None:
    """The CustomResourceDefinitions of KAI's kinds as pykai defines them (schema-compatible
    with KAI's): print them as one YAML stream, or write deploy/helm/pykai/crds/'s files."""
    from pykai.model.crds import CUSTOM_RESOURCES, render

    if output_dir is None:
        typer.echo("---\n".join(render(r) for r in CUSTOM_RESOURCES), nl=False)
        return
    with reported():
        output_dir.mkdir(parents=True, exist_ok=True)
        for resource in CUSTOM_RESOURCES:
            (output_dir / resource.file_name).write_text(render(resource))
            typer.echo(str(output_dir / resource.file_name))
