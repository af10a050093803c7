"""pykai's components as separate processes, as the Helm chart deploys them: the pod-grouper,
the scheduler with the binder, and the status controllers still get a pod running (the
scheduler here with --no-scheduled-events, as benchmarks run it: the bind is its only write)."""

from __future__ import annotations

from pathlib import Path

from pykai.kube.api import connect
from pykai.kube.localcluster import LocalCluster
from pykai.kube.nodes import create_ready_nodes
from pykai.model import builders
from tests.kube.conftest import apply, get_json, pykai_running, wait_for


def test_components_in_separate_processes(local_cluster: LocalCluster, tmp_path: Path) -> None:
    node = builders.node("split-node", gpus=4, labels={"pool": "split"})
    create_ready_nodes(connect(local_cluster.kubeconfig), [node], 0.0)
    pod = builders.pod("split", gpus=4, labels={"kai.scheduler/queue": "split-q"})
    pod["spec"]["nodeSelector"] = {"pool": "split"}
    apply(local_cluster, [builders.queue("split-q"), pod], tmp_path / "split.yaml")
    with (
        pykai_running(local_cluster, "--components=podgrouper"),
        pykai_running(local_cluster, "--components=scheduler,binder", "--no-scheduled-events"),
        pykai_running(local_cluster, "--components=queuecontroller,podgroupcontroller"),
    ):

        def placed() -> str:
            return str(get_json(local_cluster, "pod", "split")["spec"].get("nodeName", ""))

        assert wait_for(placed), "not bound"
        assert placed() == "split-node"
        group = get_json(local_cluster, "pod", "split")["metadata"]["annotations"]["pod-group-name"]

        def group_phase() -> str:
            status = get_json(local_cluster, "podgroup", group).get("status") or {}
            return str(status.get("phase", ""))

        assert wait_for(lambda: group_phase() == "Running"), group_phase()

        def queue_gpus() -> str:
            status = get_json(local_cluster, "queue", "split-q").get("status") or {}
            return str((status.get("allocated") or {}).get("nvidia.com/gpu", ""))

        assert wait_for(lambda: queue_gpus() == "4"), queue_gpus()
        events = get_json(local_cluster, "events", "--field-selector=involvedObject.name=split")
        assert "Scheduled" not in {e["reason"] for e in events["items"]}
