"""The table model every kind's columns are written in (cli/columns.py, cli/kueue_columns.py):
a column is a header and a cell, a cell turns an object (and the ``Context`` of the whole
table) into its text, and the cells any kind may use are here, made once."""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import cached_property
from typing import TYPE_CHECKING, Any

from pykai.cli.related import Reader, descendant_pods, pods_by_node
from pykai.cli.tables import age
from pykai.model.meta import Obj

if TYPE_CHECKING:
    from pykai.model.positions import Position

NONE = "<none>"
INVALID = "<invalid>"


class Context:
    """What cells need beyond their object: the clock and, read once when a column asks,
    related objects."""

    def __init__(self, reader: Reader) -> None:
        self.reader = reader
        self.now = reader.now()
        self._owned: dict[str, list[Obj]] = {}

    @cached_property
    def placed_pods(self) -> dict[str, list[Obj]]:
        """Pods holding resources, by node."""
        return pods_by_node(self.reader.list("Pod"))

    @cached_property
    def positions(self) -> dict[str, Position]:
        """Where each pending job stands, by job key (as recorded, else worked out by the
        engine: cli/pending.py)."""
        from pykai.cli.pending import positions_of

        return positions_of(self.reader).by_job()

    def pods_of(self, owner: Obj) -> list[Obj]:
        """The pods a workload owns, through the objects it owns."""
        uid = str(owner["metadata"].get("uid"))
        if uid not in self._owned:
            self._owned[uid] = descendant_pods(self.reader, owner)
        return self._owned[uid]


Cell = Callable[[Obj, Context], str]
"""A cell's text for an object; it may raise on a field it cannot read (``shown``)."""
Column = tuple[str, Cell]
"""A header and its cell."""


def field(*path: str, missing: str = NONE) -> Cell:
    """The value at ``path`` (``missing`` when absent or empty); lists print as JSON."""

    def cell(obj: Obj, _: Context) -> str:
        value: Any = obj
        for key in path:
            value = value.get(key) if isinstance(value, dict) else None
        if value in (None, "", [], {}):
            return missing
        if isinstance(value, list | dict):
            return json.dumps(value, separators=(",", ":"))
        if isinstance(value, bool):
            return str(value).lower()
        if isinstance(value, float) and value.is_integer():
            return str(int(value))
        return str(value)

    return cell


def printer_column(*path: str) -> Cell:
    """A CRD printer column: an empty cell when the value is missing, as kubectl prints it."""
    return field(*path, missing="")


def name_cell(obj: Obj, _: Context) -> str:
    """NAME."""
    return str(obj["metadata"]["name"])


def age_cell(obj: Obj, ctx: Context) -> str:
    """AGE: since the object was created."""
    return age(obj["metadata"].get("creationTimestamp"), ctx.now)


NAME_AGE: list[Column] = [("NAME", name_cell), ("AGE", age_cell)]
"""The columns of a kind that has no others."""


def shown(cell: Cell, obj: Obj, ctx: Context) -> str:
    """A cell's text; a field that cannot be read shows as ``<invalid>`` (the object is
    listed whatever is stored in it)."""
    try:
        return cell(obj, ctx)
    except (ValueError, TypeError, KeyError, AttributeError, ArithmeticError):
        return INVALID
