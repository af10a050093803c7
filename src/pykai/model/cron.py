"""Cron schedules as a CronJob takes them (the standard five fields, or a descriptor such as
@hourly or @every 1h30m, as robfig/cron's ParseStandard reads them)."""

from __future__ import annotations

import re

from pykai.model.duration import parse_duration

_DESCRIPTORS = {"@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly"}
_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
_DAYS = ("sun", "mon", "tue", "wed", "thu", "fri", "sat")
# (name, lowest, highest, names) per field
_FIELDS: tuple[tuple[str, int, int, tuple[str, ...]], ...] = (
    ("minute", 0, 59, ()),
    ("hour", 0, 23, ()),
    ("day of month", 1, 31, ()),
    ("month", 1, 12, _MONTHS),
    ("day of week", 0, 6, _DAYS),
)
_PART = re.compile(r"^(\*|\?|[0-9a-z]+(?:-[0-9a-z]+)?)(?:/([0-9]+))?$")


def cron_problem(schedule: str) -> str:
    """Why ``schedule`` is not a valid cron schedule, or ""."""
    text = schedule.strip()
    if text.startswith("@every "):
        try:
            seconds = parse_duration(text.removeprefix("@every ").strip())
        except ValueError as exc:
            return str(exc)
        return "" if seconds > 0 else "@every needs a positive duration"
    if text.startswith("@"):
        return "" if text in _DESCRIPTORS else f"unknown descriptor {text!r}"
    fields = text.split()
    if len(fields) != len(_FIELDS):
        return f"must have 5 fields (minute hour day-of-month month day-of-week), got {len(fields)}"
    for value, (what, low, high, names) in zip(fields, _FIELDS, strict=True):
        for part in value.lower().split(","):
            if why := _part_problem(part, low, high, names):
                return f"{what} field {value!r}: {why}"
    return ""


def _part_problem(part: str, low: int, high: int, names: tuple[str, ...]) -> str:
    match = _PART.match(part)
    if not match:
        return f"{part!r} is not a number, range, step or *"
    span, step = match.group(1), match.group(2)
    if step is not None and int(step) == 0:
        return "a step must be at least 1"
    if span in ("*", "?"):
        return ""
    bounds = []
    for item in span.split("-"):
        number = names.index(item) + (1 if names is _MONTHS else 0) if item in names else None
        if number is None and not item.isdigit():
            return f"{item!r} is not a number"
        bounds.append(int(item) if number is None else number)
    if not all(low <= b <= high for b in bounds):
        return f"must be between {low} and {high}"
    if len(bounds) == 2 and bounds[0] > bounds[1]:
        return f"range {span!r} runs backwards"
    return ""
