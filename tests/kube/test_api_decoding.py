"""How kube/api.py reads the apiserver's answers: a watch stream cut anywhere into chunks gives
back its lines, and objects lose only their managed fields."""

from __future__ import annotations

import itertools

from hypothesis import given
from hypothesis import strategies as st

from pykai.kube.api import _lines, _received
from pykai.model.kinds import BY_KIND

LINES = st.lists(st.binary(min_size=1).filter(lambda b: b"\n" not in b and b.strip()), max_size=8)


@given(LINES, st.lists(st.integers(min_value=0), max_size=10), st.booleans())
def test_a_stream_cut_anywhere_gives_back_its_lines(
    lines: list[bytes], cuts: list[int], blank_lines: bool
) -> None:
    separator = b"\n\n" if blank_lines else b"\n"
    stream = separator.join(lines) + b"\n"
    points = sorted({0, len(stream), *(cut % (len(stream) + 1) for cut in cuts)})
    chunks = [stream[a:b] for a, b in itertools.pairwise(points)]
    assert list(_lines(iter(chunks))) == lines


def test_an_unterminated_last_line_is_kept() -> None:
    assert list(_lines(iter([b'{"a":', b"1}\n{", b'"b":2}']))) == [b'{"a":1}', b'{"b":2}']


def test_received_objects_lose_only_managed_fields() -> None:
    pod = {
        "metadata": {"name": "p", "labels": {"a": "b"}, "managedFields": [{"manager": "x"}]},
        "spec": {"nodeName": ""},
    }
    assert _received(BY_KIND["Pod"], pod) == {
        "kind": "Pod",
        "apiVersion": "v1",
        "metadata": {"name": "p", "labels": {"a": "b"}},
        "spec": {"nodeName": ""},
    }
