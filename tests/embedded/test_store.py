"""The stores, in a SQLite file and in memory: objects, apply semantics, cascades, events, uids,
the clock, generations and the change log; what only a file has (persistence, WAL, other
processes) on real files."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from itertools import count
from pathlib import Path

import pytest

from pykai.controllers.events import event_name
from pykai.embedded.events import events_for, record
from pykai.embedded.memory import MemoryStore
from pykai.embedded.sqlite import ClusterFileError, Store
from pykai.embedded.store import ObjectStore
from pykai.model.builders import node, pod, podgroup
from pykai.model.meta import Obj, format_time

from .conftest import dump

NewStore = Callable[[], ObjectStore]


@pytest.fixture(params=["file", "memory"])
def new_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[NewStore]:
    """Makes new stores of one kind: in a SQLite file, or in memory."""
    numbers = count()
    made: list[ObjectStore] = []

    def make() -> ObjectStore:
        if request.param == "memory":
            store: ObjectStore = MemoryStore()
        else:
            store = Store(tmp_path / f"s{next(numbers)}.db")
        made.append(store)
        return store

    yield make
    for store in made:
        store.close()


def owned(obj: Obj, owner: Obj) -> Obj:
    meta = owner["metadata"]
    ref = {"apiVersion": "v1", "kind": owner["kind"], "name": meta["name"], "uid": meta["uid"]}
    obj["metadata"]["ownerReferences"] = [ref]
    return obj


def test_file_is_created_with_its_folders_in_wal_mode(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "er" / "cluster.db"
    Store(path).close()
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA journal_mode").fetchone() == ("wal",)


def test_created_objects_have_kubernetes_metadata(new_store: NewStore) -> None:
    store = new_store()
    created = store.create(pod("a"))
    meta = created["metadata"]
    assert meta["namespace"] == "default"
    assert meta["generation"] == 1 and meta["resourceVersion"].isdigit()
    assert meta["creationTimestamp"] == format_time(store.now())
    assert len(meta["uid"]) == 36 and meta["uid"].count("-") == 4
    assert store.get("Pod", "a") == created
    cluster_scoped = store.create({**node("n1"), "metadata": {"name": "n1", "namespace": "x"}})
    assert "namespace" not in cluster_scoped["metadata"]
    assert store.get("Node", "n1", "whatever") == cluster_scoped


def test_uids_sort_in_creation_order_and_repeat_across_runs(new_store: NewStore) -> None:
    def uids(store: ObjectStore) -> list[str]:
        return [store.create(pod(name))["metadata"]["uid"] for name in ("z", "a", "m")]

    first = uids(new_store())
    assert first == sorted(first)
    assert uids(new_store()) == first


def test_create_twice_and_update_of_a_missing_object_fail_with_the_name(
    new_store: NewStore,
) -> None:
    store = new_store()
    store.create(pod("a", namespace="team"))
    with pytest.raises(ValueError, match='Pod "team/a" already exists'):
        store.create(pod("a", namespace="team"))
    with pytest.raises(LookupError, match='Pod "default/b" does not exist'):
        store.update({**pod("b"), "metadata": {"name": "b", "namespace": "default"}})


def test_update_bumps_the_resource_version(new_store: NewStore) -> None:
    store = new_store()
    created = store.create(pod("a"))
    created["spec"]["nodeName"] = "n1"
    updated = store.update(created)
    assert int(updated["metadata"]["resourceVersion"]) > int(created["metadata"]["resourceVersion"])
    assert store.get("Pod", "a") == updated


def test_apply_reports_created_configured_unchanged(new_store: NewStore) -> None:
    store = new_store()
    manifest = pod("a", labels={"team": "x"})
    created, action = store.apply(manifest)
    assert action == "created"
    assert store.apply(manifest) == (created, "unchanged")
    relabelled = pod("a", labels={"team": "y"})
    configured, action = store.apply(relabelled)
    assert action == "configured"
    assert configured["metadata"]["labels"] == {"team": "y"}
    assert configured["metadata"]["generation"] == 1  # metadata is not the spec
    assert configured["metadata"]["uid"] == created["metadata"]["uid"]
    assert configured["metadata"]["creationTimestamp"] == created["metadata"]["creationTimestamp"]
    assert int(configured["metadata"]["resourceVersion"]) > int(
        created["metadata"]["resourceVersion"]
    )
    respecced, _ = store.apply(pod("a", labels={"team": "y"}, cpu="2"))
    assert respecced["metadata"]["generation"] == 2


def test_apply_replaces_what_the_manifest_owns_and_keeps_what_the_server_wrote(
    new_store: NewStore,
) -> None:
    store = new_store()
    live, _ = store.apply(pod("a", labels={"keep": "1", "drop": "1"}))
    live["spec"]["nodeName"] = "n1"
    live["metadata"]["annotations"]["pod-group-name"] = "pg-a"
    live["status"] = {"phase": "Running"}
    store.update(live)
    again, action = store.apply(pod("a", labels={"keep": "2"}))
    assert action == "configured"
    assert again["metadata"]["labels"] == {"keep": "2"}  # "drop" left the manifest
    assert again["metadata"]["annotations"] == {"pod-group-name": "pg-a"}
    assert again["spec"]["nodeName"] == "n1"
    assert again["status"] == {"phase": "Running"}
    assert store.apply(pod("a", labels={"keep": "2"}))[1] == "unchanged"


def test_applying_an_object_a_controller_made_merges_over_it(new_store: NewStore) -> None:
    store = new_store()
    made = store.create(podgroup("g", queue="q"))
    made["status"] = {"phase": "Running"}
    store.update(made)
    merged, action = store.apply(podgroup("g", queue="q", min_member=2))
    assert action == "configured"
    assert merged["spec"]["minMember"] == 2 and merged["status"] == {"phase": "Running"}


def test_delete_cascades_through_owner_references(new_store: NewStore) -> None:
    store = new_store()
    top = store.create({"apiVersion": "ray.io/v1", "kind": "RayCluster", "metadata": {"name": "r"}})
    head = store.create(owned(pod("r-head"), top))
    store.create(owned(podgroup("pg-r", queue="q"), head))
    store.create(pod("bystander"))
    removed = store.delete("RayCluster", "r")
    assert [(o["kind"], o["metadata"]["name"]) for o in removed] == [
        ("RayCluster", "r"),
        ("Pod", "r-head"),
        ("PodGroup", "pg-r"),
    ]
    assert [p["metadata"]["name"] for p in store.list("Pod")] == ["bystander"]
    assert store.list("PodGroup") == []
    assert store.delete("RayCluster", "r") == []


def test_everything_persists_across_reopen_and_only_a_new_file_is_seeded(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    seeded: list[ObjectStore] = []
    store = Store(path, seed=seeded.append)
    assert len(seeded) == 1
    created = store.create(pod("a"))
    store.advance(90)
    store.counter("things", 3)
    clock = store.now()
    store.close()
    again = Store(path, seed=seeded.append)
    assert len(seeded) == 1
    assert again.get("Pod", "a") == created
    assert again.now() == clock and again.read_counter("things") == 3
    assert again.create(pod("b"))["metadata"]["uid"] > created["metadata"]["uid"]


def test_a_failed_transaction_writes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    store = Store(path)
    store.create(pod("a"))
    before = dump(path)
    with pytest.raises(RuntimeError), store.transaction():
        store.create(pod("b"))
        store.delete("Pod", "a")
        raise RuntimeError("crash")
    assert dump(path) == before


def test_a_failed_transaction_in_memory_leaves_everything_as_it_was() -> None:
    store = MemoryStore()
    top = store.create({"apiVersion": "ray.io/v1", "kind": "RayCluster", "metadata": {"name": "r"}})
    store.create(owned(pod("r-head"), top))
    store.apply(pod("a", labels={"team": "x"}))
    store.counter("things")
    generation = store.generation

    def seen() -> object:
        return (
            store.list("Pod"),
            store.list("RayCluster"),
            store.owned_by(top["metadata"]["uid"]),
            store.namespace_contents("default"),
            store.read_counter("things"),
            store.now(),
            store.changes_since(generation - 1),
        )

    before = seen()
    with pytest.raises(RuntimeError), store.transaction():
        store.create(owned(pod("r-worker"), top))
        store.apply(pod("a", labels={"team": "y"}))
        store.update({**pod("r-head"), "metadata": {"name": "r-head", "namespace": "default"}})
        store.delete("Pod", "a")
        store.counter("things")
        store.advance(10)
        raise RuntimeError("crash")
    assert store.generation == generation
    assert seen() == before
    assert store.apply(pod("a", labels={"team": "x"}))[1] == "unchanged"  # manifest kept
    assert [o["metadata"]["name"] for o in store.delete("RayCluster", "r")] == ["r", "r-head"]


def test_the_memory_store_hands_out_copies() -> None:
    store = MemoryStore()
    created = store.create(pod("a"))
    created["spec"]["nodeName"] = "n1"
    got = store.get("Pod", "a")
    assert got is not None and "nodeName" not in got["spec"]
    got["metadata"]["labels"]["x"] = "y"
    assert store.list("Pod")[0]["metadata"]["labels"] == {}


def test_the_clock_starts_at_a_whole_second_and_only_moves_forward(new_store: NewStore) -> None:
    store = new_store()
    start = store.now()
    assert start == int(start)
    store.advance(1.5)
    assert store.now() == start + 1.5
    with pytest.raises(ValueError, match="only moves forward"):
        store.advance(-1)


def test_identical_events_are_counted_not_repeated(new_store: NewStore) -> None:
    store = new_store()
    target = store.create(pod("a"))
    assert record(store, target, "Unschedulable", "no room", "Warning")
    assert not record(store, target, "Unschedulable", "no room", "Warning")  # same instant
    store.advance(30)
    assert record(store, target, "Unschedulable", "no room", "Warning")
    assert record(store, target, "Scheduled", "Successfully assigned default/a to n1")
    events = events_for(store, "Pod", "a", "default")
    assert [(e["reason"], e["count"]) for e in events] == [("Unschedulable", 2), ("Scheduled", 1)]
    first = events[0]
    assert first["type"] == "Warning" and first["message"] == "no room"
    assert first["involvedObject"] == {
        "apiVersion": "v1",
        "kind": "Pod",
        "name": "a",
        "namespace": "default",
        "uid": target["metadata"]["uid"],
    }
    assert first["firstTimestamp"] < first["lastTimestamp"] == format_time(store.now())
    assert events_for(store, "Pod", "a", "other") == []


def test_each_committed_change_bumps_the_generation_once(new_store: NewStore) -> None:
    store = new_store()
    start = store.generation
    with store.transaction():
        store.create(pod("a"))
        store.create(pod("b"))
    assert store.generation == start + 1
    with store.transaction():
        store.get("Pod", "a")  # reads only
    store.apply(pod("c"))
    store.apply(pod("c"))  # unchanged: nothing written
    assert store.generation == start + 2
    with pytest.raises(RuntimeError), store.transaction():
        store.create(pod("d"))
        raise RuntimeError("crash")
    assert store.generation == start + 2
    store.advance(5)
    assert store.generation == start + 3


def test_a_generation_another_process_commits_is_seen_at_the_next_transaction(
    tmp_path: Path,
) -> None:
    store = Store(tmp_path / "s.db")
    store.create(pod("a"))
    start = store.generation
    other = Store(tmp_path / "s.db")
    with other.snapshot():
        assert other.generation == start  # what the file holds, seen from another open
    other.advance(5)
    with store.snapshot():
        assert store.generation == start + 1


def test_the_change_log_names_what_each_generation_wrote(new_store: NewStore) -> None:
    store = new_store()
    store.create(pod("a"))
    seen = store.generation
    store.create(pod("b"))
    store.update({**pod("a"), "status": {"phase": "Running"}})
    store.delete("Pod", "b")
    store.counter("things")  # no object written
    with store.snapshot():
        assert store.changes_since(seen) == [("Pod", "default", "a"), ("Pod", "default", "b")]
        assert store.changes_since(store.generation) == []


def test_a_reader_too_far_behind_the_change_log_is_told_to_reload(
    new_store: NewStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("pykai.embedded.store.CHANGE_LOG_GENERATIONS", 3)
    store = new_store()
    seen = store.generation
    for name in "abc":
        store.create(pod(name))
    with store.snapshot():
        assert store.changes_since(seen) is not None
    store.create(pod("d"))
    with store.snapshot():
        assert store.changes_since(seen) is None
        assert store.changes_since(seen + 1) == [
            ("Pod", "default", name) for name in ("b", "c", "d")
        ]


def test_a_transaction_waits_for_another_writer_then_says_busy_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "s.db"
    Store(path).close()
    monkeypatch.setattr("pykai.embedded.sqlite.BUSY_TIMEOUT", 0.2)
    holder, waiter = Store(path), Store(path)
    with holder.transaction():
        holder.create(pod("a"))
        with pytest.raises(ClusterFileError, match="busy") as busy:
            waiter.create(pod("b"))
    assert str(busy.value).count("\n") == 0 and str(path) in str(busy.value)
    assert "locked" not in str(busy.value)
    assert waiter.create(pod("b"))["metadata"]["name"] == "b"  # free again


def test_an_event_whose_name_another_object_holds_gets_another_name(new_store: NewStore) -> None:
    store = new_store()
    target = store.create(pod("a"))
    taken = event_name(target, "Unschedulable", "no room", "Warning")
    squatter: Obj = {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": taken},
        "involvedObject": {"kind": "Pod", "name": "b", "namespace": "default"},
        "reason": "Something else",
    }
    store.create(squatter)
    assert record(store, target, "Unschedulable", "no room", "Warning")
    store.advance(30)
    assert record(store, target, "Unschedulable", "no room", "Warning")
    [event] = events_for(store, "Pod", "a", "default")
    assert event["reason"] == "Unschedulable" and event["count"] == 2
    assert event["metadata"]["name"] != taken
    kept = store.get("Event", taken, "default")
    assert kept is not None and kept["reason"] == "Something else"


def test_a_derived_value_is_kept_as_of_the_generation_its_transaction_commits(
    tmp_path: Path,
) -> None:
    store = Store(tmp_path / "c.db")
    assert store.derived("k") is None
    store.derive("k", "one")
    assert store.derived("k") == ("one", store.generation)
    before = store.generation
    store.derive("k", "one")  # the same value from the same objects: nothing is written
    assert store.generation == before and store.derived("k") == ("one", before)
    store.create(node("n1", gpus=1))  # a write that derives nothing leaves it behind
    assert store.derived("k") == ("one", before) and store.generation == before + 1
    with store.transaction():
        store.create(node("n2", gpus=1))
        store.derive("k", "one")  # same value, but with other writes: current again
    assert store.derived("k") == ("one", before + 2) == ("one", store.generation)
    store.derive("k", "two")
    assert store.derived("k") == ("two", before + 3) == ("two", store.generation)
    store.close()


def test_a_derived_value_carried_over_follows_the_transactions_commit(tmp_path: Path) -> None:
    store = Store(tmp_path / "c.db")
    store.derive("k", "one")
    with store.transaction():
        store.create(node("n1", gpus=1))
        assert store.wrote(("Node",)) and not store.wrote(("Pod",))
        store.carry("k")
    assert store.derived("k") == ("one", store.generation)
    with store.transaction():
        store.carry("k")  # nothing else written: nothing to carry
    assert store.derived("k") == ("one", store.generation)
    store.close()
