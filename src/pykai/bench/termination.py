"""SIGTERM as Ctrl-C for a benchmark that starts control planes: inside ``terminated_as_exit``
a SIGTERM raises SystemExit on the main thread, so the ``finally`` of every run stops its
processes (as KeyboardInterrupt does); elsewhere, and off the main thread, nothing changes."""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def terminated_as_exit() -> Iterator[None]:
    """SIGTERM raises SystemExit inside the block (on the main thread), so the ``finally`` of
    every run stops its control plane, as Ctrl-C does (KeyboardInterrupt)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def exit_on_term(signum: int, frame: object) -> None:
        raise SystemExit(128 + signum)

    previous = signal.signal(signal.SIGTERM, exit_on_term)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
