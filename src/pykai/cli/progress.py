"""Progress on stderr for long commands (rich), shown only when stderr is a terminal, so
piped output and logs stay clean."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager

Step = Callable[[str], None]
Count = Callable[[int, str], None]


@contextmanager
def steps(title: str) -> Iterator[Step]:
    """A spinner naming the step under way: ``step("starting etcd")``."""
    if not sys.stderr.isatty():
        yield lambda _: None
        return
    from rich.console import Console

    with Console(stderr=True).status(title) as status:
        yield lambda step: status.update(f"{title}: {step}")


@contextmanager
def counted(title: str, total: int) -> Iterator[Count]:
    """A bar of ``total`` units: ``count(done, "policy fgd, seed 42")``."""
    from rich.console import Console
    from rich.progress import Progress

    console = Console(stderr=True)
    with Progress(console=console, disable=not sys.stderr.isatty(), transient=True) as bar:
        task = bar.add_task(title, total=total)
        yield lambda done, text: bar.update(task, completed=done, description=f"{title}: {text}")
