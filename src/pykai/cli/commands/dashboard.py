"""``pykai dashboard``: the live, read-only dashboard of an embedded cluster file; and the same
pages for ``pykai run --dashboard-address``."""

from __future__ import annotations

import sqlite3
from typing import TYPE_CHECKING, Annotated, NamedTuple

import typer

from pykai.cli.clusterfile import cluster_path
from pykai.cli.commands.serve import host_port, serving
from pykai.cli.errors import reported
from pykai.cli.options import ClusterOption

if TYPE_CHECKING:
    from http.server import ThreadingHTTPServer

    from pykai.dashboard.live import CyclePages
    from pykai.engine.settings import SchedulerConfig

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
    from pykai.embedded.sqlite import explain

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


class LiveDashboard(NamedTuple):
    """The dashboard of ``pykai run``: its pages (the run loop observes each cycle with
    ``pages.observe``) and the server to shut down."""

    pages: CyclePages
    server: ThreadingHTTPServer


def serve_cycle_pages(address: tuple[str, int], config: SchedulerConfig) -> LiveDashboard:
    """Serve the pages of a run loop's cycles on ``address``."""
    from pykai.dashboard.live import CyclePages
    from pykai.dashboard.server import serve_dashboard

    pages = CyclePages(config)
    return LiveDashboard(pages, serve_dashboard(address, pages.page))
