"""``pykai local-cluster up|down|status``: a real control plane on loopback for development."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Annotated

import typer

from pykai.cli.errors import fail, refused, reported

app = typer.Typer(
    help="A real Kubernetes v1.34 control plane on 127.0.0.1, with KWOK's nodes and the KubeRay "
    "operator (binaries from scripts/peers)."
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
    default_scheduler: Annotated[
        bool,
        typer.Option(
            "--default-scheduler",
            help="Also run kube-scheduler, for pods that name no other scheduler",
        ),
    ] = False,
    provisioning: Annotated[
        bool,
        typer.Option(
            "--provisioning",
            help="Also answer Kueue's ProvisioningRequests as a cluster autoscaler's "
            "check-capacity would (a stand-in: no real autoscaler is built here)",
        ),
    ] = False,
) -> None:
    """Start the control plane and create fake nodes (KWOK runs them); the server's version
    comes first, the kubeconfig path last."""
    from pykai.cli.manifests import read_manifests
    from pykai.cli.progress import steps
    from pykai.kube.api import AuthError, connect
    from pykai.kube.localcluster import LocalCluster, LocalClusterError
    from pykai.kube.nodes import create_ready_nodes, gpu_nodes
    from pykai.kube.peers import PeerMissing

    objects = gpu_nodes(gpu_nodes_count, gpus_per_node)
    if nodes is not None:
        with reported():
            objects += [o for o in read_manifests([str(nodes)]) if o.get("kind") == "Node"]
    cluster = LocalCluster(directory.resolve())
    with steps("local-cluster up") as step:
        try:
            with refused():
                kubeconfig = cluster.up(
                    webhook=webhook,
                    default_scheduler=default_scheduler,
                    provisioning=provisioning,
                    progress=step,
                )
        except (LocalClusterError, PeerMissing) as exc:
            fail(str(exc))
        try:
            api = connect(kubeconfig)
            if objects:
                step(f"creating {len(objects)} node(s)")
                create_ready_nodes(api, objects, time.time())
        except AuthError as exc:
            fail(exc.advice())
    typer.echo(f"Kubernetes {api.version().get('gitVersion', '?')} at {api.http.base_url}")
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
