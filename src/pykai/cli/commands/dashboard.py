"""``pykai dashboard``: the live, read-only dashboard of an embedded cluster file."""

from __future__ import annotations

import sqlite3
from typing import Annotated

import typer

from pykai.cli.clusterfile import cluster_path
from pykai.cli.commands.serve import host_port, serving
from pykai.cli.errors import reported
from pykai.cli.options import ClusterOption

DEFAULT_ADDRESS = "127.0.0.1:8090"
AddressOption = Annotated[
    str, typer.Option(help="HOST:PORT to serve on (loopback unless told: 0.0.0.0:PORT)")
]


def dashboard(
    ctx: typer.Context, cluster: ClusterOption = None, address: AddressOption = DEFAULT_ADDRESS
) -> None:
    """Serve a live, read-only dashboard of the cluster (queues, GPU map, pending jobs,
    evictions, allocation over time) until interrupted; other commands keep working on the
    cluster meanwhile."""
    from pykai.dashboard.server import serve_dashboard
    from pykai.embedded.dashboard import StorePages
    from pykai.embedded.store import explain

    target = cluster_path(ctx, cluster)
    with reported():
        where = host_port("--address", address)
        try:
            pages = StorePages(target)
        except sqlite3.Error as exc:
            raise explain(target, exc) from None
    try:
        with reported():
            server = serve_dashboard(where, pages.page)  # a taken port fails before any work
            stop = serving("info", "text")
            pages.page()  # the engine state is loaded now, not on the first visit
        port = server.server_address[1]
        typer.echo(f"dashboard of {target} on http://{where[0]}:{port}/ (Ctrl-C stops it)")
        stop.wait()
        server.shutdown()
    finally:
        pages.close()
