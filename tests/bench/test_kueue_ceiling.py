"""The ceiling of ``--shape kueue`` (bench/kueue_ceiling.py): an instant admitter on quota alone,
checked against a case worked by hand, and on the shape itself."""

from __future__ import annotations

import pytest

from pykai.bench.kueue_ceiling import hold_for, jobs, simulate
from pykai.bench.kueue_shape import KUEUE_SHAPE, KueueShape, WorkloadClass, measured

# one cohort of two ClusterQueues of 2 CPUs, each may borrow 1 (so holds 3; the cohort 4);
# per ClusterQueue 3 small Jobs (1 CPU, 200 ms, at 0.1, 0.2, 0.3 s) and a large one (3 CPUs,
# priority 200, 100 ms, at 0.15 s)
TINY = KueueShape(
    cohorts=1,
    queues_per_cohort=2,
    nominal_cpu=2,
    borrowing_limit_cpu=1,
    classes=(
        WorkloadClass("small", 3, 100, 200, 50, 1),
        WorkloadClass("large", 1, 150, 100, 200, 3),
    ),
    scale=1,
)
Q0, Q1 = "cq-0-0-cohort-0", "cq-0-1-cohort-0"


def test_a_tiny_case_worked_by_hand() -> None:
    # 0.1: both first smalls in (queues 1 + 1, cohort 2). 0.15: each large needs 3 on top of
    # its queue's 1: over its 3. 0.2: the larges still not; the second smalls in (cohort 4).
    # 0.3: the first smalls out, the third ones in (the larges still 1 + 3 > 3). 0.4: the
    # second smalls out; the larges still not. 0.5: the third out: Q0's large in (cohort 3),
    # Q1's would make the cohort 6 > 4. 0.6: Q0's large out, Q1's in.
    ceiling = simulate(TINY)
    assert ceiling.admitted_at == {
        f"{Q0}/small-0-0-0": 0.1,
        f"{Q1}/small-0-0-0": 0.1,
        f"{Q0}/small-0-1-0": 0.2,
        f"{Q1}/small-0-1-0": 0.2,
        f"{Q0}/small-0-2-0": 0.3,
        f"{Q1}/small-0-2-0": 0.3,
        f"{Q0}/large-1-0-0": 0.5,
        f"{Q1}/large-1-0-0": pytest.approx(0.6),
    }
    assert ceiling.all_admitted_s == pytest.approx(0.5)
    assert ceiling.admissions_per_s == pytest.approx(16.0)
    assert ceiling.waits["small"] == (0.0, 0.0)
    assert ceiling.waits["large"] == (pytest.approx(0.4), pytest.approx(0.45))


def test_a_hold_delays_every_release() -> None:
    # with 1 s more per Job the smalls of 0.1 and 0.2 hold their queues to 1.3 and 1.4: the
    # third smalls wait for room in the cohort (4 in use) until 1.3; the larges until the
    # last small is out (2.5, then 3.6 once Q0's large is out)
    ceiling = simulate(TINY, hold_s=1.0)
    assert ceiling.admitted_at[f"{Q0}/small-0-2-0"] == pytest.approx(1.3)
    assert ceiling.admitted_at[f"{Q0}/large-1-0-0"] == pytest.approx(2.5)
    assert ceiling.admitted_at[f"{Q1}/large-1-0-0"] == pytest.approx(3.6)
    assert hold_for(TINY, ceiling.all_admitted_s) == pytest.approx(1.0, abs=0.02)
    assert hold_for(TINY, 0.1) == 0.0


def test_the_simulated_jobs_are_the_benchs() -> None:
    made = {(a.key, a.at_s, a.cls) for a in measured(KUEUE_SHAPE, "pykai")}
    assert {(j.key, j.at_s, j.cls.name) for j in jobs(KUEUE_SHAPE)} == made


def test_on_the_shape_the_quota_fills_once() -> None:
    # per cohort the smalls and mediums (102 CPUs) fit in its 120 at once; the larges (6 of
    # 20) arrive at 1.2 s, four fit, two wait for the mediums of 1.0 s to end at 1.5 s
    ceiling = simulate(KUEUE_SHAPE)
    assert ceiling.jobs == 300
    assert ceiling.all_admitted_s == pytest.approx(1.4)
    assert ceiling.waits["small"] == (0.0, 0.0)
    assert ceiling.waits["large"][1] == pytest.approx(0.3)
