"""Queue positions on the embedded cluster: `get podgroups` POSITION (REASON with -o wide) and
`describe queue`'s pending PodGroups in the order the scheduler tries them. Expected orders
follow KAI's job order (priority, then older) and queue order (a queue within its quota with
the job goes before one beyond it)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pykai.cli.snapshot import snapshot
from pykai.embedded.cluster import EmbeddedCluster
from pykai.embedded.reader import open_readonly
from pykai.embedded.sqlite import Store
from pykai.model.builders import node, pod, podgroup, queue
from pykai.model.meta import Obj
from tests.cli.conftest import Cli, FakeReader, write
from tests.cli.test_startup import heavy, loaded


def job(name: str, queue_name: str, *, at: int, priority: str = "train") -> list[Obj]:
    """A PodGroup of one pod asking 4 GPUs (no node has them: it stays pending)."""
    creation = f"2026-01-01T00:00:{at:02d}Z"
    group = podgroup(name, queue=queue_name, priority_class=priority, creation=creation)
    return [group, pod(f"{name}-0", group=name, gpus=4, creation=creation)]


@pytest.fixture
def waiting(cli: Cli, tmp_path: Path) -> Cli:
    """A 2-GPU node; queues team-a and team-b deserve 4 GPUs each; team-a has a1, a2 and a
    later but higher-priority urgent job, team-b has b1: none fits."""
    objects = [
        node("n1", gpus=2),
        queue("team-a", gpu=(4, -1, 1)),
        queue("team-b", gpu=(4, -1, 1)),
        *job("a1", "team-a", at=1),
        *job("a2", "team-a", at=2),
        *job("b1", "team-b", at=3),
        *job("urgent", "team-a", at=4, priority="inference"),
    ]
    assert cli("apply", "-f", write(tmp_path, "jobs.yaml", objects)).code == 0
    return cli


def test_get_podgroups_shows_each_ones_place_in_its_queue(waiting: Cli) -> None:
    lines = waiting.lines("get", "podgroups")
    assert lines[0] == ["NAME", "QUEUE", "MIN-MEMBER", "PRIORITY", "PHASE", "POSITION", "AGE"]
    assert {row[0]: row[5] for row in lines[1:]} == {"urgent": "1", "a1": "2", "a2": "3", "b1": "1"}
    wide = waiting.lines("get", "podgroups", "-o", "wide")
    assert {row[0]: row[-1] for row in wide[1:]} == dict.fromkeys(
        ("urgent", "a1", "a2", "b1"), "PodSchedulingErrors"
    )


def test_describe_queue_lists_its_pending_podgroups_in_the_schedulers_order(
    waiting: Cli,
) -> None:
    # urgent (team-a, highest priority) first; then team-a is beyond its 4-GPU quota with its
    # next job, team-b is not: b1 before a1 and a2.
    out = waiting("describe", "queue", "team-a").out
    section = out.split("Pending PodGroups")[1].split("Events:")[0].splitlines()[3:]
    assert [row.split()[:4] for row in section] == [
        ["1", "1", "default/urgent", "team-a"],
        ["3", "2", "default/a1", "team-a"],
        ["4", "3", "default/a2", "team-a"],
    ]


def test_a_podgroup_whose_queue_is_missing_has_no_position_but_its_reason(
    cli: Cli, tmp_path: Path
) -> None:
    objects = [node("n1", gpus=8), *job("lost", "nowhere", at=1)]
    assert cli("apply", "-f", write(tmp_path, "lost.yaml", objects)).code == 0
    row = cli.lines("get", "podgroups", "-o", "wide")[1]
    assert (row[0], row[5], row[-1]) == ("lost", "<none>", "QueueDoesNotExist")


def test_positions_are_read_as_the_last_round_recorded_them_without_the_engine(
    waiting: Cli,
) -> None:
    before = waiting.path.stat().st_mtime_ns, waiting.path.read_bytes()
    for args in (["get", "podgroups", "-o", "wide"], ["describe", "queue", "team-a"]):
        code, modules = loaded(*args, "--cluster", str(waiting.path))
        assert code == 0
        assert heavy(modules) == []
    assert (waiting.path.stat().st_mtime_ns, waiting.path.read_bytes()) == before


def test_a_write_that_ran_no_round_leaves_no_stale_positions(waiting: Cli) -> None:
    # another program writes the file straight, as no pykai command does: urgent goes away
    store = Store(waiting.path)
    store.delete("Pod", "urgent-0", "default")
    store.delete("PodGroup", "urgent", "default")
    store.close()
    lines = waiting.lines("get", "podgroups")
    assert {row[0]: row[5] for row in lines[1:]} == {"a1": "1", "a2": "2", "b1": "1"}


def test_an_apply_that_changes_nothing_writes_nothing(waiting: Cli, tmp_path: Path) -> None:
    cluster = EmbeddedCluster.open(waiting.path)
    generation = cluster.store.generation
    cluster.apply([*job("a1", "team-a", at=1)])
    cluster.schedule(2)
    assert cluster.store.generation == generation
    cluster.close()


def test_a_snapshot_records_positions_as_a_round_would(tmp_path: Path) -> None:
    objects = [
        node("n1", gpus=2),
        queue("team-a", gpu=(4, -1, 1)),
        *job("a1", "team-a", at=1),
        *job("a2", "team-a", at=2),
    ]
    snapshot(FakeReader(objects), tmp_path / "snap.db")
    reader = open_readonly(tmp_path / "snap.db")
    board = reader.positions()
    reader.close()
    assert board is not None
    assert [(p.job, p.in_queue) for p in board.under("team-a")] == [
        ("default/a1", 0),
        ("default/a2", 1),
    ]
