"""The public guides' story on the embedded cluster, chapter by chapter, asserting outcomes
(which pods run where, which were evicted, which share a GPU group), not the printout."""

from __future__ import annotations

import pytest

from pykai.cli.demo import CHAPTERS, DEV_RAYJOBS, MISSING_QUEUE, PROD_RAYJOB
from pykai.embedded.cluster import EmbeddedCluster
from pykai.model.meta import Obj


@pytest.fixture(scope="module")
def story() -> list[tuple[str, list[Obj], EmbeddedCluster]]:
    cluster = EmbeddedCluster.open(None)
    snapshots = []
    for chapter in CHAPTERS:
        chapter.act(cluster)
        snapshots.append((chapter.title, [p for p in cluster.list("Pod", None)], cluster))
    return snapshots


def pods_of(pods: list[Obj], **labels: str) -> list[Obj]:
    return [p for p in pods if all(p["metadata"]["labels"].get(k) == v for k, v in labels.items())]


def test_queues(story: list[tuple[str, list[Obj], EmbeddedCluster]]) -> None:
    cluster = story[1][2]
    team = cluster.get("Queue", "team-a")
    assert team is not None and team["spec"]["parentQueue"] == "department-1"
    dept = cluster.get("Queue", "department-1")
    assert dept is not None and "team-a" in dept["status"]["childQueues"]


def test_gang_of_three_starts_together(story: list[tuple[str, list[Obj], EmbeddedCluster]]) -> None:
    _, pods, _ = story[2]
    ray = pods_of(pods, **{"ray.io/cluster": "raycluster-sample"})
    assert len(ray) == 3 and all(p["spec"].get("nodeName") for p in ray)
    assert sorted(p["metadata"]["labels"]["ray.io/node-type"] for p in ray) == [
        "head",
        "worker",
        "worker",
    ]


def test_inference_preempts_training_as_a_gang(
    story: list[tuple[str, list[Obj], EmbeddedCluster]],
) -> None:
    _, before, _ = story[3]
    _, evicting, _ = story[4]
    _, after, cluster = story[5]
    training_before = {
        p["metadata"]["name"] for p in pods_of(before, **{"ray.io/cluster": "raycluster-sample"})
    }
    assert len(training_before) == 2
    terminating = [p for p in evicting if p["metadata"]["name"] in training_before]
    assert len(terminating) == 2 and all(p["metadata"]["deletionTimestamp"] for p in terminating)
    waiting = [p for p in evicting if "serve-llm" in p["metadata"]["name"]]
    assert not any(p["spec"].get("nodeName") for p in waiting)  # until the GPU is released
    names_after = {p["metadata"]["name"] for p in after}
    assert not training_before & names_after  # every training pod was evicted
    serving = [p for p in after if "serve-llm" in p["metadata"]["name"]]
    assert len(serving) == 2 and all(p["spec"].get("nodeName") for p in serving)
    gpu_worker = next(p for p in serving if p["metadata"]["labels"]["ray.io/node-type"] == "worker")
    assert gpu_worker["spec"]["nodeName"] == "gpu-node-1"
    recreated = pods_of(after, **{"ray.io/cluster": "raycluster-sample"})
    assert recreated and all(
        not p["spec"].get("nodeName") for p in recreated
    )  # KubeRay recreates; they wait
    reasons = {
        e["reason"] for e in cluster.list("Event") if e["involvedObject"]["name"] in training_before
    }
    assert "Evict" in reasons


def test_fractions_share_gpu_groups(story: list[tuple[str, list[Obj], EmbeddedCluster]]) -> None:
    _, pods, _ = story[6]
    vllm = [p for p in pods if p["metadata"]["namespace"] == "ai-workloads"]
    assert sorted(p["metadata"]["annotations"]["gpu-fraction"] for p in vllm) == ["0.2", "0.7"]
    assert len({p["metadata"]["labels"]["runai-gpu-group"] for p in vllm}) == 1
    assert len({p["spec"]["nodeName"] for p in vllm}) == 1
    half = pods_of(pods, **{"ray.io/cluster": "raycluster-half-gpu"})
    workers = [p for p in half if p["metadata"]["labels"]["ray.io/node-type"] == "worker"]
    head = [p for p in half if p["metadata"]["labels"]["ray.io/node-type"] == "head"]
    assert (
        len(workers) == 2
        and len({p["metadata"]["labels"]["runai-gpu-group"] for p in workers}) == 1
    )
    assert "runai-gpu-group" not in head[0]["metadata"]["labels"]
    env = {e["name"]: e["value"] for e in workers[0]["spec"]["containers"][0]["env"]}
    assert env["GPU_PORTION"] == "0.50"


def test_missing_queue_is_explained(story: list[tuple[str, list[Obj], EmbeddedCluster]]) -> None:
    _, pods, cluster = story[7]
    wrong = pods_of(pods, **{"ray.io/cluster": "raycluster-wrong-queue"})
    assert len(wrong) == 3 and not any(p["spec"].get("nodeName") for p in wrong)
    group = next(g for g in cluster.list("PodGroup") if g["spec"]["queue"] == MISSING_QUEUE)
    reasons = [r for c in group["status"]["schedulingConditions"] for r in c["reasons"]]
    assert reasons[0]["reason"] == "QueueDoesNotExist"
    assert f'queue "{MISSING_QUEUE}" does not exist' in reasons[0]["message"]
    events = [
        e["message"] for e in cluster.events_for("Pod", wrong[0]["metadata"]["name"], "default")
    ]
    assert any("QueueDoesNotExist" in m for m in events)


def running_of(pods: list[Obj], rayjob: str) -> list[str]:
    """The pods of a RayJob (its cluster's and its submitter's) on a node, not terminating."""
    return [
        p["metadata"]["name"]
        for p in pods
        if p["metadata"]["name"].startswith(f"{rayjob}-")
        and p["spec"].get("nodeName")
        and not p["metadata"].get("deletionTimestamp")
    ]


def test_kueue_prod_preempts_dev_by_suspension_and_dev_resumes(
    story: list[tuple[str, list[Obj], EmbeddedCluster]],
) -> None:
    first, second = DEV_RAYJOBS
    _, admitted, _ = story[8]
    # quota (3 CPUs) for one toy RayJob (2.5 CPUs with its submitter): the first runs whole
    assert len(running_of(admitted, first)) == 3 and running_of(admitted, second) == []
    _, preempted, _ = story[9]
    assert len(running_of(preempted, PROD_RAYJOB)) == 3
    assert running_of(preempted, first) == [] and running_of(preempted, second) == []
    _, resumed, cluster = story[10]
    assert len(running_of(resumed, first)) == 3 and running_of(resumed, second) == []
    resumed_job = cluster.get("RayJob", first, "default")
    waiting_job = cluster.get("RayJob", second, "default")
    assert resumed_job is not None and resumed_job["spec"]["suspend"] is False
    assert waiting_job is not None and waiting_job["spec"]["suspend"] is True
    (workload,) = [
        w
        for w in cluster.list("Workload", "default")
        if w["metadata"]["ownerReferences"][0]["name"] == first
    ]
    found = {c["type"]: (c["status"], c["reason"]) for c in workload["status"]["conditions"]}
    assert found["Admitted"] == ("True", "Admitted")
    assert found["Evicted"] == ("False", "QuotaReserved")  # it was preempted, then re-admitted
    stopped = [
        e["message"]
        for e in cluster.list("Event", "default")
        if e["involvedObject"]["name"] == first and e["reason"] == "Stopped"
    ]
    assert stopped and "due to prioritization in the ClusterQueue" in stopped[0]
