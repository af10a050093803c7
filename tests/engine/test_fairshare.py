"""Hierarchical fair-share division, with expected values worked out from KAI's rules."""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from pykai.engine.fairshare import QueueShareInput, compute_fair_shares
from pykai.model.resources import Resources

INF = math.inf


def q(
    name: str,
    *,
    parent: str | None = None,
    quota: float = 0,
    limit: float = INF,
    weight: float = 1,
    request: float = 0,
    priority: int = 100,
    creation: float = 0,
) -> QueueShareInput:
    """A queue with the same figures for GPU and zero CPU/memory."""
    return QueueShareInput(
        name=name,
        parent=parent,
        priority=priority,
        deserved=Resources(0, 0, quota),
        limit=Resources(INF, INF, limit),
        over_quota_weight=Resources(1, 1, weight),
        request=Resources(0, 0, request),
        creation=creation,
        uid=name,
    )


def gpu_shares(queues: list[QueueShareInput], total: float) -> dict[str, float]:
    return {
        n: s.fair_share.gpu for n, s in compute_fair_shares(queues, Resources(0, 0, total)).items()
    }


def test_request_caps_the_share_and_the_rest_goes_to_others() -> None:
    shares = gpu_shares([q("a", quota=10, request=5), q("b", quota=10, request=100)], 100)
    assert shares == {"a": 5, "b": 95}


def test_limit_caps_and_zero_limit_forbids() -> None:
    shares = gpu_shares(
        [q("a", limit=20, request=100), q("b", limit=0, request=100), q("c", request=100)], 100
    )
    assert shares == {"a": 20, "b": 0, "c": 80}


def test_zero_weight_gets_only_its_quota() -> None:
    shares = gpu_shares(
        [q("a", quota=10, weight=0, request=100), q("b", quota=0, request=100)], 100
    )
    assert shares == {"a": 10, "b": 90}


def test_unlimited_quota_takes_the_whole_level() -> None:
    shares = gpu_shares([q("a", quota=-1 if False else INF, request=30), q("b", request=100)], 100)
    assert shares == {"a": 30, "b": 70}


def test_children_divide_their_parents_share() -> None:
    queues = [
        q("d1", quota=60, request=0),
        q("d2", quota=40),
        q("t1", parent="d1", quota=10, request=100),
        q("t2", parent="d1", quota=10, weight=2, request=100),
        q("t3", parent="d2", request=10),
    ]
    shares = gpu_shares(queues, 100)
    assert shares["d1"] == 90 and shares["d2"] == 10  # d2 requests only 10; d1 takes the rest
    assert shares["t1"] + shares["t2"] == 90
    assert (shares["t1"], shares["t2"]) == (
        33,
        57,
    )  # 10/10 deserved, 70 split 1:2 -> 23.33/46.67, remainder to t2
    assert shares["t3"] == 10


def test_three_levels() -> None:
    queues = [
        q("a", quota=50),
        q("b", quota=50, request=0),
        q("a1", parent="a"),
        q("a1x", parent="a1", request=80),
        q("a1y", parent="a1", request=10),
    ]
    shares = gpu_shares(queues, 100)
    assert shares["a"] == 90 and shares["a1"] == 90
    assert shares["a1x"] == 80 and shares["a1y"] == 10


def test_remainder_goes_to_the_largest_fraction_then_the_older() -> None:
    shares = gpu_shares(
        [
            q("a", request=100, creation=2),
            q("b", request=100, creation=1),
            q("c", request=100, creation=3),
        ],
        10,
    )
    assert sorted(shares.values()) == [3, 3, 4]
    assert shares["b"] == 4  # equal remainders: the oldest queue gets the extra unit


def test_resources_are_independent() -> None:
    a = QueueShareInput(
        "a",
        None,
        100,
        Resources(1000, 0, 1),
        Resources(INF, INF, INF),
        Resources(1, 1, 1),
        Resources(8000, 0, 1),
        0,
        "a",
    )
    b = QueueShareInput(
        "b",
        None,
        100,
        Resources(0, 0, 0),
        Resources(INF, INF, INF),
        Resources(1, 1, 1),
        Resources(1000, 0, 10),
        0,
        "b",
    )
    shares = compute_fair_shares([a, b], Resources(8000, 0, 8))
    assert shares["a"].fair_share == Resources(7000, 0, 1)
    assert shares["b"].fair_share == Resources(1000, 0, 7)


def test_orphans_and_cycles_are_dropped() -> None:
    shares = gpu_shares(
        [
            q("a", request=5),
            q("x", parent="missing", request=5),
            q("c1", parent="c2"),
            q("c2", parent="c1"),
        ],
        10,
    )
    assert set(shares) == {"a"}


@st.composite
def trees(draw: st.DrawFn) -> list[QueueShareInput]:
    queues = []
    for i in range(draw(st.integers(1, 8))):
        parents = [x.name for x in queues if x.name.count("/") < 2]
        parent = draw(st.sampled_from([None, *parents])) if parents else None
        name = f"{parent}/{i}" if parent else str(i)
        queues.append(
            q(
                name,
                parent=parent,
                quota=draw(st.sampled_from([0, 1, 5, 20, INF])),
                limit=draw(st.sampled_from([INF, 0, 3, 30])),
                weight=draw(st.sampled_from([0, 1, 2])),
                request=draw(st.integers(0, 40)),
                priority=draw(st.sampled_from([50, 100])),
                creation=i,
            )
        )
    return queues


@settings(max_examples=300, deadline=None)
@given(trees(), st.integers(0, 100))
def test_properties(queues: list[QueueShareInput], total: int) -> None:
    result = compute_fair_shares(queues, Resources(0, 0, total))
    assert set(result) == {x.name for x in queues}
    for parent in [None, *(x.name for x in queues)]:
        kids = [x for x in queues if x.parent == parent]
        if not kids:
            continue
        budget = total if parent is None else result[parent].fair_share.gpu
        shares = [result[k.name].fair_share.gpu for k in kids]
        floors = sum(min(k.deserved.gpu, k.limit.gpu, result[k.name].request.gpu) for k in kids)
        # quotas are promises, even when they add up to more than there is (as in KAI)
        assert sum(shares) <= max(budget, floors) + 1e-6
        for k in kids:
            share = result[k.name].fair_share.gpu
            assert share <= k.limit.gpu + 1e-6
            assert share <= result[k.name].request.gpu + 1e-6
        if (
            budget
            and sum(min(k.deserved.gpu, k.limit.gpu, result[k.name].request.gpu) for k in kids)
            <= budget
        ):
            for k in kids:
                floor = min(k.deserved.gpu, k.limit.gpu, result[k.name].request.gpu)
                assert result[k.name].fair_share.gpu >= floor - 1e-6
        hungry = [
            k
            for k in kids
            if k.over_quota_weight.gpu > 0
            and result[k.name].fair_share.gpu < min(k.limit.gpu, result[k.name].request.gpu) - 1e-6
        ]
        if hungry:
            assert sum(shares) >= budget - len(kids) - 1e-6


def test_quota_is_kept_even_when_oversubscribed() -> None:
    # KAI's deserved pass gives every queue min(quota, request) before anything else
    shares = gpu_shares([q("a", quota=5, request=5), q("b", request=5)], 1)
    assert shares == {"a": 5, "b": 0}
