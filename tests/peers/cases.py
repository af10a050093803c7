"""What the side-by-side tests share: their parametrized cases (a case with a reason is a
strict expected failure naming the docs/conformance.md row) and the report of an outcome."""

from __future__ import annotations

import pytest

from pykai.compare.side_by_side import Outcome


def cases(scenarios: dict[str, str]) -> list[object]:
    """Each scenario a case; one with a reason (why the sides differ) a strict xfail."""
    return [
        pytest.param(name, marks=pytest.mark.xfail(reason=why, strict=True)) if why else name
        for name, why in scenarios.items()
    ]


def report(outcome: Outcome) -> str:
    """The outcome, its differences with both sides' values, and a failed side's log tail."""
    lines = [f"{outcome.name}: {outcome.verdict} {outcome.reasons}"]
    for found in outcome.differences:
        lines.append(f"  step {found.step} {found.field}\n    KAI:   {found.peer}")
        lines.append(f"    pykai: {found.pykai}")
    for record in outcome.records:
        if record.failure:
            lines.append(f"  {record.side}: {record.failure}\n{record.log_tail}")
    return "\n".join(lines)


def needs_kai() -> pytest.MarkDecorator:
    """A module mark: skip unless every KAI component is built (scripts/peers builds them)."""
    from pykai.kube import peer_kai, peers

    missing = ""
    try:
        for name in peer_kai.COMPONENTS:
            peers.binary(name)
    except peers.PeerMissing as exc:
        missing = str(exc)
    return pytest.mark.skipif(bool(missing), reason=missing or "the KAI components are built")
