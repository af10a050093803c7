"""Writes no cycle waits for: status patches, and the metadata patches a cycle asks to be made
``later`` (a PodGroup's last-start and stale-since annotations), one object's in order.

Contract of ``Writeback.patch(kind, namespace, name, sub, patch)``: it returns at once; the
merge patch goes out on ``pool``.

- At most one write per object and subresource is under way at a time. What is asked
  meanwhile waits behind it, composed into one merge patch where one patch does what the two
  do one after the other (``compose``); so a PodGroup that goes Pending then Running before
  its first write leaves is written once.
- A patch equal to the last one in line (under way, or waiting) is not made twice: a cycle
  that asks again before the answer reached the cache adds nothing.
- Each answer is handed to ``written(kind, obj)`` (the host's cache).
- Binds go first: while ``give_way()`` says binds are under way, a write waits, at most
  ``GIVE_WAY_SECONDS`` (what is asked meanwhile is composed into it). A burst of binds then
  meets no status patch at the apiserver, and a PodGroup that goes Pending then Running
  during the burst is written once.
- A write that fails for a reason time may mend (the apiserver's 5xx, 429, a lost
  connection) is tried again, ``ATTEMPTS`` times in all, ``RETRY_SECONDS`` apart and then
  longer; an object that is gone (404) or a patch the apiserver refuses is dropped. Both are
  logged. Nothing is lost for good: the status controllers derive status again (for what
  changed, and every object at each resync), and the engine keeps the start times it
  annotates in memory.
"""

from __future__ import annotations

import itertools
import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import Executor

from pykai.kube.api import API_ERRORS, ApiError, KubeApi
from pykai.model.kinds import BY_KIND
from pykai.model.meta import Obj

log = logging.getLogger("pykai.run")

ATTEMPTS = 3
GIVE_WAY_SECONDS = 2.0
RETRY_SECONDS = 0.5
_ABSENT = object()

Key = tuple[str, str, str, str]  # kind, namespace, name, subresource ("" or "status")


def compose(first: Obj, then: Obj) -> Obj | None:
    """One JSON merge patch (RFC 7386) that does what ``first`` and then ``then`` do, or None
    where none does: ``then`` merges into a field that ``first`` deleted or set to something
    other than an object (applied together, it would merge into the field's old value)."""
    out = dict(first)
    for key, value in then.items():
        before = first.get(key, _ABSENT)
        if not isinstance(value, dict) or before is _ABSENT:
            out[key] = value
        elif isinstance(before, dict):
            inner = compose(before, value)
            if inner is None:
                return None
            out[key] = inner
        else:
            return None
    return out


def _reached(cached: str, answer: str) -> bool:
    """Whether a cache at resourceVersion ``cached`` holds an answer at ``answer`` (versions
    are etcd revisions as decimal strings; anything else only by equality)."""
    if cached == answer or not answer:
        return True
    return cached.isdigit() and answer.isdigit() and int(cached) >= int(answer)


def _transient(exc: Exception) -> bool:
    """True for a failure that a later try may not meet (not a refusal of the patch)."""
    if isinstance(exc, ApiError):
        return exc.status >= 500 or exc.status == 429
    return True  # a transport error: the connection, a timeout


