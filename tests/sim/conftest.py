"""Small hand-made traces for the openb replay tests."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from pykai.sim.openb import TraceNode, TracePod

DATA = Path(__file__).resolve().parents[2] / "data"
NODES_CSV = DATA / "openb" / "openb_node_list_gpu_node.csv"
PODS_CSV = DATA / "openb" / "openb_pod_list_default.csv"


def small_nodes() -> list[TraceNode]:
    """Ten nodes of three models with 0 to 8 GPUs; CPU and memory tight enough to matter."""
    shapes = [(0, ""), (1, "T4"), (2, "T4"), (2, "P100"), (4, "V100"), (8, "V100")]
    return [
        TraceNode(f"n{i:02d}", 24_000 + 4000 * (i % 3), 64_000, *shapes[i % len(shapes)])
        for i in range(10)
    ]


def small_pods(count: int = 120, seed: int = 1) -> list[TracePod]:
    """A mix of CPU pods, shares, whole GPUs and multi-GPU pods, some bound to GPU models."""
    rng = random.Random(seed)
    kinds = [(0, 0), (1, 300), (1, 470), (1, 810), (1, 1000), (2, 1000), (4, 1000)]
    specs = [(), (), (), ("T4",), ("P100", "V100")]
    pods = []
    for i in range(count):
        num_gpu, milli = rng.choice(kinds)
        pods.append(
            TracePod(
                f"p{i:04d}",
                rng.choice([1000, 4000, 8000]),
                rng.choice([1000, 8000, 16_000]),
                num_gpu,
                milli,
                rng.choice(specs) if num_gpu else (),
            )
        )
    return pods


@pytest.fixture
def nodes() -> list[TraceNode]:
    """See :func:`small_nodes`."""
    return small_nodes()


@pytest.fixture
def pods() -> list[TracePod]:
    """See :func:`small_pods`."""
    return small_pods()
