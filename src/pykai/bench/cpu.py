"""CPU seconds a process has used, from /proc/PID/stat (user + system time of all its
threads; its children are not counted). Contract: ``cpu_seconds`` returns None for a process
that is gone or unreadable, never raises for it."""

from __future__ import annotations

import os
from pathlib import Path

TICKS = os.sysconf("SC_CLK_TCK")


def parse_stat(text: str) -> float:
    """User + system seconds from the text of /proc/PID/stat (fields 14 and 15; the command
    name, field 2, may hold spaces and parentheses, so fields are counted after its last
    parenthesis)."""
    fields = text[text.rindex(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def cpu_seconds(pid: int) -> float | None:
    """CPU seconds of ``pid`` so far; None if it cannot be read."""
    try:
        return parse_stat(Path(f"/proc/{pid}/stat").read_text())
    except (OSError, ValueError, IndexError):
        return None
