"""Turn pydantic's errors into FieldProblems that name the object and the field path."""

from __future__ import annotations

from pydantic import ValidationError as PydanticError

from pykai.model.errors import FieldProblem


def problems_from(exc: PydanticError, kind: str, name: str, prefix: str) -> list[FieldProblem]:
    """One FieldProblem per pydantic error, with the path under ``prefix`` in camelCase."""
    problems = []
    for err in exc.errors():
        parts = [prefix, *(f"[{p}]" if isinstance(p, int) else str(p) for p in err["loc"])]
        path = ".".join(parts).replace(".[", "[")
        message = str(err["msg"]).removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            message = "is not a known field"
        problems.append(FieldProblem(kind, name, path, message))
    return problems
