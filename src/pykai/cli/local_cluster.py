"""``pykai local-cluster up|down|status``: a real control plane on loopback for development."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Annotated

import typer

from pykai.cli.errors import fail, refused, reported

app = typer.Typer(
    help="A real etcd + kube-apiserver on 127.0.0.1 (binaries from scripts/kube-binaries)."
)
DirOption = Annotated[Path, typer.Option("--dir", help="State, logs and kubeconfig")]
DEFAULT_DIR = Path(".pykai/local-cluster")


@app.command()
def up(
    directory: DirOption = DEFAULT_DIR,
    nodes: Annotated[Path | None, typer.Option("--nodes", help="YAML file of Node objects")] = None,
    gpu_nodes_count: Annotated[int, typer.Option("--gpu-nodes", help="Fake GPU nodes", min=0)] = 0,
    gpus_per_node: Annotated[int, typer.Option("--gpus-per-node", min=1)] = 8,
    webhook: Annotated[
        bool, typer.Option("--webhook", help="Also run pykai's admission webhook, registered")
    ] = False,
) -> None:
    """Start the control plane and create fake nodes; the kubeconfig path is the last line."""
    from pykai.cli.manifests import read_manifests
    from pykai.cli.progress import steps
    from pykai.kube.api import AuthError, connect
    from pykai.kube.localcluster import LocalCluster, LocalClusterError
    from pykai.kube.nodes import create_ready_nodes, gpu_nodes

    objects = gpu_nodes(gpu_nodes_count, gpus_per_node)
    if nodes is not None:
        with reported():
            objects += [o for o in read_manifests([str(nodes)]) if o.get("kind") == "Node"]
    cluster = LocalCluster(directory.resolve())
    with steps("local-cluster up") as step:
        try:
            with refused():
                kubeconfig = cluster.up(webhook=webhook, progress=step)
        except LocalClusterError as exc:
            fail(str(exc))
        if objects:
            step(f"creating {len(objects)} node(s)")
            try:
                create_ready_nodes(connect(kubeconfig), objects, time.time())
            except AuthError as exc:
                fail(exc.advice())
    if objects:
        typer.echo(f"{len(objects)} node(s) ready")
    typer.echo(str(kubeconfig))


@app.command()
def down(directory: DirOption = DEFAULT_DIR) -> None:
    """Stop every process of the control plane."""
    from pykai.kube.localcluster import LocalCluster

    LocalCluster(directory.resolve()).down()
    typer.echo("stopped")


@app.command()
def status(directory: DirOption = DEFAULT_DIR) -> None:
    """Whether it runs, its processes, ports and kubeconfig."""
    from pykai.kube.localcluster import LocalCluster

    typer.echo(json.dumps(LocalCluster(directory.resolve()).status(), indent=2))
