"""`pykai explain --kubeconfig` on the real apiserver, and `pykai snapshot` of it: the snapshot's
answers equal the live ones, what-ifs run on the snapshot, and the live cluster is untouched.
Expected outcomes follow KAI's rules: a queue's limit bounds its jobs however empty the cluster;
a pod needs its GPUs on one node."""

from __future__ import annotations

import json
from pathlib import Path

from pykai.kube.api import connect
from pykai.kube.localcluster import LocalCluster
from pykai.model import builders
from pykai.model.kinds import BY_KIND
from pykai.model.meta import Obj
from tests.kube.conftest import (
    apply,
    kubectl,
    pinned_node,
    pykai_cli,
    pykai_running,
    wait_for,
)

NAMESPACE = "explain-live"


def waiting_job(name: str, gpus: int, queue: str = "explain-q") -> list[Obj]:
    group = builders.podgroup(name, queue=queue, namespace=NAMESPACE)
    return [group, builders.pod(f"{name}-0", group=name, gpus=gpus, namespace=NAMESPACE)]


def answer(*args: str) -> dict[str, object]:
    done = pykai_cli("explain", *args, "-n", NAMESPACE, "-o", "json")
    assert done.returncode == 0, done.stderr
    found: dict[str, object] = json.loads(done.stdout)
    return found


def versions(cluster: LocalCluster) -> dict[str, str]:
    """resourceVersion of each object of the test, by kind/name."""
    api = connect(cluster.kubeconfig)
    found = {}
    for kind in ("PodGroup", "Pod"):
        for obj in api.list(BY_KIND[kind])[0]:
            meta = obj["metadata"]
            if meta.get("namespace") == NAMESPACE:
                found[f"{kind}/{meta['name']}"] = meta["resourceVersion"]
    queue = api.get(BY_KIND["Queue"], "explain-q")
    assert queue is not None
    found["Queue/explain-q"] = queue["metadata"]["resourceVersion"]
    return found


def test_explain_live_and_on_a_snapshot(local_cluster: LocalCluster, tmp_path: Path) -> None:
    namespace: Obj = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}
    objects = [namespace, builders.queue("explain-q", gpu=(0, 2, 1)), builders.queue("explain-o")]
    objects += [*waiting_job("wide", 4), *waiting_job("huge", 64, "explain-o")]
    apply(local_cluster, objects, tmp_path / "objects.yaml")
    try:
        check(local_cluster, tmp_path)
    finally:  # the cluster is shared: leave nothing pending behind
        kubectl(local_cluster, "delete", "namespace", NAMESPACE, "--wait=false")
        kubectl(local_cluster, "delete", "queue", "explain-q", "explain-o", "--wait=false")


def check(cluster: LocalCluster, tmp_path: Path) -> None:
    live = f"--kubeconfig={cluster.kubeconfig}"
    before = versions(cluster)
    wide = answer("podgroup", "wide", live)
    assert (wide["rule"], wide["queue"]) == ("limit", "explain-q")
    assert wide["onAnEmptyCluster"]["runs"] is False  # type: ignore[index]
    assert wide["onAnEmptyCluster"]["reasons"][0]["reason"] == "OverLimit"  # type: ignore[index]
    huge = answer("pod", "huge-0", live)
    assert huge["rule"] == "node constraints" and "can never run" in str(huge["verdict"])
    queue = answer("queue", "explain-q", live)
    pending = queue["pending"]
    assert [p["podGroup"] for p in pending] == [f"{NAMESPACE}/wide"]  # type: ignore[attr-defined]

    file = tmp_path / "snapshot.db"
    done = pykai_cli("snapshot", live, "-o", str(file))
    assert done.returncode == 0 and "snapshot written" in done.stdout, done.stderr
    again = pykai_cli("snapshot", live, "-o", str(file))
    assert again.returncode == 1 and "never replaces" in again.stderr
    offline = f"--cluster={file}"
    assert answer("podgroup", "wide", offline) == wide
    assert answer("pod", "huge-0", offline) == huge
    assert answer("queue", "explain-q", offline) == queue
    listed = pykai_cli("get", "podgroups", "-n", NAMESPACE, "-o", "json", offline)
    names = {item["metadata"]["name"] for item in json.loads(listed.stdout)["items"]}
    kube = json.loads(kubectl(cluster, "get", "podgroups", "-n", NAMESPACE, "-o", "json"))
    assert names == {item["metadata"]["name"] for item in kube["items"]} == {"wide", "huge"}

    # what if the queue's limit were 4 and an 8-GPU node joined? Tried on the file only.
    changed = [builders.queue("explain-q", gpu=(0, 4, 1)), builders.node("whatif-node", gpus=8)]
    (tmp_path / "whatif.yaml").write_text("\n---\n".join(json.dumps(o) for o in changed))
    applied = pykai_cli("apply", "-f", str(tmp_path / "whatif.yaml"), offline)
    assert applied.returncode == 0, applied.stderr
    placed = pykai_cli("get", "pod", "wide-0", "-n", NAMESPACE, "-o", "json", offline)
    assert json.loads(placed.stdout)["spec"].get("nodeName") == "whatif-node"
    assert versions(cluster) == before  # the live cluster was only read
    assert connect(cluster.kubeconfig).get(BY_KIND["Node"], "whatif-node") is None


