"""Kubernetes quantity parsing: "500m", "15Gi", "2", "1e3", 4."""

from __future__ import annotations

import math
import re
from decimal import Decimal, InvalidOperation

from pykai.model.errors import QuantityError

_SUFFIXES: dict[str, Decimal] = {
    "": Decimal(1),
    "n": Decimal("1e-9"),
    "u": Decimal("1e-6"),
    "m": Decimal("1e-3"),
    "k": Decimal("1e3"),
    "M": Decimal("1e6"),
    "G": Decimal("1e9"),
    "T": Decimal("1e12"),
    "P": Decimal("1e15"),
    "E": Decimal("1e18"),
    "Ki": Decimal(2**10),
    "Mi": Decimal(2**20),
    "Gi": Decimal(2**30),
    "Ti": Decimal(2**40),
    "Pi": Decimal(2**50),
    "Ei": Decimal(2**60),
}
_PATTERN = re.compile(
    r"^([+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE])?$"
)

Quantity = str | int | float
SATURATED = float(2**63 - 1)  # Kubernetes keeps quantities as int64: larger ones saturate


def parse_quantity(value: Quantity) -> Decimal:
    """Parse a Kubernetes quantity into an exact decimal number of base units."""
    if isinstance(value, bool):
        raise QuantityError(f"{value!r} is not a quantity; write a number such as 2, 500m or 15Gi")
    if isinstance(value, int | float):
        return Decimal(str(value))
    text = str(value).strip()
    match = _PATTERN.match(text)
    if not match:
        raise QuantityError(
            f"{value!r} is not a quantity; write a number with an optional suffix "
            "such as 2, 500m, 1.5, 15Gi or 6G"
        )
    number, suffix = match.group(1), match.group(2) or ""
    try:
        return Decimal(number) * _SUFFIXES[suffix]
    except InvalidOperation as exc:  # pragma: no cover - the regex admits only numbers
        raise QuantityError(f"{value!r} is not a quantity") from exc


def cpu_millis(value: Quantity) -> float:
    """A CPU quantity in millicores ("500m" -> 500, "2" -> 2000)."""
    return float(parse_quantity(value) * 1000)


def memory_bytes(value: Quantity) -> float:
    """A memory quantity in bytes ("1Gi" -> 1073741824, "6G" -> 6e9)."""
    return float(parse_quantity(value))


def count(value: Quantity) -> float:
    """A plain count such as a number of GPUs ("2" -> 2)."""
    return float(parse_quantity(value))


def resource_amount(resource: str, value: Quantity) -> float:
    """A quantity in engine units for its resource: cpu in millicores, memory in bytes,
    anything else (nvidia.com/gpu, pods, ...) as a count."""
    if resource == "cpu":
        return cpu_millis(value)
    if resource == "memory":
        return memory_bytes(value)
    return count(value)


def saturated_amount(resource: str, value: object) -> float:
    """What a quantity means to the node it sits on when it cannot be taken literally; never
    raises: unreadable or negative amounts are 0, amounts past int64 (``"1e400"``, ``.inf``)
    saturate at ``SATURATED``, so a pod that holds a node with one still fills it."""
    try:
        number = parse_quantity(value)  # type: ignore[arg-type]
    except (QuantityError, ValueError, TypeError, ArithmeticError):
        return 0.0
    if number.is_nan() or number <= 0:
        return 0.0
    amount = float(number * 1000) if resource == "cpu" else float(number)
    return SATURATED if not math.isfinite(amount) else min(amount, SATURATED)
