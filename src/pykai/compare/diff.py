"""Two records of one scenario compared: the peer's (the expected outcome) and pykai's.

Contract of ``differences(peer, pykai)``: one ``Difference`` per step and field where the
records' canonical views differ, in step order, each with both sides' values as plain data:

- ``bound``: the classes of the bound pods;
- ``packing``: the pods together on each node, up to identical nodes and twin pods;
- ``sharing``: the pods together on each shared GPU (GPU group) of each node, up to identical
  nodes, the devices of a node and twin pods (``Record.sharing``);
- ``evicted``: the pods evicted during the step (pod class, node class, actions); an action
  only one side names is compared as it is, so a side that says none differs;
- ``queue <name> <field>``: ``allocated``, ``allocatedNonPreemptible`` and ``requested`` of
  every queue either side wrote a status for;
- ``podgroup <key> reasons`` and ``podgroup <key> allocated``: the scheduling condition's
  reasons and ``resourcesStatus.allocated`` (a PodGroup a grouper made is keyed by its owner);
- ``grouped <owner> <field>``: what the pod-grouper put in the PodGroup it made for an owner
  (``min_member``, ``queue``, ``priority_class``, ``preemptibility``, ``sub_groups``), or
  ``grouped <owner>`` when only one side made one.

Not compared (docs/compare.md): pykai's PodGroup ``phase``, ``running`` and ``pending`` (no
KAI v0.12.0 component writes them), the Queue conditions (pykai's ``FairShare`` is its own),
the PodGroups' ``created`` (each side's own clock; ``run`` checks their order) and a step's
``recreated`` (the controller sees every deletion on its watch, the reads 0.25 s apart can
miss a pod bound and evicted between two of them, so the count differs by one from run to
run on either side; ``evicted`` is the compared view).
A failed side is one ``failure`` difference; steps the two records do not both have are
``step`` differences."""

from __future__ import annotations

from dataclasses import dataclass

from pykai.compare.record import Record, StepRecord


@dataclass(frozen=True)
class Difference:
    """At scenario step ``step``, ``field`` is ``peer`` on the peer and ``pykai`` on pykai."""

    step: int
    field: str
    peer: object
    pykai: object


QUEUE_FIELDS = {
    "allocated": "allocated",
    "allocatedNonPreemptible": "allocated_non_preemptible",
    "requested": "requested",
}
GROUPED_FIELDS = ("min_member", "queue", "priority_class", "preemptibility", "sub_groups")


def differences(peer: Record, pykai: Record) -> list[Difference]:
    """What differs (see the module's contract)."""
    if peer.failure or pykai.failure:
        return [Difference(0, "failure", peer.failure, pykai.failure)]
    found: list[Difference] = []
    ours = {s.number: s for s in pykai.steps}
    for step in peer.steps:
        other = ours.pop(step.number, None)
        if other is None:
            found.append(Difference(step.number, "step", "recorded", "missing"))
            continue
        found += _step(peer, step, pykai, other)
    found += [Difference(n, "step", "missing", "recorded") for n in sorted(ours)]
    return found


def _step(peer: Record, a: StepRecord, pykai: Record, b: StepRecord) -> list[Difference]:
    found = []
    views: dict[str, tuple[object, object]] = {
        "bound": (peer.bound(a), pykai.bound(b)),
        "packing": (peer.packing(a), pykai.packing(b)),
        "sharing": (peer.sharing(a), pykai.sharing(b)),
        "evicted": (peer.evicted(a), pykai.evicted(b)),
    }
    for name, (mine, theirs) in views.items():
        if mine != theirs:
            found.append(Difference(a.number, name, mine, theirs))
    for queue in sorted(set(a.queues) | set(b.queues)):
        qa, qb = a.queues.get(queue), b.queues.get(queue)
        for written, attribute in QUEUE_FIELDS.items():
            left = getattr(qa, attribute) if qa else None
            right = getattr(qb, attribute) if qb else None
            if (left or {}) != (right or {}):
                found.append(Difference(a.number, f"queue {queue} {written}", left, right))
    for group in sorted(set(a.podgroups) | set(b.podgroups)):
        ga, gb = a.podgroups.get(group), b.podgroups.get(group)
        for attribute in ("reasons", "allocated"):
            left = getattr(ga, attribute) if ga else None
            right = getattr(gb, attribute) if gb else None
            if left != right:
                found.append(Difference(a.number, f"podgroup {group} {attribute}", left, right))
    for owner in sorted(set(a.grouped) | set(b.grouped)):
        made, ours = a.grouped.get(owner), b.grouped.get(owner)
        if made is None or ours is None:
            found.append(Difference(a.number, f"grouped {owner}", made, ours))
            continue
        for attribute in GROUPED_FIELDS:
            left, right = getattr(made, attribute), getattr(ours, attribute)
            if left != right:
                found.append(Difference(a.number, f"grouped {owner} {attribute}", left, right))
    return found
