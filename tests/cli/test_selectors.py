"""Label selectors as kubectl -l takes them."""

from __future__ import annotations

import pytest

from pykai.cli.selectors import SelectorError, select

PODS = [
    {"metadata": {"name": "a", "labels": {"app": "x", "ray.io/cluster": "rc"}}},
    {"metadata": {"name": "b", "labels": {"app": "y"}}},
    {"metadata": {"name": "c"}},
]


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        ("", ["a", "b", "c"]),
        ("app=x", ["a"]),
        ("app==x", ["a"]),
        ("app!=x", ["b", "c"]),
        ("app", ["a", "b"]),
        ("!app", ["c"]),
        ("app in (x, y)", ["a", "b"]),
        ("app notin (x)", ["b", "c"]),
        ("ray.io/cluster=rc,app=x", ["a"]),
        ("ray.io/cluster=rc,app=y", []),
    ],
)
def test_select(selector: str, expected: list[str]) -> None:
    assert [o["metadata"]["name"] for o in select(PODS, selector)] == expected


def test_malformed_selector() -> None:
    with pytest.raises(SelectorError, match='unable to parse requirement: "=x"'):
        select(PODS, "=x")
