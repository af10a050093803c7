"""Reduced parity with the FGD paper: two seeds of two policies, replayed through the scheduler,
land within ±0.5 pp of the paper's published median unallocated GPU at arrival 100 (the full
check, six policies × seeds 42-51, is bench/results/fgd.md)."""

from __future__ import annotations

import pytest

from pykai.sim.fgd import published_medians, run_fgd
from tests.sim.conftest import NODES_CSV, PODS_CSV


@pytest.mark.parametrize("policy", ["bestfit", "fgd"])
def test_two_seeds_land_near_the_published_median(policy: str) -> None:
    result = run_fgd(NODES_CSV, PODS_CSV, policy, [42, 43])
    ours = result["median_unallocated_gpu_pct"][100]
    assert ours == pytest.approx(published_medians(policy)[100], abs=0.5)
