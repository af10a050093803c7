"""What a scheduling cycle decides, for a backend to carry out."""

from __future__ import annotations

from dataclasses import dataclass, field

from pykai.model.positions import Reason as Reason  # noqa: PLC0414 (re-exported, for the cycle)
from pykai.model.resources import Resources


@dataclass(frozen=True, slots=True)
class Choice:
    """Why a node was chosen: the scorer, its score there, and the next best node and its
    score (no runner-up: empty and None)."""

    scorer: str
    score: float
    runner_up: str = ""
    runner_up_score: float | None = None

    def describe(self) -> str:
        """In words: ``by fgd (score 62; runner-up node-b, 61)``."""
        text = f"by {self.scorer} (score {self.score:.6g}"
        if self.runner_up:
            text += f"; runner-up {self.runner_up}, {self.runner_up_score:.6g}"
        return text + ")"


@dataclass(frozen=True, slots=True)
class Bind:
    """Bind pod ``namespace/name`` to ``node``."""

    namespace: str
    name: str
    uid: str
    node: str
    gpu_groups: tuple[str, ...] = ()  # shared-GPU groups the pod was placed on
    gpu_portion: float = 0.0  # portion of each shared device (0 for whole GPUs)
    choice: Choice | None = None  # how the node was chosen (None: not by a scorer)


EVICTING_ACTIONS = {
    "Preempted": "preempt",
    "Reclaimed": "reclaim",
    "Consolidated": "consolidation",
    "StaleGang": "stalegangeviction",
}
"""Each eviction reason of the engine -> the action (KAI's name) that evicts for it."""


@dataclass(frozen=True, slots=True)
class Evict:
    """Evict (delete) pod ``namespace/name``: ``action`` evicts it, for ``reason``, to make
    room for the job ``preemptor``. Facts, not text: a host formats the event from them
    (controllers/outcome.py), and a reader takes them as they are."""

    namespace: str
    name: str
    uid: str
    job: str  # the victim's PodGroup key
    reason: str  # pykai's finer reason: Preempted, Reclaimed, Consolidated, StaleGang
    message: str  # why, in words
    action: str = ""  # the action (KAI's name); "" for the one EVICTING_ACTIONS gives reason
    preemptor: str = ""  # the PodGroup key of the job it makes room for ("": none, a stale gang)

    def __post_init__(self) -> None:
        if not self.action:
            action = EVICTING_ACTIONS.get(self.reason, self.reason.lower())
            object.__setattr__(self, "action", action)  # frozen: set once, here


@dataclass(frozen=True, slots=True)
class QueueStatus:
    """A queue's figures at the end of the cycle (engine units)."""

    deserved: Resources
    fair_share: Resources
    allocated: Resources
    allocated_non_preemptible: Resources
    requested: Resources


@dataclass(slots=True)
class CycleResult:
    """Everything one cycle decided."""

    binds: list[Bind] = field(default_factory=list)
    evictions: list[Evict] = field(default_factory=list)
    pipelined: list[str] = field(default_factory=list)  # pod keys "ns/name"
    unschedulable: dict[str, list[Reason]] = field(default_factory=dict)  # job key -> reasons
    started: dict[str, float] = field(default_factory=dict)  # job key -> (re)start time
    stale: dict[str, float | None] = field(default_factory=dict)  # job key -> stale since / None
    queues: dict[str, QueueStatus] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)  # phase -> seconds
    action_timings: dict[str, float] = field(default_factory=dict)  # action -> seconds
    # action -> pending jobs it did not try because its search budget was spent
    out_of_budget: dict[str, int] = field(default_factory=dict)
    untried: dict[str, dict[str, int]] = field(default_factory=dict)  # the same, by leaf queue
