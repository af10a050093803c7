"""Label selectors as ``kubectl -l`` takes them: ``a=b``, ``a==b``, ``a!=b``, ``a``, ``!a``,
``a in (x,y)``, ``a notin (x,y)``, joined by commas (all must hold)."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping

from pykai.model.errors import PykaiError
from pykai.model.meta import Obj

Requirement = Callable[[Mapping[str, str]], bool]

_KEY = r"[A-Za-z0-9][-A-Za-z0-9_./]*"
_VALUE = r"[-A-Za-z0-9_.]*"
_REQUIREMENT = re.compile(
    rf"\s*(?:!\s*(?P<absent>{_KEY})"
    rf"|(?P<key>{_KEY})\s*(?:(?P<op>==|=|!=)\s*(?P<value>{_VALUE})"
    rf"|\s+(?P<set>in|notin)\s*\((?P<values>[^)]*)\))?)\s*(?:,|$)"
)


class SelectorError(PykaiError, ValueError):
    """A label selector that cannot be parsed."""


def parse_selector(text: str) -> list[Requirement]:
    """The requirements of a selector; an empty selector has none (it matches everything)."""
    requirements: list[Requirement] = []
    position = 0
    text = text.strip()
    while position < len(text):
        match = _REQUIREMENT.match(text, position)
        if match is None or match.end() == position:
            raise SelectorError(f'unable to parse requirement: "{text[position:]}"')
        requirements.append(_requirement(match))
        position = match.end()
    return requirements


def _requirement(match: re.Match[str]) -> Requirement:
    if match["absent"]:
        absent = match["absent"]
        return lambda labels: absent not in labels
    key, op, value = match["key"], match["op"], match["value"]
    if op in ("=", "=="):
        return lambda labels: labels.get(key) == value
    if op == "!=":
        return lambda labels: labels.get(key) != value
    if match["set"]:
        values = {v.strip() for v in match["values"].split(",")}
        if match["set"] == "in":
            return lambda labels: labels.get(key) in values
        return lambda labels: labels.get(key) not in values
    return lambda labels: key in labels


def select(objects: list[Obj], selector: str) -> list[Obj]:
    """The objects whose labels satisfy ``selector``."""
    requirements = parse_selector(selector)
    return [
        o
        for o in objects
        if all(r((o.get("metadata") or {}).get("labels") or {}) for r in requirements)
    ]
