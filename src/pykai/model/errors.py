"""Validation errors that name the object, the field and the fix."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class FieldProblem:
    """One problem with one field of one object."""

    kind: str
    name: str
    field: str
    message: str
    fix: str = ""

    def __str__(self) -> str:
        where = f'{self.kind} "{self.name}"'
        text = (
            f"{where}: {self.field}: {self.message}" if self.field else f"{where}: {self.message}"
        )
        return f"{text} ({self.fix})" if self.fix else text


class ValidationError(ValueError):
    """Raised when an object is invalid; carries every problem found."""

    def __init__(self, problems: list[FieldProblem]) -> None:
        self.problems = problems
        super().__init__("\n".join(str(p) for p in problems))

    @classmethod
    def single(
        cls, kind: str, name: str, field: str, message: str, fix: str = ""
    ) -> ValidationError:
        """An error with one problem."""
        return cls([FieldProblem(kind, name, field, message, fix)])


class QuantityError(ValueError):
    """A Kubernetes quantity string that cannot be parsed."""


class AlreadyExists(ValueError):
    """An object of that kind, namespace and name exists already (HTTP 409 on a real cluster)."""
