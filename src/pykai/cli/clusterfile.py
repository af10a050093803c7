"""Opening the cluster file a command names: for reading only (no engine, no file made) or
for writing (the embedded cluster with its engine, made with KAI installed if missing)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from pykai.cli.errors import reported
from pykai.cli.options import DEFAULT_CLUSTER

if TYPE_CHECKING:
    from pykai.embedded.cluster import EmbeddedCluster
    from pykai.embedded.reader import ClusterReader


def cluster_path(ctx: typer.Context, path: Path | None) -> Path:
    """The cluster named after the command, else before it or in PYKAI_CLUSTER, else the
    default."""
    return path or ctx.obj or DEFAULT_CLUSTER


@contextmanager
def reading(
    ctx: typer.Context, path: Path | None, *, snapshot: bool = True
) -> Iterator[ClusterReader]:
    """The existing cluster file, opened for reading only; with ``snapshot`` every read sees
    one moment of it (else the caller takes snapshots as it goes). Errors are reported as
    one line each."""
    from pykai.embedded.reader import open_readonly
    from pykai.embedded.sqlite import explain

    target = cluster_path(ctx, path)
    with reported():
        try:
            reader = open_readonly(target)
            try:
                with reader.store.snapshot() if snapshot else nullcontext():
                    yield reader
            finally:
                reader.close()
        except sqlite3.Error as exc:
            raise explain(target, exc) from None


@contextmanager
def writing(ctx: typer.Context, path: Path | None) -> Iterator[EmbeddedCluster]:
    """The cluster file with its engine (made, with KAI installed, if missing); errors are
    reported as one line each."""
    from pykai.embedded.cluster import EmbeddedCluster
    from pykai.embedded.sqlite import explain

    target = cluster_path(ctx, path)
    with reported():
        try:
            cluster = EmbeddedCluster.open(target)
            try:
                yield cluster
            finally:
                cluster.close()
        except sqlite3.Error as exc:
            raise explain(target, exc) from None
