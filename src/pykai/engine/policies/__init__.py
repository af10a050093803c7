"""Placement policies as plugins of two seams (base.py): KAI's binpack / spread with gpupack /
gpuspread (kai.py), the FGD paper's policies (paper.py, fgd.py) and pykai's (fgd.py)."""

from __future__ import annotations

from pykai.engine.config import PlacementStrategy, TypicalShape
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
from pykai.engine.typical import PodShape, SeenPods, TypicalPods
from pykai.model import constants as c
from pykai.model.constraints import NodeConstraints, Requirement

__all__ = ["GpuChooser", "NodeScorer", "PlacementPolicy", "policy_for", "typical_pods"]

_PAPER: dict[str, NodeScorer] = {
    "dotprod": DotProductScorer(),
    "clustering": ClusteringScorer(),
    "packing": PackingScorer(),
    "bestfit": BestFitScorer(),
}


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


def policy_for(strategy: PlacementStrategy, seen: SeenPods | None = None) -> PlacementPolicy:
    """The policy a placement strategy names (typical pods learnt from ``seen``, if given)."""
    name = strategy.gpu
    if name in ("binpack", "spread"):
        chooser = KaiChooser("pack" if name == "binpack" else "spread")
        return PlacementPolicy(KaiScorer(name), KaiScorer(strategy.cpu), chooser)
    if name == "random":
        return PlacementPolicy(RandomScorer(), RandomScorer(), RandomChooser())
    if name in _PAPER:
        return PlacementPolicy(_PAPER[name], _PAPER[name], KaiChooser("pack"))
    typical = typical_pods(strategy, seen or SeenPods(strategy.typical_pods.window))
    scorer = PykaiScorer(typical) if name == "pykai" else FgdScorer(typical)
    return PlacementPolicy(scorer, scorer, FragChooser(scorer))
