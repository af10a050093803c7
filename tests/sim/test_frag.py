"""FGD's fragmentation measure, on hand-made nodes with values worked out from the paper's
definition, and against a direct (slow) transcription of that definition."""

from __future__ import annotations

import random

import numpy as np

from pykai.sim.frag import FragModel, TypicalPods
from pykai.sim.openb import TracePod

MODELS = ["P100", "T4"]


def pod(name: str, cpu: int, num_gpu: int, milli: int, spec: tuple[str, ...] = ()) -> TracePod:
    return TracePod(name, cpu, 1, num_gpu, milli, spec)


def measure(
    typical: TypicalPods, cpu: list[int], gpu: list[list[int]], model: list[int]
) -> list[float]:
    frag = FragModel.of(typical, MODELS)
    amounts = frag.of_states(np.array(cpu), np.array(gpu), np.array(model))
    return (amounts / frag.total).tolist()


def test_half_shares_half_cpu_pods() -> None:
    # Typical shapes: A = 1 CPU + 600 milli of one GPU (1/2), B = 1 CPU, no GPU (1/2).
    pods = [pod(f"a{i}", 1000, 1, 600) for i in range(5)]
    pods += [pod(f"b{i}", 1000, 0, 0) for i in range(5)]
    typical = TypicalPods.of(pods)
    cpu = [8000, 8000, 500, 8000, 8000]
    gpu = [[1000, 1000], [300, 1000], [1000, 1000], [500, 500], [0, 0]]
    assert measure(typical, cpu, gpu, [0] * 5) == [
        0.5 * 0 + 0.5 * 2000,  # A fits, no GPU below 600 free; B counts all idle GPU
        0.5 * 300 + 0.5 * 1300,  # A fits, the 300 left on GPU 0 is too little for it
        0.5 * 2000 + 0.5 * 2000,  # A lacks CPU: all idle GPU is fragment
        0.5 * 1000 + 0.5 * 1000,  # A lacks a GPU with 600 free: all idle GPU is fragment
        0.0,  # nothing idle, nothing fragmented
    ]


def test_multi_gpu_shapes_and_gpu_models() -> None:
    # A = two whole GPUs (1/4), B = 300 milli on a T4 only (1/4), C = 100 milli anywhere (1/2).
    pods = [pod("a", 1000, 2, 1000), pod("b", 1000, 1, 300, ("T4",))]
    pods += [pod(f"c{i}", 1000, 1, 100) for i in range(2)]
    typical = TypicalPods.of(pods, coverage=1.0)
    gpu = [[1000, 1000, 400], [1000, 400, 50]]
    # node 0 (P100): A fits, fragment 400; B may not use a P100: all 2400; C fits, 0
    # node 1 (T4): A lacks GPUs: all 1450; B fits, the 50 is fragment; C fits, 50
    assert measure(typical, [8000, 8000], gpu, [0, 1]) == [
        0.25 * 400 + 0.25 * 2400 + 0.5 * 0,
        0.25 * 1450 + 0.25 * 50 + 0.5 * 50,
    ]


def test_typical_pods_cover_95_percent_most_frequent_first() -> None:
    pods = [pod(f"a{i}", 1000, 1, 500) for i in range(90)]
    pods += [pod(f"b{i}", 2000, 0, 0) for i in range(6)]
    pods += [pod(f"c{i}", 3000, 0, 0) for i in range(4)]
    typical = TypicalPods.of(pods)
    assert typical.shapes == [(1000, 500, 1, ""), (2000, 0, 0, "")]  # 96 % >= 95 %: stop
    assert typical.counts == [90, 6]
    assert typical.cpu_per_gpu_milli == 2.0


def slow_fragment(typical: TypicalPods, cpu: int, gpu: list[int], model: str) -> float:
    """The paper's definition, shape by shape, as frequency-weighted GPU milli."""
    total, idle = sum(typical.counts), sum(gpu)
    out = 0.0
    for (s_cpu, milli, count, spec), n in zip(typical.shapes, typical.counts, strict=True):
        allowed = not spec or model in spec.split("|")
        fits = milli > 0 and allowed and cpu >= s_cpu and sum(g >= milli for g in gpu) >= count
        out += n / total * (sum(g for g in gpu if g < milli) if fits else idle)
    return out


def test_vectorised_measure_matches_the_definition() -> None:
    rng = random.Random(3)
    pods = [
        pod(f"p{i}", rng.choice([1000, 6000, 12_000]), n, m, rng.choice([(), ("T4",)]) if n else ())
        for i, (n, m) in enumerate(
            rng.choice([(0, 0), (1, 250), (1, 470), (1, 810), (1, 1000), (2, 1000), (4, 1000)])
            for _ in range(400)
        )
    ]
    typical = TypicalPods.of(pods, coverage=1.0)
    cpu = [rng.randrange(0, 20_000) for _ in range(50)]
    gpu = [[rng.choice([0, 50, 190, 470, 530, 1000]) for _ in range(8)] for _ in range(50)]
    model = [rng.randrange(2) for _ in range(50)]
    got = measure(typical, cpu, gpu, model)
    want = [
        slow_fragment(typical, c, g, MODELS[m]) for c, g, m in zip(cpu, gpu, model, strict=True)
    ]
    assert np.allclose(got, want)
