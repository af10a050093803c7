"""`pykai dashboard` on an embedded cluster with a known story, seen in headless Chromium:
what a user must see on each page (screenshots kept under pytest's tmp_path, named in the
test output). The story: examples/nodes.yaml (8 + 8 + 4 GPUs and a CPU node); queue research
with team-a and team-b (quota 8 GPUs each); team-b's gang of 2 x 8 GPUs runs, over its quota;
half a GPU each for team-a and team-b (one device, binpack); team-a's 8-GPU job reclaims
team-b's gang (team-b is over its quota and its fair share); a 16-GPU job can never fit."""

from __future__ import annotations

import re
import select
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from pykai.cli.manifests import read_manifests
from pykai.embedded.cluster import EmbeddedCluster
from pykai.model.builders import pod, podgroup, queue
from pykai.model.meta import Obj
from tests.dashboard.browser import ROOT, load


def job(name: str, queue_name: str, pods: int = 1, **pod_fields: object) -> list[Obj]:
    return [
        podgroup(name, queue=queue_name, min_member=pods),
        *(pod(f"{name}-{i}", group=name, **pod_fields) for i in range(pods)),  # type: ignore[arg-type]
    ]


def tell_the_story(path: Path) -> None:
    cluster = EmbeddedCluster.open(path)
    try:
        cluster.apply(read_manifests([str(ROOT / "examples/nodes.yaml")]))
        cluster.apply(
            [
                queue("research"),
                queue("team-a", parent="research", gpu=(8, -1, 1)),
                queue("team-b", parent="research", gpu=(8, -1, 1)),
            ]
        )
        cluster.apply(job("b-train", "team-b", pods=2, gpus=8))
        cluster.apply(job("a-half", "team-a", annotations={"gpu-fraction": "0.5"}))
        cluster.apply(job("b-half", "team-b", annotations={"gpu-fraction": "0.5"}))
        cluster.apply(job("a-train", "team-a", gpus=8))
        cluster.advance(60)
        cluster.apply(job("a-huge", "team-a", gpus=16))
    finally:
        cluster.close()


def start_dashboard(path: Path) -> tuple[subprocess.Popen[str], str]:
    """`pykai dashboard` on a free loopback port; its URL, from the line it prints."""
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "pykai",
            "dashboard",
            "--cluster",
            str(path),
            "--address",
            "127.0.0.1:0",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    assert process.stdout is not None
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        ready, _, _ = select.select([process.stdout], [], [], 1.0)
        if ready:
            line = process.stdout.readline()
            found = re.search(r"http://127\.0\.0\.1:\d+/", line)
            if found:
                return process, found.group(0)
            assert line, "pykai dashboard ended before saying where it serves"
    process.kill()
    raise AssertionError("pykai dashboard did not start within 120 s")


@contextmanager
def dashboard_of_the_story(path: Path) -> Iterator[tuple[str, Path]]:
    tell_the_story(path)
    process, url = start_dashboard(path)
    try:
        yield url, path
    finally:
        process.terminate()
        process.wait(timeout=60)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """The story's dashboard, which the tests using it only read."""
    with dashboard_of_the_story(tmp_path_factory.mktemp("dashboard") / "cluster.db") as found:
        yield found


def row_of(rows: list[list[str]], first: str) -> list[str]:
    return next(r for r in rows if r and r[0].strip() == first)


def test_queue_tree(served: tuple[str, Path], tmp_path: Path) -> None:
    """Figures per queue (GPUs): research has the 20 GPUs; team-a asks for 24.5 and runs
    8.5, team-b runs and asks for its half GPU; fair shares: team-b its request (0.5), team-a
    the rest of the 20 (19.5). The CPU column is in cores: each pod asks for one."""
    url, _ = served
    dom = load(url + "#queues", tmp_path / "queues.png")
    assert dom.attributes["queues"].get("hidden") is None
    rows = dom.rows["queue-rows"]
    assert [r[0] for r in rows if r[0] in ("research", "team-a", "team-b")] == [
        "research",
        "team-a",
        "team-b",
    ]
    team_a = row_of(rows, "team-a")
    assert "allocated 8.5 · requested 24.5 · fair share 19.5 · quota 8 · limit ∞" in team_a[2]
    assert "allocated 2 · requested 3" in team_a[3]  # cores: a-half and a-train run, a-huge waits
    team_b = row_of(rows, "team-b")
    assert "allocated 0.5 · requested 0.5 · fair share 0.5 · quota 8" in team_b[2]
    assert "allocated 9 · requested 25 · fair share 20" in row_of(rows, "research")[2]


def test_gpu_map_shows_a_device_shared_by_two_queues(
    served: tuple[str, Path], tmp_path: Path
) -> None:
    url, _ = served
    dom = load(url + "#gpus", tmp_path / "gpus.png")
    assert dom.text("gpu-summary").startswith("4 nodes, 20 GPUs, 9 in use")
    assert dom.rows["shared-rows"] == [["gpu-node-3", "GPU 0", "team-a 0.5, team-b 0.5"]]
    legend = dom.text("gpu-legend")
    assert "team-a: 8.5 GPUs" in legend and "team-b: 0.5 GPUs" in legend
    assert int(dom.attributes["gpu-canvas"]["height"]) > 4 * 18  # a row per node


def test_pending_jobs_with_reason_and_position(served: tuple[str, Path], tmp_path: Path) -> None:
    url, _ = served
    dom = load(url + "#pending", tmp_path / "pending.png")
    _, in_queue, name, queue_name, pods, gpus, reason = row_of(dom.rows["pending-rows"], "1")
    assert (in_queue, name, queue_name, pods, gpus) == ("1", "default/a-huge", "team-a", "1", "16")
    assert "needs 16 on one node, largest free is 8" in reason


def test_recent_evictions_name_the_preemptor(served: tuple[str, Path], tmp_path: Path) -> None:
    url, _ = served
    dom = load(url + "#evictions", tmp_path / "evictions.png")
    rows = {r[1]: r for r in dom.rows["eviction-rows"]}
    assert set(rows) == {"default/b-train-0", "default/b-train-1"}
    _, _, action, preemptor, why = rows["default/b-train-0"]
    assert (action, preemptor) == ("reclaim", "default/a-train")
    assert "Reclaimed by queue team-a" in why


def test_allocation_over_time_and_live_changes(tmp_path: Path) -> None:
    """Another process changes the cluster while the dashboard runs: the next load shows it
    (team-a's 8-GPU job gone; one more sample of each queue's allocation)."""
    with dashboard_of_the_story(tmp_path / "cluster.db") as (url, path):
        dom = load(url + "#history", tmp_path / "history.png")
        assert "team-a: 8.5 GPUs now" in dom.text("history-legend")
        for kind, name in (("pod", "a-train-0"), ("podgroup", "a-train")):
            subprocess.run(
                [sys.executable, "-m", "pykai", "delete", kind, name, "--cluster", str(path)],
                check=True,
                capture_output=True,
            )
        dom = load(url + "#history", tmp_path / "history-after.png")
        assert "team-a: 0.5 GPUs now" in dom.text("history-legend")
        dom = load(url + "#pending", tmp_path / "pending-after.png")
        assert [r[2] for r in dom.rows["pending-rows"]] == ["default/a-huge"]
