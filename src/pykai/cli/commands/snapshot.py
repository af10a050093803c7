"""``pykai snapshot``: copy a live cluster's scheduling state into an embedded cluster file."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from pykai.cli.errors import refused, reported
from pykai.cli.options import ContextOption, KubeconfigOption


def snapshot(
    output: Annotated[
        Path, typer.Option("--output", "-o", help="The cluster file to make (must not exist)")
    ],
    kubeconfig: KubeconfigOption = None,
    context: ContextOption = None,
) -> None:
    """Copy a live cluster's scheduling state (nodes, pods, PodGroups, queues, priority
    classes, SchedulingShards, Kueue's objects, their namespaces and events) into a new
    cluster file, to explain, schedule and try what-ifs offline (`pykai --cluster FILE ...`).
    The live cluster is only read."""
    from pykai.cli.kube_reader import KubeReader
    from pykai.cli.snapshot import snapshot as copy_cluster
    from pykai.kube.api import connect

    with reported(), refused():
        counts = copy_cluster(KubeReader(connect(kubeconfig, context)), output)
    summary = ", ".join(f"{count} {kind}" for kind, count in counts.items())
    typer.echo(f"snapshot written to {output}: {summary or 'nothing'}")
