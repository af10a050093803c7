"""``pykai compare``: scenarios side by side with the real KAI (pykai.compare)."""

from __future__ import annotations

import dataclasses
import json
import tempfile
from pathlib import Path
from typing import Annotated

import typer

from pykai.cli.errors import fail

SeedsOption = Annotated[
    int, typer.Option("--seeds", help="Also run this many seeded random scenarios", min=0)
]


def compare(
    scenarios: Annotated[
        list[Path] | None, typer.Argument(help="Scenario folders (tests/scenarios format)")
    ] = None,
    peer: Annotated[str, typer.Option("--peer", help="The real scheduler: kai")] = "kai",
    output: Annotated[str, typer.Option("--output", "-o", help="table|json")] = "table",
    seeds: SeedsOption = 0,
    first_seed: Annotated[int, typer.Option("--first-seed", help="The first seed")] = 0,
    parent_queues: Annotated[
        bool,
        typer.Option(
            "--parent-queues",
            help="Give each top-level leaf queue a parent of its own with the same spec "
            "(KAI v0.12.0 schedules no job of a queue without a parent)",
        ),
    ] = False,
    max_advance: Annotated[
        float,
        typer.Option(
            "--max-advance",
            help="Replay an advance of up to this many seconds as a real wait (longer ones: "
            "not expressible)",
            min=0,
        ),
    ] = 5.0,
    work: Annotated[
        Path | None,
        typer.Option(
            "--work",
            help="Where clusters, logs and generated seeds go (default: a "
            "new temporary folder, kept)",
        ),
    ] = None,
) -> None:
    """Run each scenario on a local cluster under the real peer and under ``pykai run`` (one
    cluster per side for the whole run, emptied between two scenarios); print per scenario:
    agree, differ (with each side's decision), failed (with the log's tail) or not
    expressible (with the reason). Exit 1 on any difference or failure."""
    from pykai.compare.generator import write
    from pykai.compare.scenario import ScenarioError, read_scenario, under_parents
    from pykai.compare.side_by_side import AGREE, NOT_EXPRESSIBLE, Batch, Outcome

    if peer != "kai":
        fail(f'unknown peer "{peer}": only kai')
    if output not in ("table", "json"):
        fail(f'unknown output format "{output}": use json or table')
    if not scenarios and not seeds:
        fail("give scenario folders or --seeds N")
    root = (work or Path(tempfile.mkdtemp(prefix="pykai-compare-"))).resolve()
    try:
        folders = [read_scenario(path, str(path)) for path in scenarios or []]
    except ScenarioError as exc:
        fail(str(exc))
    for seed in range(first_seed, first_seed + seeds):
        folders.append(write(seed, root / "seeds" / f"seed-{seed}"))
    if parent_queues:
        folders = [under_parents(scenario) for scenario in folders]
    outcomes: list[Outcome] = []
    with Batch(root / "runs", peer=peer, advance_limit=max_advance) as batch:
        for scenario in folders:
            outcome = batch.compare(scenario)
            outcomes.append(outcome)
            if output == "table":
                typer.echo(_row(outcome))
            else:
                typer.echo(json.dumps(_as_json(outcome)))
    if output == "table":
        counts = {v: sum(o.verdict == v for o in outcomes) for v in {o.verdict for o in outcomes}}
        typer.echo(f"{len(outcomes)} scenario(s): {json.dumps(counts)}; work in {root}")
    if any(o.verdict not in (AGREE, NOT_EXPRESSIBLE) for o in outcomes):
        raise typer.Exit(1)


def _row(outcome: object) -> str:
    from pykai.compare.side_by_side import Outcome

    assert isinstance(outcome, Outcome)
    lines = [f"{outcome.name}\t{outcome.verdict}"]
    lines += [f"  reason: {reason}" for reason in outcome.reasons]
    lines += [f"  skipped: {skip}" for skip in outcome.skipped]
    for found in outcome.differences:
        lines.append(f"  step {found.step} {found.field}:")
        lines.append(f"    kai:   {found.peer}")
        lines.append(f"    pykai: {found.pykai}")
    for record in outcome.records:
        if record.failure:
            lines.append(f"  {record.side} log tail:")
            lines += [f"    {line}" for line in record.log_tail.splitlines()[-30:]]
    return "\n".join(lines)


def _as_json(outcome: object) -> object:
    from pykai.compare.side_by_side import Outcome

    assert isinstance(outcome, Outcome)
    found = dataclasses.asdict(outcome)
    found["records"] = [
        {"side": r.side, "failure": r.failure, "log_tail": r.log_tail, "seconds": r.seconds}
        for r in outcome.records
    ]
    return found
