"""One cluster file, several opens: writes catch up with what others committed, reads open the
file read-only, new files appear whole, and files that are not pykai clusters are refused."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path
from typing import Any

import pytest

from pykai.embedded.cluster import EmbeddedCluster
from pykai.embedded.sqlite import ClusterFileError, Store
from pykai.engine.state import ClusterState
from pykai.model.builders import node, pod
from pykai.model.meta import Obj

from .conftest import dump


def summary(state: ClusterState) -> dict[str, Any]:
    """What the engine schedules from: tasks, jobs, queues, usage and node occupancy."""
    state.ensure_current()
    return {
        "tasks": {uid: (t.status, t.node, t.gpu_groups) for uid, t in state.tasks.items()},
        "jobs": sorted(state.jobs),
        "pending": sorted(state.pending_jobs),
        "queues": sorted(state.queues),
        "usage": dict(state.usage),
        "used": {n: state.nodes.used[i].tolist() for n, i in state.nodes.index.items()},
    }


def node_of(cluster: EmbeddedCluster, name: str) -> str | None:
    found = cluster.get("Pod", name, "default")
    assert found is not None, name
    placed = found["spec"].get("nodeName")
    return str(placed) if placed else None


def counting_loads(cluster: EmbeddedCluster) -> list[int]:
    """Counts how often ``cluster`` loads its engine state from scratch."""
    loads: list[int] = []
    load = cluster._load_state

    def counted() -> ClusterState:
        loads.append(1)
        return load()

    cluster._load_state = counted  # type: ignore[method-assign]
    return loads


# ---- writes catch up ---------------------------------------------------------------------------


def test_a_write_replays_what_another_open_committed_since_it_last_looked(
    tmp_path: Path,
) -> None:
    path = tmp_path / "c.db"
    mine, other = EmbeddedCluster.open(path), EmbeddedCluster.open(path)
    loads = counting_loads(mine)
    mine.apply([node("n1", gpus=4)])
    assert loads == [1]
    other.apply([pod("b1", gpus=2), pod("b2", gpus=1)])
    mine.apply([pod("a1", gpus=2), pod("a2", gpus=1)])  # 1 GPU is free: a2 fits, a1 does not
    assert (node_of(mine, "a1"), node_of(mine, "a2")) == (None, "n1")
    other.delete("Pod", "b1")  # the other open's rounds bind a1 in the 2 GPUs b1 freed
    assert node_of(mine, "a1") == "n1"
    mine.apply([pod("a3", gpus=1)])  # no GPU left
    assert node_of(mine, "a3") is None
    assert loads == [1], "caught up from the change log, not by loading everything again"
    assert summary(mine.state) == summary(EmbeddedCluster.open(path).state)


def test_an_open_too_far_behind_the_change_log_loads_everything_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("pykai.embedded.store.CHANGE_LOG_GENERATIONS", 2)
    path = tmp_path / "c.db"
    mine, other = EmbeddedCluster.open(path), EmbeddedCluster.open(path)
    loads = counting_loads(mine)
    mine.apply([node("n1", gpus=4)])
    for name in ("b1", "b2", "b3"):
        other.apply([pod(name, gpus=1)])
    mine.apply([pod("a1", gpus=2), pod("a2", gpus=1)])
    assert (node_of(mine, "a1"), node_of(mine, "a2")) == (None, "n1")
    assert loads == [1, 1]
    assert summary(mine.state) == summary(EmbeddedCluster.open(path).state)


def test_a_failed_write_rebuilds_the_state_from_the_store(tmp_path: Path) -> None:
    path = tmp_path / "c.db"
    cluster = EmbeddedCluster.open(path)
    cluster.apply([node("n1", gpus=4)])
    with pytest.raises(RuntimeError, match="crash"), cluster.store.transaction():
        cluster.create(pod("ghost", gpus=4, node_name="n1"))
        raise RuntimeError("crash")
    assert cluster.state.task_by_key("default", "ghost") is None
    cluster.apply([pod("real", gpus=4)])
    assert node_of(cluster, "real") == "n1"


# ---- read-only opens ---------------------------------------------------------------------------


def test_reading_a_missing_cluster_says_so_and_makes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "nowhere" / "c.db"
    with pytest.raises(ClusterFileError, match=f'no cluster at "{path}"'):
        EmbeddedCluster.open(path, readonly=True)
    assert not path.parent.exists()


def test_a_read_only_open_reads_and_never_writes(tmp_path: Path) -> None:
    path = tmp_path / "c.db"
    EmbeddedCluster.open(path).apply([node("n1", gpus=4), pod("p", gpus=1)])
    before = dump(path)
    reader = EmbeddedCluster.open(path, readonly=True)
    assert node_of(reader, "p") == "n1"
    with pytest.raises(RuntimeError, match="read-only"):
        reader.apply([pod("q")])
    with pytest.raises(sqlite3.OperationalError, match="readonly"):
        reader.store._db.execute("DELETE FROM objects")
    reader.close()
    assert dump(path) == before


def test_a_file_from_before_the_change_log_is_read_as_is_and_upgraded_by_a_write(
    tmp_path: Path,
) -> None:
    path = tmp_path / "c.db"
    EmbeddedCluster.open(path).apply([node("n1", gpus=4)])
    with sqlite3.connect(path) as db:
        db.execute("DROP TABLE changes")
        db.execute("DELETE FROM meta WHERE key='generation'")
    EmbeddedCluster.open(path, readonly=True).list("Node")

    def tables() -> set[str]:
        with sqlite3.connect(path) as db:
            return {name for (name,) in db.execute("SELECT name FROM sqlite_master")}

    assert "changes" not in tables()
    writer = EmbeddedCluster.open(path)
    writer.apply([pod("p", gpus=1)])
    assert "changes" in tables() and node_of(writer, "p") == "n1"


# ---- files that are not clusters ----------------------------------------------------------------


def other_database(path: Path) -> None:
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE notes (text TEXT)")
        db.execute("INSERT INTO notes VALUES ('mine')")


@pytest.mark.parametrize(
    ("make", "why"),
    [
        (lambda path: path.write_bytes(b""), "an empty file"),
        (lambda path: path.write_bytes(b"not sqlite at all " * 300), "file is not a database"),
        (other_database, "no such table: meta"),
    ],
    ids=["empty", "garbage", "another-database"],
)
@pytest.mark.parametrize("readonly", [False, True], ids=["write", "read"])
def test_a_file_that_is_not_a_cluster_is_refused_in_one_line_and_left_alone(
    tmp_path: Path, make: Any, why: str, readonly: bool
) -> None:
    path = tmp_path / "c.db"
    make(path)
    before = path.read_bytes()
    with pytest.raises(ClusterFileError) as refused:
        Store(path, readonly=readonly)
    message = str(refused.value)
    assert message.startswith(f'the cluster file "{path}" is not a pykai cluster ({why})')
    assert "move it aside" in message and "--cluster" in message and "\n" not in message
    assert path.read_bytes() == before


# ---- new files ---------------------------------------------------------------------------------


def test_opens_racing_to_make_a_new_file_all_get_the_same_whole_cluster(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "c.db"
    racers = 8
    start = threading.Barrier(racers)
    seeded: list[list[Obj]] = []
    errors: list[BaseException] = []

    def seed(store: Store) -> None:
        store.create(pod(f"seed-{threading.get_ident()}"))

    def race() -> None:
        try:
            start.wait(60)
            store = Store(path, seed=seed)
            seeded.append(store.list("Pod"))
            store.close()
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=race) for _ in range(racers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert errors == [] and len(seeded) == racers
    assert len(seeded[0]) == 1 and all(pods == seeded[0] for pods in seeded)
    assert [p.name for p in path.parent.iterdir()] == ["c.db"]  # no drafts left behind