def explain_live_pod(cluster: LocalCluster, name: str) -> dict[str, object]:
    """``pykai explain pod NAME -o json`` against the live cluster, as a mapping."""
    done = pykai_cli("explain", "pod", name, f"--kubeconfig={cluster.kubeconfig}", "-o", "json")
    assert done.returncode == 0, done.stderr
    found: dict[str, object] = json.loads(done.stdout)
    return found


def test_explain_a_placed_pod_on_a_live_cluster(local_cluster: LocalCluster) -> None:
    """The Scheduled event pykai run wrote says how the node was chosen; explain reads it back
    from the apiserver. The node is tainted for this test's pod alone."""
    api = connect(local_cluster.kubeconfig)
    pin = pinned_node(local_cluster, "explain-node", "explain-placed")
    pod = builders.pod("placed", gpus=1, labels={"kai.scheduler/queue": "explain-placed"})
    api.create(BY_KIND["Pod"], pin(pod))
    try:
        with pykai_running(local_cluster):

            def bound() -> bool:
                found = api.get(BY_KIND["Pod"], "placed", "default") or {}
                return bool((found.get("spec") or {}).get("nodeName"))

            assert wait_for(bound, timeout=60)

            def explained() -> dict[str, object]:
                return explain_live_pod(local_cluster, "placed")

            assert wait_for(
                lambda: explained()["scheduled"], timeout=60
            )  # events are written in the background
            answer = explained()
            assert (answer["state"], answer["node"]) == ("placed", "explain-node")
            message = answer["scheduled"][0]  # type: ignore[index]
            assert message.startswith(
                "Successfully assigned default/placed to explain-node, chosen by"
            )
    finally:
        api.delete(BY_KIND["Pod"], "placed", "default", grace_seconds=0)
        api.delete(BY_KIND["Node"], "explain-node")
        api.delete(BY_KIND["Queue"], "explain-placed")


def test_explain_an_evicted_pod_on_a_live_cluster(local_cluster: LocalCluster) -> None:
    """KAI's preempt action: a pending job evicts a preemptible job of lower priority in its
    own queue. pykai run evicts the training pod for the inference job; explain, reading the
    apiserver, says the pod was evicted, by which job and under which rule (the Evict event).
    The victim takes long to terminate, so it is still there to be asked about."""
    api = connect(local_cluster.kubeconfig)
    pin = pinned_node(local_cluster, "evict-node", "explain-evict")

    def job(name: str, priority: str) -> list[Obj]:
        group = builders.podgroup(name, queue="explain-evict", priority_class=priority)
        pod = pin(builders.pod(f"{name}-0", group=name, gpus=2))
        pod["spec"]["terminationGracePeriodSeconds"] = 600
        return [group, pod]

    victim, preemptor = job("evict-train", "train"), job("evict-serve", "inference")
    try:
        with pykai_running(local_cluster):  # KWOK runs the pods
            for obj in victim:
                api.create(BY_KIND[obj["kind"]], obj)

            def running() -> bool:
                found = api.get(BY_KIND["Pod"], "evict-train-0", "default") or {}
                return (found.get("status") or {}).get("phase") == "Running"

            assert wait_for(running, timeout=120)
            for obj in preemptor:
                api.create(BY_KIND[obj["kind"]], obj)

            def explained() -> dict[str, object]:
                return explain_live_pod(local_cluster, "evict-train-0")

            assert wait_for(lambda: explained()["evicted"], timeout=120)
            answer = explained()
    finally:
        for obj in reversed(victim + preemptor):
            api.delete(BY_KIND[obj["kind"]], obj["metadata"]["name"], "default", grace_seconds=0)
        api.delete(BY_KIND["Node"], "evict-node")
        api.delete(BY_KIND["Queue"], "explain-evict")
    assert (answer["state"], answer["node"]) == ("evicted", "evict-node")
    [message] = answer["evicted"]  # type: ignore[misc]
    assert "Preempted by default/evict-serve" in message and "in queue explain-evict" in message
    assert message.endswith("(action: preempt)")
