"""Go-style duration strings ("20s", "1h30m", "500ms") as seconds."""

from __future__ import annotations

import re

from pykai.model.errors import DurationError

_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)")


def parse_duration(text: str) -> float:
    """Parse a duration such as "90s", "1m30s" or "2h"; raises DurationError (a
    ValueError) with the expected form."""
    value = str(text).strip()
    if value in ("0", ""):
        return 0.0
    sign = -1.0 if value.startswith("-") else 1.0
    body = value.lstrip("+-")
    pos, total = 0, 0.0
    for match in _PART.finditer(body):
        if match.start() != pos:
            break
        total += float(match.group(1)) * _UNITS[match.group(2)]
        pos = match.end()
    if pos != len(body) or pos == 0:
        raise DurationError(f"{text!r} is not a duration; write e.g. 30s, 5m or 1h30m")
    return sign * total