class Writeback:
    """Background merge patches, coalesced per object (see the module's contract)."""

    def __init__(
        self,
        api: KubeApi,
        pool: Executor,
        written: Callable[[str, Obj], None],
        give_way: Callable[[], bool] = lambda: False,
    ) -> None:
        """``written(kind, answer)`` is told of each patch the apiserver took."""
        self.api, self.pool, self.written, self.give_way = api, pool, written, give_way
        self._lock = threading.Lock()
        self._waiting: dict[Key, list[Obj]] = {}  # not sent yet, in order
        self._sending: dict[Key, Obj] = {}  # under way
        self._active: set[Key] = set()  # a task is queued or running for these
        # the serial of the last patch asked for an object while any is queued (serials grow
        # across all objects: a state of an object's patches is never given one twice)
        self._serials: dict[Key, int] = {}
        self._counter = itertools.count(1)
        # taken by the apiserver, their answers not in the reader's cache yet:
        # (kind, namespace, name) -> [(the answer's resourceVersion, the patch, its serial)]
        self._answered: dict[tuple[str, str, str], list[tuple[str, Obj, int]]] = {}

    def patch(self, kind: str, namespace: str, name: str, sub: str, patch: Obj) -> None:
        """Queue ``patch`` for the object (``sub``: "" or "status")."""
        key = (kind, namespace, name, sub)
        with self._lock:
            waiting = self._waiting.get(key)
            last = waiting[-1] if waiting else self._sending.get(key)
            if last == patch:
                return
            self._serials[key] = next(self._counter)
            if waiting:
                composed = compose(waiting[-1], patch)
                if composed is None:
                    waiting.append(patch)
                else:
                    waiting[-1] = composed
            else:
                self._waiting[key] = [patch]
            if key in self._active:
                return
            self._active.add(key)
        self.pool.submit(self._drain, key)

    def writes(self, kind: str) -> bool:
        """Whether a patch of an object of ``kind`` is queued, under way, or answered and not
        yet ``cached``."""
        with self._lock:
            return any(key[0] == kind for key in self._active) or any(
                key[0] == kind for key in self._answered
            )

    def queued(self, kind: str, namespace: str, name: str) -> tuple[int, list[Obj]]:
        """The patches of an object not in the reader's cache yet, in the order they went or
        go out: answered, under way, queued (itself, then its status); and the serial of the
        last of them asked (0, [] if none)."""
        with self._lock:
            answered = self._answered.get((kind, namespace, name), [])
            patches: list[Obj] = [patch for _, patch, _ in answered]
            serial = max((asked for _, _, asked in answered), default=0)
            for sub in ("", "status"):
                key = (kind, namespace, name, sub)
                sending = self._sending.get(key)
                patches += ([sending] if sending is not None else []) + self._waiting.get(key, [])
                serial = max(serial, self._serials.get(key, 0))
            return serial, patches

    def answered(self, kind: str) -> list[tuple[str, str]]:
        """(namespace, name) of each object of ``kind`` with answers not yet ``cached``."""
        with self._lock:
            return [(key[1], key[2]) for key in self._answered if key[0] == kind]

    def cached(self, kind: str, namespace: str, name: str, version: str | None) -> None:
        """The reader's cache now holds the object at ``version`` (None: it is gone): forget
        the answered patches it holds."""
        key = (kind, namespace, name)
        with self._lock:
            answered = self._answered.get(key)
            if not answered:
                return
            kept = [] if version is None else [a for a in answered if not _reached(version, a[0])]
            if kept:
                self._answered[key] = kept
            else:
                del self._answered[key]

    def pending(self) -> int:
        """Objects with a write queued or under way."""
        with self._lock:
            return len(self._active)

    def _drain(self, key: Key) -> None:
        """Send the object's patches in order until none waits (after the binds under way,
        at most ``GIVE_WAY_SECONDS``)."""
        deadline = time.monotonic() + GIVE_WAY_SECONDS
        while self.give_way() and time.monotonic() < deadline:
            time.sleep(0.05)
        while True:
            with self._lock:
                self._sending.pop(key, None)
                waiting = self._waiting.get(key)
                if not waiting:
                    self._waiting.pop(key, None)
                    self._active.discard(key)
                    self._serials.pop(key, None)
                    return
                patch = waiting.pop(0)
                self._sending[key] = patch
                serial = self._serials.get(key, 0)
            self._send(key, patch, serial)

    def _send(self, key: Key, patch: Obj, serial: int = 0) -> None:
        kind, namespace, name, sub = key
        for attempt in range(1, ATTEMPTS + 1):
            try:
                answer = self.api.patch(BY_KIND[kind], name, patch, namespace, sub)
            except API_ERRORS as exc:
                if attempt < ATTEMPTS and _transient(exc):
                    time.sleep(RETRY_SECONDS * attempt)
                    continue
                what = f"{sub} of " if sub else ""
                log.warning("%s%s %s/%s not written: %s", what, kind, namespace, name, exc)
                return
            except Exception:  # a bug: logged, the next patch of the object still goes out
                log.exception("patch of %s %s/%s failed", kind, namespace, name)
                return
            version = str(answer.get("metadata", {}).get("resourceVersion") or "")
            with self._lock:
                answered = (version, patch, serial)
                self._answered.setdefault((kind, namespace, name), []).append(answered)
            self.written(kind, answer)
            return
