"""Background patches (kube/writeback.py): one object's in order, coalesced into one merge patch
only where it means the same, never made twice, tried again when the apiserver fails, and
dropped when it refuses."""

from __future__ import annotations

import random
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from pykai.kube import writeback
from pykai.kube.api import ApiError
from pykai.kube.writeback import Writeback, compose
from pykai.model.kinds import KindSpec
from pykai.model.meta import Obj, merge_patch


class _Api:
    """Records each patch; the first waits for ``gate``; ``failures`` answers come first."""

    def __init__(self, failures: list[Exception] | None = None) -> None:
        self.sent: list[tuple[str, str, Obj]] = []
        self.gate = threading.Event()
        self.started = threading.Event()
        self.failures = list(failures or [])

    def patch(
        self, kind: KindSpec, name: str, patch: Obj, namespace: str = "", sub: str = ""
    ) -> Obj:
        self.started.set()
        assert self.gate.wait(10.0)
        if self.failures:
            raise self.failures.pop(0)
        self.sent.append((name, sub, patch))
        return {"kind": kind.kind, "metadata": {"name": name, "namespace": namespace}}


def _until(condition: Any, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "not reached in time"
        time.sleep(0.01)


@pytest.fixture
def pool() -> Any:
    with ThreadPoolExecutor(4) as executor:
        yield executor


def test_patches_asked_while_one_is_under_way_go_out_as_one(pool: ThreadPoolExecutor) -> None:
    api = _Api()
    written: list[Obj] = []
    back = Writeback(api, pool, lambda kind, obj: written.append(obj))  # type: ignore[arg-type]
    back.patch("PodGroup", "ns", "a", "status", {"status": {"phase": "Pending"}})
    assert api.started.wait(5.0)
    back.patch("PodGroup", "ns", "a", "status", {"status": {"phase": "Running"}})
    back.patch("PodGroup", "ns", "a", "status", {"status": {"resourcesStatus": {"gpu": 1}}})
    api.gate.set()
    _until(lambda: back.pending() == 0)
    assert [p for _, _, p in api.sent] == [
        {"status": {"phase": "Pending"}},
        {"status": {"phase": "Running", "resourcesStatus": {"gpu": 1}}},
    ]
    assert len(written) == 2


def test_a_patch_equal_to_the_last_in_line_is_not_made_twice(pool: ThreadPoolExecutor) -> None:
    api = _Api()
    back = Writeback(api, pool, lambda kind, obj: None)  # type: ignore[arg-type]
    same = {"metadata": {"annotations": {"kai.scheduler/last-start-timestamp": "t"}}}
    back.patch("PodGroup", "ns", "a", "", same)
    assert api.started.wait(5.0)
    back.patch("PodGroup", "ns", "a", "", dict(same))  # asked again before the answer came
    api.gate.set()
    _until(lambda: back.pending() == 0)
    assert len(api.sent) == 1
    back.patch("PodGroup", "ns", "a", "", same)  # after it: a write of its own again
    _until(lambda: len(api.sent) == 2)


def test_objects_and_subresources_are_apart(pool: ThreadPoolExecutor) -> None:
    api = _Api()
    api.gate.set()
    back = Writeback(api, pool, lambda kind, obj: None)  # type: ignore[arg-type]
    back.patch("PodGroup", "ns", "a", "status", {"status": {"phase": "Running"}})
    back.patch("PodGroup", "ns", "a", "", {"metadata": {"annotations": {"x": "1"}}})
    back.patch("PodGroup", "ns", "b", "status", {"status": {"phase": "Running"}})
    _until(lambda: len(api.sent) == 3)
    assert sorted((name, sub) for name, sub, _ in api.sent) == [
        ("a", ""),
        ("a", "status"),
        ("b", "status"),
    ]


def test_a_failure_time_may_mend_is_tried_again(
    pool: ThreadPoolExecutor, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(writeback, "RETRY_SECONDS", 0.01)
    api = _Api([ApiError(503, "unavailable"), ApiError(429, "slow down")])
    api.gate.set()
    back = Writeback(api, pool, lambda kind, obj: None)  # type: ignore[arg-type]
    back.patch("PodGroup", "ns", "a", "status", {"status": {"phase": "Running"}})
    _until(lambda: len(api.sent) == 1)


@pytest.mark.parametrize("status", [404, 422])
def test_a_refused_patch_is_dropped_and_the_next_still_goes(
    status: int, pool: ThreadPoolExecutor, caplog: pytest.LogCaptureFixture
) -> None:
    api = _Api([ApiError(status, "no")])
    back = Writeback(api, pool, lambda kind, obj: None)  # type: ignore[arg-type]
    back.patch("PodGroup", "ns", "a", "status", {"status": {"phase": "Pending"}})
    assert api.started.wait(5.0)
    back.patch("PodGroup", "ns", "a", "status", {"status": {"phase": "Running"}})
    api.gate.set()
    _until(lambda: back.pending() == 0)
    assert [p for _, _, p in api.sent] == [{"status": {"phase": "Running"}}]
    assert "status of PodGroup ns/a not written" in caplog.text


def _value(rng: random.Random, depth: int) -> object:
    roll = rng.random()
    if roll < 0.2:
        return None
    if roll < 0.4:
        return rng.choice([1, "x", [1, 2]])
    return _patch(rng, depth + 1) if depth < 2 else rng.choice([2, "y"])


def _patch(rng: random.Random, depth: int = 0) -> Obj:
    return {rng.choice("abc"): _value(rng, depth) for _ in range(rng.randint(1, 3))}


def test_compose_does_what_the_two_do_one_after_the_other() -> None:
    """RFC 7386 applied to random documents: where ``compose`` gives a patch, it has the
    effect of the two in turn; where it gives none, no single patch could."""
    rng = random.Random(7)
    composed = 0
    for _ in range(5000):
        target, first, then = _patch(rng), _patch(rng), _patch(rng)
        one = compose(first, then)
        if one is None:
            continue
        composed += 1
        assert merge_patch(target, one) == merge_patch(merge_patch(target, first), then)
    assert composed > 2500  # most pairs compose
    # a field deleted, then merged into: applied together, it would merge into the old value
    assert compose({"a": None}, {"a": {"b": 1}}) is None
    assert compose({"a": 1}, {"a": {"b": 1}}) is None
    assert compose({"a": {"b": None}}, {"a": {"c": 1}}) == {"a": {"b": None, "c": 1}}


def test_a_write_gives_way_to_binds_under_way(
    pool: ThreadPoolExecutor, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While binds are under way a status patch waits (what is asked meanwhile is composed
    into it), and goes once they are done."""
    monkeypatch.setattr(writeback, "GIVE_WAY_SECONDS", 30.0)
    api = _Api()
    api.gate.set()
    binding = threading.Event()
    binding.set()
    back = Writeback(api, pool, lambda kind, obj: None, give_way=binding.is_set)  # type: ignore[arg-type]
    back.patch("PodGroup", "ns", "a", "status", {"status": {"phase": "Pending"}})
    back.patch("PodGroup", "ns", "a", "status", {"status": {"phase": "Running"}})
    assert not api.started.wait(0.5)  # held back while binds are under way
    binding.clear()
    _until(lambda: back.pending() == 0)
    assert [p for _, _, p in api.sent] == [{"status": {"phase": "Running"}}]
