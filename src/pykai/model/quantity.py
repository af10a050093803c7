"""Kubernetes quantity parsing: "500m", "15Gi", "2", "1e3", 4."""

from __future__ import annotations

import math
import re
from decimal import ROUND_UP, Context, Decimal
from functools import lru_cache

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

_MAX_TEXT = 64  # longer strings are no quantity a person means (and cost time to parse)
MAX_QUANTITY = Decimal(2**63 - 1)
"""Kubernetes' int64 limit in base units. The apiserver silently caps a larger amount to it,
so an amount that reaches it is refused: it was an overflow, not what anyone asked for."""

Quantity = str | int | float
SATURATED = float(2**63 - 1)  # Kubernetes keeps quantities as int64: larger ones saturate


def parse_quantity(value: Quantity) -> Decimal:
    """Parse a Kubernetes quantity into an exact decimal number of base units. Non-finite
    numbers and amounts that reach Kubernetes' int64 limit raise QuantityError."""
    amount = _decimal(value)
    if amount.is_nan() or (isinstance(value, float) and not math.isfinite(value)):
        raise QuantityError(f"{value!r} is not a finite number; write a number such as 2 or 500m")
    if not amount.is_finite() or abs(amount) >= MAX_QUANTITY:
        raise QuantityError(
            f"{value!r} is out of range: a quantity must be less than {MAX_QUANTITY} base "
            "units (Kubernetes' int64 limit, to which the apiserver caps larger amounts)"
        )
    return amount


def _decimal(value: object) -> Decimal:
    """The number a quantity writes, in base units and unbounded (infinite past Decimal's
    range); QuantityError if it writes none."""
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise QuantityError(f"{value!r} is not a quantity; write a number such as 2, 500m or 15Gi")
    if isinstance(value, int | float):
        try:
            return Decimal(str(value))
        except ValueError as exc:  # an int of more digits than Python prints
            raise QuantityError(f"{exc}; write a number such as 2 or 500m") from exc
    return _decimal_text(value)


@lru_cache(maxsize=4096)
def _decimal_text(value: str) -> Decimal:
    """``_decimal`` of a text; cached, since a cluster writes the same few amounts everywhere
    (Decimal is immutable, and a refusal is raised again, never cached)."""
    text = value.strip()
    match = _PATTERN.match(text) if len(text) <= _MAX_TEXT else None
    if not match:
        shown = value if len(value) <= _MAX_TEXT else value[:_MAX_TEXT] + "..."
        raise QuantityError(
            f"{shown!r} is not a quantity; write a number with an optional suffix "
            "such as 2, 500m, 1.5, 15Gi or 6G"
        )
    number, suffix = match.group(1), match.group(2) or ""
    try:
        return Decimal(number) * _SUFFIXES[suffix]
    except ArithmeticError:  # an exponent beyond Decimal's range
        return Decimal("-Infinity" if number.startswith("-") else "Infinity")


def cpu_millis(value: Quantity) -> float:
    """A CPU quantity in millicores ("500m" -> 500, "2" -> 2000)."""
    return float(parse_quantity(value) * 1000)


def memory_bytes(value: Quantity) -> float:
    """A memory quantity in bytes ("1Gi" -> 1073741824, "6G" -> 6e9)."""
    return float(parse_quantity(value))


def count(value: Quantity) -> float:
    """A plain count such as a number of GPUs ("2" -> 2)."""
    return float(parse_quantity(value))


def is_extended_resource(resource: str) -> bool:
    """True for an extended resource (``nvidia.com/gpu``, any domain but kubernetes.io):
    Kubernetes keeps its amounts whole and, in a container, its request equal to its limit."""
    return "/" in resource and "kubernetes.io/" not in resource


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
        number = _decimal(value)
    except QuantityError:
        return 0.0
    if number.is_nan() or number <= 0:
        return 0.0
    if not number.is_finite() or number >= MAX_QUANTITY:
        return SATURATED
    amount = float(number * 1000) if resource == "cpu" else float(number)
    return min(amount, SATURATED)


# ---- writing quantities ------------------------------------------------------------------------

PATTERN = (
    r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))"
    r"(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
)
"""The pattern of a quantity in OpenAPI (apimachinery's ``resource.Quantity``), which CRDs put
on their quantity fields: what pykai writes must match it."""

_DECIMAL_SUFFIXES = {
    -9: "n", -6: "u", -3: "m", 0: "", 3: "k", 6: "M", 9: "G", 12: "T", 15: "P", 18: "E",
}  # fmt: skip
_BINARY_SUFFIXES = ("", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei")
_NANO = Decimal("1e-9")
_LARGEST = MAX_QUANTITY - 1  # the largest amount parse_quantity takes back
_FLOAT_DIGITS = 15  # a float's trustworthy significant digits (sums carry noise beyond)


def exact(value: float) -> Decimal:
    """A float amount as the decimal it stands for: its last, noisy digits (``0.1 + 0.2``)
    rounded away at 15 significant digits."""
    if not math.isfinite(value):
        raise ValueError(f"{value!r} is no amount a quantity can write")
    return Context(prec=_FLOAT_DIGITS).plus(Decimal(repr(value)))


def format_quantity(amount: Decimal, binary: bool = False) -> str:
    """``amount`` base units as Kubernetes writes a quantity in canonical form: rounded up to
    nano units, a whole mantissa with the largest decimal suffix that keeps it whole (``1500m``,
    ``2``, ``6G``); with ``binary``, the binary form (``512Mi``, ``5859375Ki``) when that is
    shorter. Amounts past Kubernetes' int64 limit are written as the largest it takes."""
    if not amount.is_finite():
        raise ValueError(f"{amount!r} is no amount a quantity can write")
    sign = "-" if amount < 0 else ""
    magnitude = min(abs(amount), _LARGEST).quantize(_NANO, rounding=ROUND_UP)
    if magnitude == 0:
        return "0"
    decimal = sign + _decimal_form(magnitude)
    if binary and magnitude >= 1024 and magnitude == magnitude.to_integral_value():
        whole, power = int(magnitude), 0
        while whole % 1024 == 0 and power < len(_BINARY_SUFFIXES) - 1:
            whole, power = whole // 1024, power + 1
        written = f"{sign}{whole}{_BINARY_SUFFIXES[power]}"
        if len(written) < len(decimal):
            return written
    return decimal


def format_number(value: float) -> str:
    """A plain number (a queue's quota, a GPU fraction) as JSON writes it: a whole one below
    10^21 in full, any other in the shortest form that reads back the same (``1234567``,
    ``0.25``, ``1e+30``), never rounded to six digits as ``%g`` does."""
    if math.isfinite(value) and value == int(value) and abs(value) < 1e21:
        return str(int(value))
    return repr(float(value))


def _decimal_form(magnitude: Decimal) -> str:
    """A positive amount as a whole mantissa and a decimal suffix (exponent a multiple of 3)."""
    _, digits, exponent = magnitude.normalize().as_tuple()
    assert isinstance(exponent, int)
    mantissa = int("".join(map(str, digits)))
    shift = exponent % 3
    mantissa, exponent = mantissa * 10**shift, exponent - shift
    if exponent > 18:  # no suffix that large: a whole number (below int64, never reached)
        mantissa, exponent = mantissa * 10 ** (exponent - 18), 18
    return f"{mantissa}{_DECIMAL_SUFFIXES[exponent]}"
