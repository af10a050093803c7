"""Shell completion, as the shell asks for it: commands, kinds and the names in the cluster."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from pykai.embedded.cluster import EmbeddedCluster
from pykai.model.builders import node, pod


def completions(words: str, cword: int, cluster: Path | None = None) -> list[str]:
    """What bash's completion function would offer for the word at ``cword``."""
    env = {**os.environ, "_PYKAI_COMPLETE": "complete_bash", "COMP_WORDS": words}
    env["COMP_CWORD"] = str(cword)
    if cluster is not None:
        env["PYKAI_CLUSTER"] = str(cluster)
    done = subprocess.run(
        [sys.executable, "-m", "pykai"], env=env, capture_output=True, text=True, check=True
    )
    return done.stdout.split()


def test_the_script_for_each_shell_asks_pykai_itself() -> None:
    for shell in ("bash", "zsh", "fish"):
        done = subprocess.run(
            [sys.executable, "-m", "pykai", "completion", shell],
            capture_output=True,
            text=True,
            check=True,
        )
        assert f"_PYKAI_COMPLETE=complete_{shell}" in done.stdout


def test_commands_kinds_and_kinds_after_a_comma() -> None:
    assert completions("pykai de", 1) == ["delete", "describe", "demo"]
    assert {"pods", "podgroups"} <= set(completions("pykai get po", 2))
    assert completions("pykai get pods,qu", 2) == ["pods,queues"]


def test_names_come_from_the_cluster_file_in_the_namespace(tmp_path: Path) -> None:
    path = tmp_path / "cluster.db"
    cluster = EmbeddedCluster.open(path)
    cluster.apply([node("n1"), pod("train-1"), pod("train-2"), pod("serve")])
    cluster.close()
    assert completions("pykai get pods tr", 3, path) == ["train-1", "train-2"]
    assert completions("pykai describe pod s", 3, path) == ["serve"]
    assert completions("pykai get nodes ", 3, path) == ["n1"]
    assert completions("pykai get pods ", 3, tmp_path / "none.db") == []
