"""Shared GPUs side by side with the real KAI (issue 23): scenarios with ``gpu-fraction`` run
under KAI v0.12.0 with kai-admission and the reservation stand-in
(pykai.kube.peer_kai.start_admission, pykai.kube.reservations), and under ``pykai run``; the
pods sharing each device (GPU groups, pykai.compare.record.Record.sharing) are compared with
the rest of the decisions. The expected outcome is what the real KAI decided.

Skipped when KAI's binaries (kai-admission among them) are not built: ``scripts/peers``."""

from __future__ import annotations

from pathlib import Path

import pytest

from pykai.compare.scenario import Scenario, read_scenario, under_parents
from pykai.compare.side_by_side import AGREE, Batch
from pykai.kube import peer_kai, peers
from tests.peers.cases import report

SCENARIOS_ROOT = Path(__file__).parents[1] / "scenarios"
SHARE = "72-gpu-fractions-share-a-group"  # 0.7 and 0.2 of a GPU: one device
SCENARIOS = (SHARE, "73-gpu-fractions-spread", "74-gpu-fraction-never-spans-devices")

try:
    for _name in peer_kai.COMPONENTS:
        peers.binary(_name)
except peers.PeerMissing as missing:  # scripts/peers builds them
    pytestmark = pytest.mark.skip(reason=str(missing))


def scenario(name: str) -> Scenario:
    return under_parents(read_scenario(SCENARIOS_ROOT / name, name))


def test_shared_gpus_decide_as_the_real_kai(tmp_path: Path) -> None:
    with Batch(tmp_path) as batch:
        outcomes = [batch.compare(scenario(name)) for name in SCENARIOS]
    print("\n".join(report(o) for o in outcomes))
    assert [o.verdict for o in outcomes] == [AGREE] * len(SCENARIOS), "\n".join(
        report(o) for o in outcomes
    )
    shared = outcomes[0]
    kai = next(r for r in shared.records if r.side == "kai")
    node = kai.node_class["n1"]
    # the real KAI bound both fractions through its binder, into one GPU group
    assert kai.sharing(kai.steps[0]) == [(node, (("default/a", "default/b"),))]
