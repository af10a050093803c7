"""Kubernetes quantities and durations."""

from __future__ import annotations

import pytest

from pykai.model.duration import parse_duration
from pykai.model.errors import QuantityError
from pykai.model.quantity import count, cpu_millis, memory_bytes


@pytest.mark.parametrize(
    ("text", "millis"),
    [("500m", 500), ("2", 2000), ("1.5", 1500), (4, 4000), ("0.1", 100), ("100u", 0.1)],
)
def test_cpu(text: str | int, millis: float) -> None:
    assert cpu_millis(text) == pytest.approx(millis)


@pytest.mark.parametrize(
    ("text", "size"),
    [
        ("15Gi", 15 * 2**30),
        ("6G", 6e9),
        ("512Mi", 512 * 2**20),
        ("1e3", 1000),
        ("128974848", 128974848),
        ("1k", 1000),
    ],
)
def test_memory(text: str, size: float) -> None:
    assert memory_bytes(text) == size


@pytest.mark.parametrize("bad", ["", "abc", "1.2.3", "5 Gi", "Gi", "1x", True])
def test_malformed_quantities_say_what_to_write(bad: object) -> None:
    with pytest.raises(QuantityError, match="quantity"):
        count(bad)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("text", "seconds"), [("20s", 20), ("1m30s", 90), ("2h", 7200), ("500ms", 0.5), ("0", 0)]
)
def test_durations(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("bad", ["20", "1 m", "s", "1d"])
def test_bad_durations(bad: str) -> None:
    with pytest.raises(ValueError, match="not a duration"):
        parse_duration(bad)
