"""Variants of a trace, made by resampling it with a seed, to check that a policy's advantage is
not an accident of the default trace (the FGD paper evaluates several such variants).

- ``sharing``: 80 % of the GPU pods share a GPU (the default trace: about 44 %);
- ``multigpu``: 30 % of the GPU pods ask for 2, 4 or 8 whole GPUs (default: about 1 %);
- ``gpuspec``: 33 % of the GPU pods may only use one GPU model, or two, drawn in proportion to
  the cluster's GPUs of each model (default: none);
- ``cpu``: twice as many CPU-only pods (default: about 13 % of pods).

Every variant keeps the number of pods; pods are drawn with replacement from the matching class
of the trace, and renamed ``<kind>-<n>`` so that names stay unique.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable
from dataclasses import replace

from pykai.model.errors import InvalidRequest
from pykai.sim.openb import TraceNode, TracePod

VARIANTS = ("sharing", "multigpu", "gpuspec", "cpu")


def _resample(
    pods: list[TracePod], rng: random.Random, is_target: Callable[[TracePod], bool], share: float
) -> list[TracePod]:
    """Among ``pods``, make ``share`` of them targets by drawing targets and others with
    replacement from their own classes."""
    targets = [p for p in pods if is_target(p)]
    others = [p for p in pods if not is_target(p)]
    wanted = round(share * len(pods))
    return [rng.choice(targets) for _ in range(wanted)] + [
        rng.choice(others) for _ in range(len(pods) - wanted)
    ]


def _with_specs(
    gpu_pods: list[TracePod], nodes: list[TraceNode], rng: random.Random, share: float
) -> list[TracePod]:
    """Constrain ``share`` of the GPU pods to one or two GPU models (weighted by GPUs)."""
    weights = Counter[str]()
    for node in nodes:
        weights[node.model] += node.gpus
    models = sorted(m for m in weights if m and weights[m])
    out = []
    for pod in gpu_pods:
        if rng.random() < share:
            chosen = set(rng.choices(models, [weights[m] for m in models], k=rng.choice((1, 2))))
            out.append(replace(pod, gpu_spec=tuple(sorted(chosen))))
        else:
            out.append(pod)
    return out


def make_variant(
    pods: list[TracePod], nodes: list[TraceNode], kind: str, seed: int
) -> list[TracePod]:
    """A variant of ``pods`` (see the module docstring), reproducible from ``seed``."""
    if kind not in VARIANTS:
        raise InvalidRequest(f"unknown variant {kind!r}; known: {', '.join(VARIANTS)}")
    rng = random.Random(f"{kind}/{seed}")
    ordered = sorted(pods, key=lambda p: p.name)
    gpu_pods = [p for p in ordered if p.num_gpu]
    cpu_pods = [p for p in ordered if not p.num_gpu]
    if kind == "cpu":
        result = _resample(ordered, rng, lambda p: not p.num_gpu, 2 * len(cpu_pods) / len(ordered))
    elif kind == "sharing":
        result = cpu_pods + _resample(gpu_pods, rng, lambda p: p.is_sharing, 0.8)
    elif kind == "multigpu":
        result = cpu_pods + _resample(gpu_pods, rng, lambda p: p.num_gpu > 1, 0.3)
    else:
        result = cpu_pods + _with_specs(gpu_pods, nodes, rng, 0.33)
    return [replace(p, name=f"{kind}-{i:05d}") for i, p in enumerate(result)]
