"""Plain-text tables and ages, formatted as kubectl formats them."""

from __future__ import annotations

from pykai.model.meta import parse_time

_PADDING = 3  # kubectl's tabwriter: 3 spaces of padding, cells at least 6 wide
_MIN_WIDTH = 6

Row = list[str]


def table(headers: Row, rows: list[Row], *, no_headers: bool = False) -> str:
    """Left-aligned columns as kubectl's tabwriter lays them out (the last one unpadded)."""
    lines = rows if no_headers else [headers, *rows]
    if not lines or not headers:
        return ""
    widths = [
        max(_MIN_WIDTH, max(len(line[i]) for line in lines) + _PADDING)
        for i in range(len(headers) - 1)
    ]

    def render(line: Row) -> str:
        padded = "".join(cell.ljust(w) for cell, w in zip(line[:-1], widths, strict=True))
        return (padded + line[-1]).rstrip()

    return "\n".join(render(line) for line in lines)


def duration(seconds: float) -> str:
    """kubectl's HumanDuration: 45s, 3m2s, 15m, 5h30m, 10h, 3d4h, 30d, 2y100d."""
    whole = int(seconds)
    if whole < -1:
        return "<invalid>"
    if whole < 0:
        return "0s"
    if whole < 120:
        return f"{whole}s"
    minutes, hours, days = whole // 60, whole // 3600, whole // 86400
    if minutes < 10:
        return _pair(minutes, "m", whole % 60, "s")
    if minutes < 180:
        return f"{minutes}m"
    if hours < 8:
        return _pair(hours, "h", minutes % 60, "m")
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        return _pair(days, "d", hours % 24, "h")
    if hours < 24 * 365 * 2:
        return f"{days}d"
    if hours < 24 * 365 * 8:
        return _pair(days // 365, "y", days % 365, "d")
    return f"{days // 365}y"


def _pair(major: int, major_unit: str, minor: int, minor_unit: str) -> str:
    return f"{major}{major_unit}{minor}{minor_unit}" if minor else f"{major}{major_unit}"


def age(timestamp: object, now: float) -> str:
    """The age of an RFC 3339 timestamp at ``now``; ``<unknown>`` when it is missing."""
    if timestamp in (None, ""):
        return "<unknown>"
    return duration(now - parse_time(timestamp))
