"""Quantities pykai writes: canonical as Kubernetes writes them, within the pattern KAI's CRDs
put on status quantities, and read back by pykai's parser as the amount written."""

from __future__ import annotations

import math
import re
from decimal import ROUND_CEILING, Decimal

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from pykai.kube.localcluster import kai_crds
from pykai.model.quantity import (
    MAX_QUANTITY,
    PATTERN,
    cpu_millis,
    format_number,
    format_quantity,
    memory_bytes,
    parse_quantity,
)
from pykai.model.resources import (
    Resources,
    format_cpu,
    format_gpu,
    format_memory,
    resource_list,
)

KAI_QUEUES = kai_crds() / "scheduling.run.ai_queues.yaml"  # KAI's own, from its module


def kais_pattern() -> str:
    """The pattern KAI's Queue CRD puts on status.allocated's quantities."""
    crd = next(d for d in yaml.safe_load_all(KAI_QUEUES.read_text()) if d)
    status = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["status"]
    pattern: str = status["properties"]["allocated"]["additionalProperties"]["pattern"]
    return pattern


KAI_PATTERN = re.compile(kais_pattern())


def test_pykai_writes_kais_pattern() -> None:
    assert kais_pattern() == PATTERN


@pytest.mark.parametrize(
    ("amount", "binary", "written"),
    [  # Kubernetes' canonical forms (apimachinery's Quantity.String)
        ("0", False, "0"),
        ("1.5", False, "1500m"),
        ("1000", False, "1k"),
        ("1500", False, "1500"),
        ("1234000", False, "1234k"),
        ("0.1", False, "100m"),
        ("0.0000000001", False, "1n"),  # rounded up to nano units
        ("6000000000", True, "6G"),  # shorter than 5859375Ki
        (str(2**31), True, "2Gi"),
        (str(3 * 2**29), True, "1536Mi"),
        ("1025", True, "1025"),
        ("1000", True, "1k"),  # below 1024: decimal
        (str(2**63), True, str(2**63 - 2)),  # past int64: the largest the parser takes
    ],
)
def test_canonical_forms(amount: str, binary: bool, written: str) -> None:
    assert format_quantity(Decimal(amount), binary) == written


@given(
    st.decimals(min_value=0, max_value=MAX_QUANTITY - 1, allow_nan=False, allow_infinity=False),
    st.booleans(),
)
def test_written_quantities_match_kais_pattern_and_read_back(amount: Decimal, binary: bool) -> None:
    written = format_quantity(amount, binary)
    assert KAI_PATTERN.fullmatch(written), written
    nano = (amount * 10**9).to_integral_value(ROUND_CEILING) / 10**9  # up to nano units
    assert parse_quantity(written) == nano
    assert format_quantity(parse_quantity(written), binary) == written  # canonical: a fixpoint


@given(
    st.lists(st.integers(min_value=0, max_value=10**6), max_size=200),
    st.lists(st.integers(min_value=0, max_value=2**40), max_size=200),
    st.lists(st.sampled_from(["0.1", "0.25", "0.5", "1", "2", "0.3"]), max_size=50),
)
def test_sums_of_requests_are_written_exactly(
    millicores: list[int], sizes: list[int], gpus: list[str]
) -> None:
    """What a queue's allocated sums (floats, as the engine adds requests) is written as the
    exact sum of the quantities, without the float's noise."""
    total = Resources(
        sum(cpu_millis(f"{m}m") for m in millicores),
        sum(memory_bytes(str(s)) for s in sizes),
        sum(float(g) for g in gpus),
    )
    written = resource_list(total)
    assert all(KAI_PATTERN.fullmatch(v) for v in written.values()), written
    assert parse_quantity(written["cpu"]) * 1000 == sum(millicores)
    assert parse_quantity(written["memory"]) == sum(sizes)
    assert parse_quantity(written["nvidia.com/gpu"]) == sum(Decimal(g) for g in gpus)


def test_unwritable_amounts_are_refused() -> None:
    with pytest.raises(ValueError):
        format_quantity(Decimal("Infinity"))
    with pytest.raises(ValueError):
        resource_list(Resources(float("inf"), 0, 0))


def test_texts_for_people_write_canonical_quantities_and_whole_numbers() -> None:
    """describe, explain and why-pending texts: Kubernetes' own forms for CPU and memory,
    whole numbers in full, never %g's ``5.85938e+06Ki``."""
    assert [format_memory(6e9), format_memory(1.5 * 2**30), format_memory(6e9 + 1)] == [
        "6G",
        "1536Mi",
        "6000000001",
    ]
    assert [format_cpu(1500), format_cpu(2000), format_cpu(0.5)] == ["1500m", "2", "500u"]
    assert [format_gpu(g) for g in (8, 0.5, 1 / 3, 1e6, math.inf)] == [
        "8",
        "0.5",
        "0.33",
        "1000000",
        "unlimited",
    ]  # a count of devices, as KAI's messages write it
    assert [format_number(n) for n in (1234567.0, -1, 0.25, 1e30)] == [
        "1234567",
        "-1",
        "0.25",
        "1e+30",
    ]
