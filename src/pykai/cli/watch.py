"""``get --watch``: after the first listing, the objects of one kind as they change.

The embedded cluster has no watch API, but every committed write bumps the store's generation
and logs the objects it wrote, so the watcher polls the generation (one small read) and
re-reads just the objects written since. A deleted object is shown once more as last seen,
as kubectl shows it; a watcher left behind by more writes than the change log keeps shows
every object again.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from pykai.embedded.store import ObjectStore, namespace_of
from pykai.model.meta import Obj

POLL_SECONDS = 0.25
Key = tuple[str, str]  # namespace, name


def follow(
    store: ObjectStore,
    kind: str,
    wanted: Callable[[Obj], bool],
    seen: list[Obj],
    show: Callable[[list[Obj]], None],
    stop: threading.Event,
) -> None:
    """Until ``stop`` is set, ``show`` the objects of ``kind`` that ``wanted`` accepts each
    time writes change them, starting after the generation the store saw last; ``seen`` are
    the objects already shown."""
    last: dict[Key, Obj] = {_key(o): o for o in seen}
    generation = store.generation
    while not stop.wait(POLL_SECONDS):
        with store.snapshot():
            if store.generation == generation:
                continue
            changed = store.changes_since(generation)
            if changed is None:
                now = [o for o in store.list(kind) if wanted(o)]
                keys = {_key(o) for o in now} | set(last)
            else:
                keys = {(ns, name) for k, ns, name in changed if k == kind}
                now = [o for o in (store.get(kind, n, ns) for ns, n in sorted(keys)) if o]
                now = [o for o in now if wanted(o)]
            generation = store.generation
        current = {_key(o): o for o in now}
        gone = [last.pop(k) for k in sorted(keys - set(current)) if k in last]
        last.update(current)
        if now or gone:
            show(sorted([*now, *gone], key=_key))


def _key(obj: Obj) -> Key:
    return namespace_of(obj), str(obj["metadata"]["name"])
