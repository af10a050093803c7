"""Placement policies as plugins of two seams (base.py): KAI's binpack / spread with gpupack /
gpuspread (kai.py), the FGD paper's policies (paper.py, fgd.py) and pykai's (fgd.py)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

from pykai.engine.policies.base import GpuChooser, NodeScorer, PlacementPolicy
from pykai.engine.policies.fgd import FgdScorer, FragChooser, PykaiScorer
from pykai.engine.policies.kai import KaiChooser, KaiScorer
from pykai.engine.policies.paper import (
    BestFitScorer,
    ClusteringScorer,
    DotProductScorer,
    PackingScorer,
    RandomChooser,
    RandomScorer,
)
from pykai.engine.settings import PlacementStrategy, TypicalShape
from pykai.engine.typical import PodShape, SeenPods, TypicalPods
from pykai.model import constants as c
from pykai.model.constraints import NodeConstraints, Requirement

__all__ = [
    "POLICIES",
    "GpuChooser",
    "NodeScorer",
    "PlacementPolicy",
    "PolicyFactory",
    "policy_for",
    "typical_pods",
]

PolicyFactory = Callable[[PlacementStrategy, SeenPods | None], PlacementPolicy]
"""Makes a registered policy for a placement strategy (its ``cpu`` and ``typicalPods`` as the
policy reads them), learning typical pods from the pods seen, if given; it must not change
what it is given."""


def shape_from(given: TypicalShape) -> PodShape:
    """A configured shape; its GPU models become a required node affinity on the GPU product
    label, as a pod restricted to those models would carry."""
    models = tuple(given.gpu_models)
    constraints = (
        NodeConstraints(affinity_terms=((Requirement(c.GPU_PRODUCT_NODE_LABEL, "In", models),),))
        if models
        else NodeConstraints()
    )
    milli = given.gpu_milli if given.gpus else 0
    return PodShape(
        given.cpu_milli, milli, given.gpus if milli else 0, constraints, "|".join(models)
    )


def typical_pods(strategy: PlacementStrategy, seen: SeenPods) -> TypicalPods:
    """The typical pods ``strategy`` asks for: the shapes given, else the pods seen lately."""
    config = strategy.typical_pods
    if config.shapes is not None:
        shapes = [shape_from(s) for s in config.shapes]
        return TypicalPods(tuple(shapes), tuple(s.count for s in config.shapes))
    seen.resize(config.window)
    return seen.typical(config.coverage)


def _kai(name: Literal["binpack", "spread"]) -> PolicyFactory:
    """KAI's binpack or spread, with gpupack or gpuspread; CPU-only pods as ``cpu`` says."""
    devices: Literal["pack", "spread"] = "pack" if name == "binpack" else "spread"
    return lambda strategy, _: PlacementPolicy(
        KaiScorer(name), KaiScorer(strategy.cpu), KaiChooser(devices)
    )


def _random(_: PlacementStrategy, __: SeenPods | None) -> PlacementPolicy:
    return PlacementPolicy(RandomScorer(), RandomScorer(), RandomChooser())


def _paper(scorer: NodeScorer) -> PolicyFactory:
    """One of the FGD paper's scorers, for every pod, with KAI's gpupack."""
    return lambda _, __: PlacementPolicy(scorer, scorer, KaiChooser("pack"))


def _fragmentation(kind: type[FgdScorer]) -> PolicyFactory:
    """FGD or pykai's: fragmentation growth against the typical pods."""

    def make(strategy: PlacementStrategy, seen: SeenPods | None) -> PlacementPolicy:
        typical = typical_pods(strategy, seen or SeenPods(strategy.typical_pods.window))
        scorer = kind(typical)
        return PlacementPolicy(scorer, scorer, FragChooser(scorer))

    return make


POLICIES: dict[str, PolicyFactory] = {
    "binpack": _kai("binpack"),
    "spread": _kai("spread"),
    "random": _random,
    "dotprod": _paper(DotProductScorer()),
    "clustering": _paper(ClusteringScorer()),
    "packing": _paper(PackingScorer()),
    "bestfit": _paper(BestFitScorer()),
    "fgd": _fragmentation(FgdScorer),
    "pykai": _fragmentation(PykaiScorer),
}
"""Every placement policy, by the name ``placementStrategy.gpu`` gives it: KAI's two, the FGD
paper's and pykai's. The configuration accepts these names and no others (engine/config.py
derives them from here)."""


def policy_for(strategy: PlacementStrategy, seen: SeenPods | None = None) -> PlacementPolicy:
    """The policy a placement strategy names (typical pods learnt from ``seen``, if given)."""
    return POLICIES[strategy.gpu](strategy, seen)
