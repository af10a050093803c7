"""The scenario generators of the victim solver (KAI's generator plugins nodelocalgreedy and
multinodegang, kept apart from its job solver): which sets of victims are worth trying, best
first. A generator simulates nothing; the solver (engine/actions/solver.py) tries what it
yields, in this order:

1. node-local: after each new unit, for each node it runs on (by name), the units accumulated
   so far that run on that node;
2. multi-node, for a preemptor of several pods when no node-local scenario worked: the units
   accumulated so far, restricted to the K nodes with the least GPU capacity (idle, releasing
   and the victims' GPUs) that can hold a pending pod, from the smallest K that covers the
   demand, K growing by 1, 2, 4, ... up to every node with a victim.

Both let through only the scenarios the search's capacity bound (engine/actions/
capacity_bound.py) does not rule out, checked on the units as they accumulate.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import NamedTuple, Protocol

from pykai.engine.actions.capacity_bound import Capacity, Room, feasible_mask, spare
from pykai.engine.actions.victims import VictimUnit
from pykai.engine.jobs import Task
from pykai.engine.nodes import GPU, NodeTable
from pykai.model.resources import EPS


@dataclass(frozen=True, slots=True)
class Demand:
    """What the generators know of the search they make scenarios for."""

    nodes: NodeTable
    """The cluster's nodes (the same whenever a generator reads them: the solver rolls every
    scenario back)."""
    tasks: list[Task]
    """The preemptor's pods to place (at least one)."""
    capacity: Capacity | None
    """The search's capacity bound; None for an exhaustive search, which bounds nothing."""


class Scenario(NamedTuple):
    """A set of victims to try."""

    victims: list[VictimUnit]
    """Units the generator took, in victim order."""
    bounded: bool
    """The capacity bound was checked on these victims, and holds (False: the solver checks
    it)."""


class ScenarioGenerator(Protocol):
    """Makes the scenarios of one search (KAI's ScenarioGenerator).

    Called with the search's demand and its victim units in KAI's victim order
    (engine/actions/victims.py), it yields scenarios, best first. It may:

    - take units from ``units``, and only as it needs them: a search that stops early leaves
      the victim order unread beyond what the generator took;
    - read ``demand`` and the node table.

    It must not change the session, the node table or the units, and it simulates nothing.
    A scenario's ``victims`` may be a list the generator keeps and grows later: the solver
    reads it before asking for the next scenario. The same scenario may come more than once
    (the solver tries each once). With no bound (``demand.capacity`` None) it yields every
    scenario its rule makes. When it returns, it has nothing more to offer.
    """

    def __call__(self, demand: Demand, units: Iterator[VictimUnit]) -> Iterator[Scenario]: ...


def node_local(demand: Demand, units: Iterator[VictimUnit]) -> Iterator[Scenario]:
    """KAI's NodeLocalGreedy: after each new unit, the accumulated units on each of its
    nodes (those the bound lets through, and said to be so)."""
    on_node: dict[str, list[VictimUnit]] = {}
    rooms: dict[str, Room] = {}  # node -> what its units give back, for the bound
    capacity = demand.capacity
    for unit in units:
        tasks = unit.tasks
        nodes = [tasks[0].node] if len(tasks) == 1 else sorted({t.node for t in tasks})
        for node in nodes:
            units_on_node = on_node.get(node)
            if units_on_node is None:
                units_on_node = on_node[node] = []
            units_on_node.append(unit)
            if capacity is not None:
                room = rooms.get(node)
                if room is None:
                    room = rooms[node] = capacity.room()
                room.add(tasks)
        for node in nodes:
            if capacity is None or rooms[node].holds():
                yield Scenario(on_node[node], True)


def multi_node(demand: Demand, units: Iterator[VictimUnit]) -> Iterator[Scenario]:
    """KAI's MultiNodeGang: the accumulated units on the K nodes of least GPU capacity
    that could hold a pod, from the smallest K that covers the demand (with the idle and
    releasing GPUs of nodes without victims), K growing by 1, 2, 4, ... to all of them."""
    nodes, tasks = demand.nodes, demand.tasks
    free = spare(nodes)[:, GPU]
    mask = feasible_mask(nodes, tasks)
    wanted = sum(t.request.gpu for t in tasks)
    smallest = min(t.request.gpu for t in tasks)
    baseline = float(free[mask].sum())
    taken: list[VictimUnit] = []
    room = None if demand.capacity is None else demand.capacity.room()
    on_node: dict[str, list[int]] = {}  # node -> indexes of the units with a pod on it
    gpus: dict[str, float] = {}  # node -> GPUs the units hold on it

    def capacity(node: str) -> float:
        row = nodes.index.get(node)
        return gpus[node] + (float(free[row]) if row is not None else 0.0)

    for unit in units:
        index = len(taken)
        taken.append(unit)
        for task in unit.tasks:
            indexes = on_node.setdefault(task.node, [])
            if not indexes or indexes[-1] != index:
                indexes.append(index)
            gpus[task.node] = gpus.get(task.node, 0.0) + task.request.gpu
        if room is not None:
            room.add(unit.tasks)
            if not room.holds():
                continue
        viable = sorted(
            (n for n in on_node if smallest <= 0 or capacity(n) >= smallest - EPS),
            key=lambda n: (capacity(n), on_node[n][0]),
        )
        rows = [nodes.index[n] for n in on_node if n in nodes.index]
        rest = baseline - float(free[[r for r in rows if mask[r]]].sum())
        count = _smallest_covering([capacity(n) for n in viable], wanted - rest)
        step = 1
        while count <= len(viable):
            chosen = sorted({i for n in viable[:count] for i in on_node[n]})
            yield Scenario([taken[i] for i in chosen], False)
            if count >= len(viable):
                break
            count, step = min(count + step, len(viable)), step * 2


def generators(demand: Demand) -> list[ScenarioGenerator]:
    """The generators a search tries, in KAI's order: node-local, then multi-node for a
    preemptor of several pods (one pod needs one node: node-local scenarios cover it)."""
    if len(demand.tasks) > 1:
        return [node_local, multi_node]
    return [node_local]


def _smallest_covering(capacities: list[float], demand: float) -> int:
    """The smallest K whose first K capacities reach ``demand`` (0 if nothing is needed,
    more than there are if they never do)."""
    if demand <= 0:
        return 0
    total = 0.0
    for k, capacity in enumerate(capacities, start=1):
        total += capacity
        if total >= demand - EPS:
            return k
    return len(capacities) + 1
