"""kubectl's get on the embedded cluster: several names and kinds, --show-labels, --sort-by,
-o jsonpath and --watch. Expected outputs follow kubectl's (1.20) behaviour."""

from __future__ import annotations

import json
import queue
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from pykai.embedded.cluster import EmbeddedCluster
from pykai.model.builders import node, pod, podgroup
from tests.cli.conftest import Cli, write


@pytest.fixture
def three(cli: Cli, tmp_path: Path) -> Cli:
    """Pods a (2 GPUs), b (1 GPU, labels app=x and tier=web) and c (4 GPUs), a node with 8
    GPUs, all in PodGroup g."""
    objects = [
        node("n1", gpus=8),
        podgroup("g", queue="default-queue"),
        pod("b", group="g", gpus=1, labels={"tier": "web", "app": "x"}),
        pod("a", group="g", gpus=2, labels={"app": "y"}),
        pod("c", group="g", gpus=4),
    ]
    assert cli("apply", "-f", write(tmp_path, "x.yaml", objects)).code == 0
    return cli


def names(cli: Cli, *args: str) -> list[str]:
    return [row[0] for row in cli.lines("get", *args, "--no-headers") if row]


def test_several_names_print_those_found_and_one_error_per_missing_one(three: Cli) -> None:
    result = three("get", "pod", "c", "zz", "a", "yy")
    assert result.code == 1
    assert [line.split()[0] for line in result.out.splitlines()] == ["NAME", "c", "a"]
    assert result.err.splitlines() == [
        'Error from server (NotFound): pods "zz" not found',
        'Error from server (NotFound): pods "yy" not found',
    ]
    assert json.loads(three("get", "pod", "a", "b", "-o", "json").out)["kind"] == "List"
    assert json.loads(three("get", "pod", "a", "-o", "json").out)["kind"] == "Pod"


def test_several_kinds_print_a_table_each_with_kind_slash_name(three: Cli) -> None:
    out = three("get", "pods,podgroups,nodes").out
    tables = [block.splitlines() for block in out.split("\n\n")]
    assert [[line.split()[0] for line in t] for t in tables] == [
        ["NAME", "pod/a", "pod/b", "pod/c"],
        ["NAME", "podgroup.scheduling.run.ai/g"],
        ["NAME", "node/n1"],
    ]
    assert three("get", "po,pg", "-o", "name").out.splitlines() == [
        "pod/a", "pod/b", "pod/c", "podgroup.scheduling.run.ai/g",
    ]  # fmt: skip
    listed = json.loads(three("get", "pods,nodes", "-o", "json").out)
    assert [o["kind"] for o in listed["items"]] == ["Pod", "Pod", "Pod", "Node"]


def test_kind_slash_name_arguments_and_their_mix_with_a_kind(three: Cli) -> None:
    assert names(three, "pod/c", "node/n1", "pod/a") == ["pod/c", "pod/a", "node/n1"]
    mixed = three("get", "pods", "pod/a")
    assert mixed.code == 1 and "no need to specify a resource type as a separate" in mixed.err


def test_show_labels_adds_the_labels_sorted_by_key(three: Cli) -> None:
    header, *rows = three.lines("get", "pods", "--show-labels")
    assert header[-1] == "LABELS"
    assert {row[0]: row[-1] for row in rows} == {
        "a": "app=y",
        "b": "app=x,tier=web",
        "c": "<none>",
    }


def test_sort_by_quantities_by_amount_text_by_text_missing_first(cli: Cli, tmp_path: Path) -> None:
    sized = [
        pod("small", memory="512Mi", labels={"app": "y"}),
        pod("big", memory="2Gi", labels={"app": "x"}),
        pod("medium", memory="1Gi"),
    ]
    cli("apply", "-f", write(tmp_path, "x.yaml", [node("n1"), *sized]))
    memory = ".spec.containers[0].resources.requests.memory"
    assert names(cli, "pods", "--sort-by", memory) == ["small", "medium", "big"]
    assert names(cli, "pods", "--sort-by", ".metadata.labels.app") == ["medium", "big", "small"]
    assert names(cli, "pods", "--sort-by", "{.metadata.name}") == ["big", "medium", "small"]
    by_memory = json.loads(cli("get", "pods", "--sort-by", memory, "-o", "json").out)["items"]
    assert [p["metadata"]["name"] for p in by_memory] == ["small", "medium", "big"]


def test_jsonpath_templates_as_kubectl_prints_them(three: Cli) -> None:
    def jsonpath(*args: str) -> str:
        result = three("get", *args)
        assert result.code == 0, result.err
        return result.out

    assert jsonpath("pods", "-o", "jsonpath={.items[*].metadata.name}") == "a b c"
    table = "{range .items[*]}{.metadata.name}{'\\t'}{.spec.nodeName}{'\\n'}{end}"
    assert jsonpath("pods", "-o", f"jsonpath={table}") == "a\tn1\nb\tn1\nc\tn1\n"
    assert jsonpath("pod", "b", "-o", "jsonpath={.metadata.labels}") == ('{"app":"x","tier":"web"}')
    assert jsonpath("pod", "b", "-o", "jsonpath=.metadata.missing") == ""
    scheduled = '{.items[?(@.metadata.name=="c")].spec.nodeName}'
    assert jsonpath("pods", "-o", f"jsonpath={scheduled}") == "n1"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["-o", "jsonpath={.items[0"], 'error: unclosed "{" in template'),
        (["-o", "jsonpath={range .items[*]}{.x}"], 'has no "{end}"'),
        (["--sort-by", ".spec["], 'error: unexpected path ".spec["'),
        (["-o", "custom-columns=N:.a["], 'error: unexpected path ".a["'),
    ],
)
def test_bad_paths_are_refused_before_the_cluster_is_read(
    tmp_path: Path, args: list[str], message: str
) -> None:
    result = Cli(tmp_path / "no-such-cluster.db")("get", "pods", *args)
    assert result.code == 1 and message in result.err and "no cluster" not in result.err


def test_watch_lists_then_shows_each_change_until_interrupted(three: Cli) -> None:
    watcher = subprocess.Popen(
        [sys.executable, "-m", "pykai", "get", "pods", "-w", "--cluster", str(three.path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert watcher.stdout is not None and watcher.stderr is not None
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(
        target=lambda: [lines.put(line) for line in watcher.stdout], daemon=True
    ).start()

    def first_words(count: int) -> list[str]:
        """The next lines' first words, waiting generously (the machine may be busy)."""
        return [lines.get(timeout=120).split()[0] for _ in range(count)]

    try:
        assert first_words(4) == ["NAME", "a", "b", "c"]
        cluster = EmbeddedCluster.open(three.path)
        cluster.apply([pod("d", group="g", gpus=1)])
        assert first_words(1) == ["d"]
        cluster.delete("Pod", "a")
        cluster.close()
        shown = first_words(1)
        while shown == ["d"]:  # d's later changes (bound, running) may come first
            shown = first_words(1)
        assert shown == ["a"]  # a deleted object: its last state, once more
    finally:
        watcher.send_signal(signal.SIGINT)
        watcher.wait(timeout=60)
    assert watcher.returncode == 0 and "Traceback" not in watcher.stderr.read()
