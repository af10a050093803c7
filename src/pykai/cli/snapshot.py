"""A live cluster's scheduling state copied into an embedded cluster file, so that ``explain``,
``get``, ``describe``, ``schedule`` and ``advance`` can be tried offline on it: what-ifs that
never touch the live cluster (which is only read).

Objects keep their uid, creationTimestamp, spec and status (so job and queue order, bound pods
and reasons are as they were); the apiserver's bookkeeping (resourceVersion, managedFields) is
dropped. The file is made whole or not at all (the store builds it aside, then links it into
place) and an existing file is never replaced. Where the pending jobs stand is recorded in it
as a round would (``get podgroups`` and ``describe queue`` read it)."""

from __future__ import annotations

from pathlib import Path

from pykai.cli.related import Reader
from pykai.model.meta import Obj

# what scheduling reads, with the namespaces that hold it and the events that explain it
SNAPSHOT_KINDS = (
    "Namespace",
    "PriorityClass",
    "Queue",
    "SchedulingShard",
    "Node",
    "PodGroup",
    "Pod",
    "BindRequest",
    "ResourceFlavor",
    "Cohort",
    "ClusterQueue",
    "LocalQueue",
    "WorkloadPriorityClass",
    "AdmissionCheck",
    "Workload",
    "Event",
)
_BOOKKEEPING = ("resourceVersion", "managedFields", "selfLink", "generation")


def copied(obj: Obj) -> Obj:
    """The object as the embedded store takes it: the apiserver's bookkeeping dropped."""
    meta = {k: v for k, v in (obj.get("metadata") or {}).items() if k not in _BOOKKEEPING}
    return {**obj, "metadata": meta}


def snapshot(reader: Reader, path: Path) -> dict[str, int]:
    """Copy the reader's scheduling state into a new cluster file at ``path``; how many
    objects of each kind were copied. FileExistsError if ``path`` exists."""
    from pykai.embedded.cluster import EmbeddedCluster
    from pykai.embedded.sqlite import Store
    from pykai.embedded.store import ObjectStore

    if path.exists():
        raise FileExistsError(f'"{path}" exists: a snapshot never replaces a file; name another')
    objects = {kind: [copied(obj) for obj in reader.list(kind)] for kind in SNAPSHOT_KINDS}

    def fill(store: ObjectStore) -> None:
        for kind in SNAPSHOT_KINDS:
            for obj in objects[kind]:
                store.create(obj)
        EmbeddedCluster(store).record_positions()  # as a round would

    Store(path, seed=fill).close()
    return {kind: len(found) for kind, found in objects.items() if found}
