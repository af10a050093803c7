"""Cron schedules as a CronJob takes them (the standard five fields, or a descriptor such as
@hourly or @every 1h30m, as robfig/cron's ParseStandard reads them), and its time zone
(``spec.timeZone`` of batch/v1)."""

from __future__ import annotations

import functools
import re
import zoneinfo

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
    """Why ``schedule`` is not a valid cron schedule, or "" (a leading ``TZ=zone`` or
    ``CRON_TZ=zone`` is read as robfig/cron reads it)."""
    text = schedule.strip()
    if text.startswith(("TZ=", "CRON_TZ=")):
        zone, _, text = text.partition("=")[2].partition(" ")
        if zone not in ("", "UTC", "Local") and _have_zones() and not _known_zone(zone):
            return f"provided bad location {zone}"
        text = text.strip()
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


_ZONE_PART = re.compile(r"^[A-Za-z.\-_0-9+]{1,14}$")


def time_zone_problem(zone: str) -> str:
    """Why ``zone`` is not a CronJob's ``spec.timeZone`` (the apiserver's words), or ""."""
    if not zone:
        return "timeZone must be nil or non-empty string"
    if zone.lower() == "local":
        return (
            "timeZone must be an explicit time zone as defined in https://www.iana.org/time-zones"
        )
    parts = zone.split("/")
    if any(p in (".", "..") or p.startswith("-") or not _ZONE_PART.match(p) for p in parts):
        return f"unknown time zone {zone}"
    if _have_zones() and not _known_zone(zone):
        return f"unknown time zone {zone}"
    return ""


@functools.cache
def _have_zones() -> bool:
    """Whether this system has a time-zone database (the system's or the tzdata package): an
    image without one cannot tell zones apart, so it refuses none."""
    return _known_zone("Europe/Berlin")


@functools.lru_cache(maxsize=256)
def _known_zone(zone: str) -> bool:
    try:
        zoneinfo.ZoneInfo(zone)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError, OSError):
        return False
    return True
