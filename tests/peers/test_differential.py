"""Side by side with the real KAI (issue 23), through pykai.compare: a scenario of
tests/scenarios runs on a fresh control plane under KAI v0.12.0's own five components
(pykai.kube.peer_kai), and on another under ``pykai run``, both on KAI's CRDs; each side's
decisions are recorded once each step settles and compared (pykai.compare.diff: bound pods,
co-location up to identical nodes and twin pods, evictions and their actions, queue and
PodGroup status). The expected outcome is what the real KAI decided, never the scenario's
``expect``.

Where the sides disagree, docs/conformance.md ("Side by side with the real KAI") says what each
decided and why, and the case is an expected failure naming it (strict: it fails once the
sides agree)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pykai.compare.expressible import plan
from pykai.compare.scenario import Scenario, read_scenario, under_parents
from pykai.compare.side_by_side import AGREE, compare
from tests.peers.cases import cases, needs_kai, report

SCENARIOS_ROOT = Path(__file__).parents[1] / "scenarios"
# KAI v0.12.0 schedules no job whose queue has no parent (docs/conformance.md)
TOP_LEVEL_QUEUE = (
    "KAI v0.12.0 never schedules jobs of a queue without a parent (KAI #621, fixed after v0.12 "
    "by #858, n-level queues); pykai schedules them, as KAI does since: docs/conformance.md"
)
STALE_CONDITION = (
    "KAI v0.12.0 never clears a PodGroup's UnschedulableOnNodePool condition once the job runs "
    "(KAI #1888, fixed by #1908); pykai clears it, as KAI does since: docs/conformance.md"
)
# scenario -> why the sides differ as written ("": they agree)
SCENARIOS = {
    "01-gang-fits": TOP_LEVEL_QUEUE,
    # nothing fits: both leave all pending, but KAI never tries the job, so its condition has
    # no reason (pykai's: PodSchedulingErrors)
    "02-gang-all-or-nothing": TOP_LEVEL_QUEUE,
    "08-queue-limit-parent": "",
    "19-fair-share-two-levels": TOP_LEVEL_QUEUE,  # its queue b has no parent
    "27-node-selector": TOP_LEVEL_QUEUE,
    "30-never-over-allocate": TOP_LEVEL_QUEUE,
    "98-resources-not-found-reason": "",  # KAI's reason code, PodSchedulingErrors (fixed)
    "99-limit-before-quota": "",  # OverLimit up the tree before quota (fixed)
    "100-elastic-extras-no-condition": "",  # no condition while a pod holds a node (fixed)
}
# the same scenarios with each top-level leaf queue under a parent of its own (with the leaf's
# spec: pykai.compare.scenario.under_parents), so that KAI schedules them: scenario -> why the
# sides still differ ("": they agree)
UNDER_A_PARENT = {
    "01-gang-fits": "",
    "02-gang-all-or-nothing": "",
    "27-node-selector": "",
    "30-never-over-allocate": "",  # equal jobs in PodGroup name order on both sides
    # two steps: apply, then delete the running pod; b runs, and KAI keeps its condition
    "34-delete-frees-room": STALE_CONDITION,
    # found by the corpus run (docs/conformance.md, "The whole corpus"), fixed:
    "19-fair-share-two-levels": "",  # the fair-share remainder by queue name, never by uid
    "86-gang-waits-for-all-pods": "",  # a gang waiting for its pods: an event, no condition
    "87-gated-pods-not-scheduled": "",  # a queue requests what its PodGroups request
    "92-never-over-allocate-cpu-memory": "",  # nodes keep their capacity (KWOK's race)
}

pytestmark = needs_kai()


def scenario(name: str) -> Scenario:
    return read_scenario(SCENARIOS_ROOT / name, name)


def test_the_chosen_scenarios_are_expressible_on_both() -> None:
    for name in SCENARIOS:
        assert not plan(scenario(name)).problems, name
    for name in UNDER_A_PARENT:
        assert not plan(scenario(name)).problems, name
        assert under_parents(scenario(name)) != scenario(name), name  # a leaf had no parent


@pytest.mark.parametrize("name", cases(SCENARIOS))
def test_pykai_decides_as_the_real_kai(name: str, tmp_path: Path) -> None:
    outcome = compare(scenario(name), tmp_path)
    print(report(outcome))
    assert outcome.verdict == AGREE, report(outcome)


@pytest.mark.parametrize("name", cases(UNDER_A_PARENT))
def test_pykai_decides_as_the_real_kai_under_a_parent_queue(name: str, tmp_path: Path) -> None:
    outcome = compare(under_parents(scenario(name)), tmp_path)
    print(report(outcome))
    assert outcome.verdict == AGREE, report(outcome)
