"""Turn pydantic's errors into FieldProblems that name the object and the field path."""

from __future__ import annotations

from pydantic import ValidationError as PydanticError

from pykai.model.errors import FieldProblem, shown


def problems_from(exc: PydanticError, kind: str, name: str, prefix: str) -> list[FieldProblem]:
    """One FieldProblem per pydantic error, with the path under ``prefix`` in camelCase and
    the offending value when it is a scalar."""
    problems = []
    for err in exc.errors():
        parts = [prefix, *(f"[{p}]" if isinstance(p, int) else str(p) for p in err["loc"])]
        path = ".".join(parts).replace(".[", "[")
        message = str(err["msg"]).removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            message = "is not a known field"
        elif err["type"] == "missing":
            message = "is required"
        elif not err["type"].startswith("value_error") and _scalar(err.get("input")):
            message += f", got {shown(repr(err['input']), 60)}"
        problems.append(FieldProblem(kind, name, path, message))
    return problems


def _scalar(value: object) -> bool:
    return value is None or isinstance(value, str | int | float | bool)
