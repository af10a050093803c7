"""kubectl's table layout and ages."""

from __future__ import annotations

import pytest

from pykai.cli.tables import age, duration, table


def test_columns_are_padded_by_three_spaces_and_at_least_six_wide() -> None:
    text = table(["NAME", "X", "LAST"], [["team-a", "1", "end"], ["b", "", "x"]])
    assert text.splitlines() == [
        "NAME     X     LAST",
        "team-a   1     end",
        "b              x",
    ]


def test_the_last_column_is_not_padded_and_empty_cells_leave_no_trailing_space() -> None:
    lines = table(["A", "B"], [["x", ""]]).splitlines()
    assert lines == ["A     B", "x"]


def test_no_headers() -> None:
    assert table(["NAME", "AGE"], [["a", "1s"]], no_headers=True) == "a     1s"
    assert table(["NAME", "AGE"], [], no_headers=True) == ""


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (-5, "<invalid>"),
        (-1, "0s"),
        (45, "45s"),
        (119, "119s"),
        (180, "3m"),
        (182, "3m2s"),
        (900, "15m"),
        (179 * 60, "179m"),
        (5 * 3600, "5h"),
        (5 * 3600 + 30 * 60, "5h30m"),
        (10 * 3600, "10h"),
        (2 * 86400, "2d"),
        (3 * 86400 + 4 * 3600, "3d4h"),
        (30 * 86400, "30d"),
        (3 * 365 * 86400 + 10 * 86400, "3y10d"),
        (9 * 365 * 86400, "9y"),
    ],
)
def test_duration_is_kubectls(seconds: int, text: str) -> None:
    assert duration(seconds) == text


def test_age_of_a_timestamp() -> None:
    assert age("1970-01-01T00:00:00Z", 62.5) == "62s"
    assert age(None, 10) == "<unknown>"
