"""Which shard `pykai run` schedules, and its Lease (KAI names a shard's Lease after its
partition: cmd/scheduler/app/server.go)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from pykai.cli.commands.serve import _partition, lease_for
from pykai.cli.manifests import ManifestError
from pykai.engine.settings import SchedulerConfig
from pykai.model.constants import NODE_POOL_LABEL
from pykai.model.partition import Partition

SCHEDULER = frozenset({"scheduler"})


def test_the_flag_or_else_the_configuration_names_the_shard() -> None:
    shard_b = SchedulerConfig(partitionLabelValue="b")
    assert _partition(SchedulerConfig(), None, NODE_POOL_LABEL, SCHEDULER) is None
    assert _partition(None, None, NODE_POOL_LABEL, frozenset({"binder"})) is None
    default = SchedulerConfig(partitionLabelValue="")
    assert _partition(default, None, NODE_POOL_LABEL, SCHEDULER) == Partition(NODE_POOL_LABEL)
    assert _partition(shard_b, None, NODE_POOL_LABEL, SCHEDULER) == Partition(NODE_POOL_LABEL, "b")
    assert _partition(None, "a", NODE_POOL_LABEL, SCHEDULER) == Partition(NODE_POOL_LABEL, "a")
    assert _partition(shard_b, "b", NODE_POOL_LABEL, SCHEDULER) == Partition(NODE_POOL_LABEL, "b")


def test_contradictions_and_shared_components_are_refused() -> None:
    with pytest.raises(ManifestError, match="differ: give one"):
        _partition(SchedulerConfig(partitionLabelValue="b"), "a", NODE_POOL_LABEL, SCHEDULER)
    with pytest.raises(ManifestError, match="--node-pool-label-key"):
        _partition(None, "a", "", SCHEDULER)
    # KAI's binder, pod-grouper and controllers serve every shard: a shard runs the scheduler
    with pytest.raises(ManifestError, match="binder, podgrouper serve every partition"):
        _partition(None, "", NODE_POOL_LABEL, frozenset({"scheduler", "binder", "podgrouper"}))


def test_each_shard_has_its_own_lease() -> None:
    assert lease_for(SCHEDULER, None) == "pykai-scheduler"
    assert lease_for(SCHEDULER, Partition()) == "pykai-scheduler"
    assert lease_for(SCHEDULER, Partition(value="Pool-A")) == "pykai-scheduler-pool-a"


def test_pykai_run_refuses_contradicting_partitions_before_connecting(tmp_path: Path) -> None:
    config = tmp_path / "shard.yaml"
    config.write_text(
        "apiVersion: kai.scheduler/v1\nkind: SchedulingShard\nmetadata: {name: b}\n"
        "spec: {partitionLabelValue: b}\n"
    )
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pykai",
            "run",
            f"--kubeconfig={tmp_path / 'absent'}",
            f"--scheduler-config={config}",
            "--components=scheduler",
            "--partition-label-value=a",
        ],
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode != 0 and "differ: give one" in result.stderr, result
