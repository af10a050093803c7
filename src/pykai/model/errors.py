"""pykai's errors: one root (:class:`PykaiError`), and validation errors that name the object,
the field and the fix.

Every exception pykai defines derives from ``PykaiError`` (each also keeps the built-in base
its callers catch, such as ValueError), so the command line reports exactly these as a user's
error and everything else as a bug (cli/errors.py)."""

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
        where = f'{self.kind} "{shown(self.name)}"'
        text = (
            f"{where}: {self.field}: {self.message}" if self.field else f"{where}: {self.message}"
        )
        return f"{text} ({self.fix})" if self.fix else text


class PykaiError(Exception):
    """The root of every error pykai raises on purpose: its message is meant for the user."""


def shown(text: str, limit: int = 100) -> str:
    """``text``, cut to ``limit`` characters (a huge name stays readable in a message)."""
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} characters)"


class ValidationError(PykaiError, ValueError):
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


class QuantityError(PykaiError, ValueError):
    """A Kubernetes quantity string that cannot be parsed."""


class DurationError(PykaiError, ValueError):
    """A duration string (Go's form, such as 1h30m) that cannot be parsed."""


class InvalidRequest(PykaiError, ValueError):
    """A request refused as asked (the message says why), such as moving the clock back."""


class AlreadyExists(PykaiError, ValueError):
    """An object of that kind, namespace and name exists already (HTTP 409 on a real cluster)."""
