"""Hierarchical fair-share division: expected values worked out by hand from KAI's rules
(resource_division.go; several cases are the scenarios of its resource_division_test.go)."""

from __future__ import annotations

import math
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pykai.engine.fairshare import QueueShare, QueueShareInput, compute_fair_shares
from pykai.model.resources import RESOURCE_NAMES, Resources

INF = math.inf
TOL = 1e-6


def queue(
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
    """A queue with these GPU figures; no CPU or memory quota or request."""
    return QueueShareInput(
        name=name,
        parent=parent,
        priority=priority,
        deserved=Resources(gpu=quota),
        limit=Resources(INF, INF, limit),
        over_quota_weight=Resources(1, 1, weight),
        request=Resources(gpu=request),
        creation=creation,
    )


def gpu_shares(queues: list[QueueShareInput], total: float) -> dict[str, float]:
    """Each queue's GPU fair share out of ``total`` GPUs."""
    result = compute_fair_shares(queues, Resources(gpu=total))
    return {name: share.fair_share.gpu for name, share in result.items()}


def test_kai_golden_example() -> None:
    # 80 GPUs over quota, split 3:1
    shares = gpu_shares(
        [queue("a", quota=10, weight=3, request=100), queue("b", quota=10, weight=1, request=100)],
        100,
    )
    assert shares == {"a": 70, "b": 30}


@pytest.mark.parametrize(
    ("total", "queues", "expected"),
    [
        pytest.param(
            8,
            [queue("1", quota=2, weight=1, request=6), queue("2", quota=2, weight=3, request=6)],
            {"1": 3, "2": 5},  # 4 over quota split 1:3
            id="weights-split-the-surplus",
        ),
        pytest.param(
            15,
            [queue("1", quota=2, request=6), queue("2", quota=2, request=6)],
            {"1": 6, "2": 6},  # 3 GPUs nobody asked for stay undivided
            id="request-caps-the-share",
        ),
        pytest.param(
            4,
            [
                queue("1", quota=2, request=6, priority=1),
                queue("2", quota=2, request=6, priority=2),
            ],
            {"1": 2, "2": 2},
            id="priority-does-not-affect-deserved",
        ),
        pytest.param(
            6,
            [
                queue("1", quota=2, weight=100, request=6, priority=1),
                queue("2", quota=2, weight=1, request=6, priority=2),
            ],
            {"1": 2, "2": 4},  # the higher priority takes the 2 spare GPUs whatever the weights
            id="priority-beats-weight-over-quota",
        ),
        pytest.param(
            5,
            [
                queue("1", quota=2, weight=2, request=5, priority=2, creation=1),
                queue("2", quota=2, weight=2, request=5, priority=2, creation=2),
                queue("3", quota=1, weight=2, request=0, priority=1, creation=3),
            ],
            {"1": 3, "2": 2, "3": 0},  # 0.5 + 0.5 floored to 0; the spare GPU to the older
            id="leftover-with-priorities",
        ),
        pytest.param(
            3.5,
            [queue("1", quota=3, request=5)],
            {"1": 3.5},  # offer 0.5 floors to 0; the 0.5 leftover is handed out
            id="fractional-leftover",
        ),
        pytest.param(
            1000,
            [
                queue("1", quota=250, weight=1, request=5000),
                queue("2", quota=150, weight=2, limit=400, request=5000),
            ],
            # 600 over quota offered 200/400; "2" needs only 250 (limit), so a second round
            # gives the 150 it left to "1"
            {"1": 600, "2": 400},
            id="second-round-after-a-queue-is-satisfied",
        ),
        pytest.param(
            9999,
            [
                queue("1", weight=6, request=10000),
                queue("2", weight=2, request=10000),
                queue("3", weight=1, request=10000),
            ],
            {"1": 6666, "2": 2222, "3": 1111},  # 9999 x 6/9, 2/9, 1/9
            id="three-weights",
        ),
        pytest.param(
            45,
            [
                queue("1", quota=12, weight=12, request=32.55),
                queue("2", quota=7, weight=7, request=9.5),
                queue("3", quota=2, weight=2, limit=2, request=1.65),
            ],
            # deserved 12 + 7 + 1.65, 24.35 over quota offered 12:7; "2" takes its 2.5, and the
            # next round covers the 20.55 "1" still wants
            {"1": 32.55, "2": 9.5, "3": 1.65},
            id="fractional-requests",
        ),
    ],
)
def test_kai_single_level_scenarios(
    total: float, queues: list[QueueShareInput], expected: dict[str, float]
) -> None:
    assert gpu_shares(queues, total) == pytest.approx(expected)


def test_largest_rest_gets_the_leftover_unit() -> None:
    # 7 over quota split 1:4 = 1.4 / 5.6 -> 1 / 5, and the spare GPU goes to the 0.6 rest
    shares = gpu_shares(
        [
            queue("a", quota=2, weight=1, request=10, creation=1),
            queue("b", quota=2, weight=4, request=10, creation=2),
        ],
        11,
    )
    assert shares == {"a": 3, "b": 8}


def test_equal_rests_go_to_the_older_queue() -> None:
    # 3.5 each -> 3 each; the spare GPU goes to "b", created first
    shares = gpu_shares(
        [
            queue("a", quota=2, request=6, creation=20),
            queue("b", quota=2, request=6, creation=10),
        ],
        11,
    )
    assert shares == {"a": 5, "b": 6}


def test_equal_rests_and_ages_go_by_name_never_by_uid() -> None:
    # KAI's queue UID is its name (queue_info.go): a real apiserver's random uid must not
    # decide (side by side with KAI, scenario 19)
    shares = gpu_shares([queue("b", request=6), queue("a", request=6)], 7)
    assert shares == {"a": 4, "b": 3}


def test_cpu_is_divided_in_whole_millicores() -> None:
    queues = [
        QueueShareInput(
            name=name,
            parent=None,
            priority=100,
            deserved=Resources(),
            limit=Resources(INF, INF, INF),
            over_quota_weight=Resources(1, 1, 1),
            request=Resources(cpu=1000),
            creation=creation,
        )
        for name, creation in (("a", 3), ("b", 1), ("c", 2))
    ]
    result = compute_fair_shares(queues, Resources(cpu=1000))
    # 333.33 each floors to 333; the spare millicore goes to the oldest
    assert {n: s.fair_share.cpu for n, s in result.items()} == {"a": 333, "b": 334, "c": 333}


def test_a_queue_gets_no_more_than_it_requests_and_the_rest_goes_to_others() -> None:
    shares = gpu_shares([queue("a", quota=10, request=5), queue("b", quota=10, request=100)], 100)
    assert shares == {"a": 5, "b": 95}


def test_leftover_never_exceeds_the_request() -> None:
    # offers 1.3 each floor to 1; of the 0.9 left, "a" (oldest) can only use 0.5 more, so 0.4
    # goes on to "b". KAI would give "a" the whole 0.9, past its request.
    shares = gpu_shares(
        [
            queue("a", request=1.5, creation=0),
            queue("b", request=100, creation=1),
            queue("c", request=100, creation=2),
        ],
        3.9,
    )
    assert shares == pytest.approx({"a": 1.5, "b": 1.4, "c": 1})


def test_unlimited_quota_at_the_top_deserves_the_whole_total() -> None:
    result = compute_fair_shares(
        [queue("a", quota=INF, request=30), queue("b", request=100)], Resources(gpu=100)
    )
    assert result["a"].deserved.gpu == 100
    assert (result["a"].fair_share.gpu, result["b"].fair_share.gpu) == (30, 70)


def test_unlimited_quota_in_a_child_deserves_the_parents_fair_share() -> None:
    result = compute_fair_shares(
        [
            queue("p", quota=40),
            queue("c1", parent="p", quota=INF, request=100),
            queue("c2", parent="p", request=100),
            queue("q", quota=60, request=60),
        ],
        Resources(gpu=100),
    )
    assert result["p"].fair_share.gpu == 40  # quotas use up the whole total
    assert result["c1"].deserved.gpu == 40
    assert (result["c1"].fair_share.gpu, result["c2"].fair_share.gpu) == (40, 0)


def test_quotas_are_honoured_even_beyond_the_total() -> None:
    # as in KAI, the deserved pass gives every queue min(quota, request) first
    assert gpu_shares([queue("a", quota=5, request=5), queue("b", request=5)], 1) == {
        "a": 5,
        "b": 0,
    }
    assert gpu_shares([queue("a", quota=3, request=2)], 1) == {"a": 2}


def test_limit_caps_the_share() -> None:
    # offers 4 / 4: "a" needs 3 to reach its limit, "b" 4 to meet its request; 1 GPU stays idle
    shares = gpu_shares(
        [queue("a", quota=2, limit=5, request=6), queue("b", quota=2, request=6)], 12
    )
    assert shares == {"a": 5, "b": 6}


def test_zero_limit_allows_nothing_even_with_a_quota() -> None:
    shares = gpu_shares([queue("a", quota=10, limit=0, request=50), queue("b", request=100)], 100)
    assert shares == {"a": 0, "b": 100}


def test_zero_weight_gets_no_over_quota_share() -> None:
    shares = gpu_shares([queue("a", quota=10, weight=0, request=100), queue("b", request=100)], 100)
    assert shares == {"a": 10, "b": 90}
    # even when nobody else wants the rest
    shares = gpu_shares([queue("a", quota=10, weight=0, request=100), queue("b", request=5)], 100)
    assert shares == {"a": 10, "b": 5}


def test_higher_priority_takes_the_surplus_first() -> None:
    shares = gpu_shares(
        [queue("hi", priority=200, request=60), queue("lo", priority=100, request=100)], 100
    )
    assert shares == {"hi": 60, "lo": 40}


def test_leftover_unit_stays_with_the_higher_priority_level() -> None:
    # 3 over quota: 1.5 / 1.5 floor to 1 / 1; the spare GPU goes to the older high queue,
    # not down to the low-priority one
    shares = gpu_shares(
        [
            queue("high-1", quota=1, request=5, priority=2, creation=1),
            queue("high-2", quota=1, request=5, priority=2, creation=2),
            queue("low", quota=1, request=5, priority=1, creation=0),
        ],
        6,
    )
    assert shares == {"high-1": 3, "high-2": 2, "low": 1}


def test_children_divide_their_parents_fair_share() -> None:
    result = compute_fair_shares(
        [
            queue("A", quota=60),
            queue("B", quota=40, request=999),  # a parent's own request is ignored
            queue("a1", parent="A", quota=10, weight=1, request=100),
            queue("a2", parent="A", quota=10, weight=2, request=100),
            queue("b1", parent="B", request=10),
        ],
        Resources(gpu=100),
    )
    shares = {n: s.fair_share.gpu for n, s in result.items()}
    # B needs only 10, so A gets its 60 plus the 30 left over
    assert (shares["A"], shares["B"]) == (90, 10)
    assert (result["A"].request.gpu, result["B"].request.gpu) == (200, 10)
    # A's 90: 10 / 10 deserved, 70 split 1:2 = 23.3 / 46.7 -> 23 / 46, the spare GPU to a2
    assert (shares["a1"], shares["a2"], shares["b1"]) == (33, 57, 10)


def test_three_levels() -> None:
    shares = gpu_shares(
        [
            queue("t1", quota=50),
            queue("t2", quota=50, request=20),
            queue("m", parent="t1", limit=60),
            queue("n", parent="t1", quota=20, request=10),
            queue("x", parent="m", weight=1, request=100),
            queue("y", parent="m", weight=3, request=100),
        ],
        100,
    )
    # t1 50 + the 30 t2 does not need; m is capped by its limit, so 10 of t1's 80 stay idle;
    # m's 60 is split 1:3 among its children
    assert shares == {"t1": 80, "t2": 20, "m": 60, "n": 10, "x": 15, "y": 45}


def test_each_resource_is_divided_on_its_own() -> None:
    a = QueueShareInput(
        name="a",
        parent=None,
        priority=100,
        deserved=Resources(cpu=2000, gpu=6),
        limit=Resources(INF, INF, INF),
        over_quota_weight=Resources(1, 1, 1),
        request=Resources(cpu=8000, memory=16e9, gpu=2),
        creation=0,
    )
    b = QueueShareInput(
        name="b",
        parent=None,
        priority=100,
        deserved=Resources(),
        limit=Resources(INF, INF, INF),
        over_quota_weight=Resources(3, 1, 1),
        request=Resources(cpu=8000, memory=64e9, gpu=8),
        creation=0,
    )
    result = compute_fair_shares([a, b], Resources(cpu=10000, memory=64e9, gpu=8))
    # cpu: 2000 deserved, 8000 split 1:3; memory: a needs only 16G of its 32G offer, and b
    # gets it in a second round; gpu: a needs only 2 of its quota of 6, b takes the rest
    assert result["a"].fair_share == Resources(cpu=4000, memory=16e9, gpu=2)
    assert result["b"].fair_share == Resources(cpu=6000, memory=48e9, gpu=6)


def test_orphans_are_dropped_with_their_subtree() -> None:
    result = compute_fair_shares(
        [
            queue("a", request=5),
            queue("x", parent="missing", request=5),
            queue("x1", parent="x", request=5),
        ],
        Resources(gpu=10),
    )
    assert set(result) == {"a"}
    assert result["a"].fair_share.gpu == 5


def test_cycles_are_dropped_as_orphans() -> None:
    shares = gpu_shares(
        [
            queue("a", request=5),
            queue("c1", parent="c2", request=5),
            queue("c2", parent="c1"),
            queue("self", parent="self", request=5),
        ],
        10,
    )
    assert shares == {"a": 5}


def test_empty_input() -> None:
    assert compute_fair_shares([], Resources(100, 100, 100)) == {}


def test_a_thousand_queues() -> None:
    queues = [queue(f"d{d}", quota=10) for d in range(10)] + [
        queue(f"d{d}-{i}", parent=f"d{d}", quota=1, weight=1 + i % 3, request=i % 7)
        for d in range(10)
        for i in range(99)
    ]
    result = compute_fair_shares(queues, Resources(gpu=2000))
    assert len(result) == 1000
    # every department asks for 294 and gets an equal 200, which its children use up
    for d in range(10):
        assert result[f"d{d}"].fair_share.gpu == 200
        assert sum(result[f"d{d}-{i}"].fair_share.gpu for i in range(99)) == 200


# --- properties on random trees -------------------------------------------------------------

QUOTAS = st.sampled_from([0, 1, 5, 20, INF])
LIMITS = st.sampled_from([INF, 0, 3, 30])
WEIGHTS = st.sampled_from([0, 1, 2, 3])


@st.composite
def figures(draw: st.DrawFn, values: st.SearchStrategy[float]) -> Resources:
    """The same kind of value drawn for cpu, memory and gpu."""
    return Resources(draw(values), draw(values), draw(values))


@st.composite
def trees(draw: st.DrawFn) -> list[QueueShareInput]:
    """Up to 8 queues, at most 3 levels deep; GPU requests may be fractional."""
    queues: list[QueueShareInput] = []
    depth: dict[str, int] = {}
    for i in range(draw(st.integers(1, 8))):
        parents = [q.name for q in queues if depth[q.name] < 3]
        parent = draw(st.sampled_from([None, *parents]))
        name = f"q{i}"
        depth[name] = 1 if parent is None else depth[parent] + 1
        queues.append(
            QueueShareInput(
                name=name,
                parent=parent,
                priority=draw(st.sampled_from([50, 100, 200])),
                deserved=draw(figures(QUOTAS)),
                limit=draw(figures(LIMITS)),
                over_quota_weight=draw(figures(WEIGHTS)),
                request=Resources(
                    draw(st.integers(0, 40)),
                    draw(st.integers(0, 40)),
                    draw(st.integers(0, 160)) / 4,
                ),
                creation=draw(st.integers(0, 3)),
            )
        )
    return queues


def sibling_groups(
    queues: list[QueueShareInput], result: dict[str, QueueShare], total: Resources
) -> list[tuple[Resources, list[QueueShareInput]]]:
    """(the amount divided, the queues dividing it) for every parent and the top level."""
    groups = []
    for parent in [None, *(q.name for q in queues)]:
        kids = [q for q in queues if q.parent == parent]
        if kids:
            groups.append((total if parent is None else result[parent].fair_share, kids))
    return groups


@settings(max_examples=300, deadline=None)
@given(trees(), figures(st.integers(0, 100).map(float)))
def test_properties(queues: list[QueueShareInput], total: Resources) -> None:
    result = compute_fair_shares(queues, total)
    assert set(result) == {q.name for q in queues}
    for budget, kids in sibling_groups(queues, result, total):
        for r in RESOURCE_NAMES:
            amount = budget.get(r)
            shares = {k.name: result[k.name].fair_share.get(r) for k in kids}
            requestable = {k.name: min(k.limit.get(r), result[k.name].request.get(r)) for k in kids}
            floors = {
                k.name: min(result[k.name].deserved.get(r), requestable[k.name]) for k in kids
            }
            for k in kids:
                quota = k.deserved.get(r)
                assert result[k.name].deserved.get(r) == (amount if math.isinf(quota) else quota)
                # never more than it may use, never less than its quota covers
                assert shares[k.name] <= requestable[k.name] + TOL
                assert shares[k.name] >= floors[k.name] - TOL
            # only quotas may overcommit a level (KAI honours them regardless)
            assert sum(shares.values()) <= max(amount, sum(floors.values())) + TOL
            hungry = [
                k
                for k in kids
                if k.over_quota_weight.get(r) > 0 and shares[k.name] < requestable[k.name] - TOL
            ]
            if hungry:  # work conservation, within one unit per queue of rounding
                assert sum(shares.values()) >= amount - len(kids) - TOL


@settings(max_examples=100, deadline=None)
@given(trees(), figures(st.integers(0, 100).map(float)), st.randoms(use_true_random=False))
def test_input_order_does_not_matter(
    queues: list[QueueShareInput], total: Resources, rng: random.Random
) -> None:
    shuffled = list(queues)
    rng.shuffle(shuffled)
    assert compute_fair_shares(shuffled, total) == compute_fair_shares(queues, total)
