"""Groupers on the real shapes of KubeRay, apps, batch and Kubeflow objects."""

from __future__ import annotations

import pytest

from pykai.grouping.podgrouper import plan_for
from pykai.grouping.ray import RayGroupingError
from pykai.model.builders import pod
from pykai.model.meta import Obj

CLASSES = frozenset({"train", "build", "inference", "build-preemptible"})


def owned(p: Obj, owner: Obj) -> Obj:
    p["metadata"]["ownerReferences"] = [
        {
            "apiVersion": owner["apiVersion"],
            "kind": owner["kind"],
            "name": owner["metadata"]["name"],
            "uid": owner["metadata"]["uid"],
            "controller": True,
        }
    ]
    return p


def lookup(*objects: Obj):  # type: ignore[no-untyped-def]
    table = {(o["kind"], o["metadata"]["name"]): o for o in objects}
    return lambda kind, name, namespace: table.get((kind, name))


def raycluster(workers: list[dict], labels: dict[str, str] | None = None) -> Obj:  # type: ignore[type-arg]
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {"name": "rc", "namespace": "default", "uid": "rc-uid", "labels": labels or {}},
        "spec": {
            "headGroupSpec": {"template": {"spec": {"containers": [{"name": "head"}]}}},
            "workerGroupSpecs": workers,
        },
    }


def test_ray_min_member_counts_head_and_minimum_workers() -> None:
    rc = raycluster(
        [
            {"groupName": "gpu", "replicas": 4, "minReplicas": 2, "numOfHosts": 2},
            {"groupName": "cpu", "replicas": 3},
            {"groupName": "off", "replicas": 5, "suspend": True},
            {"groupName": "empty", "replicas": 0, "minReplicas": 0},
        ],
        labels={"kai.scheduler/queue": "team-a", "priorityClassName": "build"},
    )
    head = owned(
        pod("rc-head-x", labels={"ray.io/node-type": "head", "ray.io/group": "headgroup"}), rc
    )
    plan = plan_for(head, lookup(rc), CLASSES)
    assert plan.min_member == 1 + 2 * 2 + 3
    assert plan.name == "pg-rc-rc-uid" and plan.queue == "team-a" and plan.priority_class == "build"
    assert [g["name"] for g in plan.sub_groups] == ["headgroup", "gpu", "cpu"]
    assert plan.subgroup_of_pod == "headgroup"
    worker = owned(
        pod("rc-gpu-worker-y", labels={"ray.io/node-type": "worker", "ray.io/group": "gpu"}), rc
    )
    assert plan_for(worker, lookup(rc), CLASSES).subgroup_of_pod == "gpu"


def test_ray_min_replicas_above_replicas_is_an_error() -> None:
    rc = raycluster([{"groupName": "w", "replicas": 1, "minReplicas": 3}])
    with pytest.raises(RayGroupingError, match="minReplicas 3 is more than replicas 1"):
        plan_for(owned(pod("p"), rc), lookup(rc), CLASSES)


def test_rayservice_is_the_top_owner_and_ray_priority_label_counts() -> None:
    service = {
        "apiVersion": "ray.io/v1",
        "kind": "RayService",
        "metadata": {
            "name": "svc",
            "namespace": "default",
            "uid": "svc-uid",
            "labels": {"kai.scheduler/queue": "q", "ray.io/priority-class-name": "inference"},
        },
        "spec": {
            "rayClusterConfig": {
                "workerGroupSpecs": [{"groupName": "g", "replicas": 1, "minReplicas": 1}]
            }
        },
    }
    rc = raycluster([])
    rc["metadata"]["ownerReferences"] = [
        {
            "apiVersion": "ray.io/v1",
            "kind": "RayService",
            "name": "svc",
            "uid": "svc-uid",
            "controller": True,
        }
    ]
    plan = plan_for(owned(pod("p"), rc), lookup(rc, service), CLASSES)
    assert (plan.name, plan.queue, plan.priority_class, plan.min_member) == (
        "pg-svc-svc-uid",
        "q",
        "inference",
        2,
    )


def test_deployment_pods_get_one_group_each_with_inference() -> None:
    deploy = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "d", "uid": "d-uid", "namespace": "default"},
    }
    rs = {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {
            "name": "d-1",
            "uid": "rs-uid",
            "namespace": "default",
            "ownerReferences": [
                {"kind": "Deployment", "name": "d", "uid": "d-uid", "controller": True}
            ],
        },
    }
    p = owned(pod("d-1-abc", uid="pod-uid", labels={"kai.scheduler/queue": "test"}), rs)
    plan = plan_for(p, lookup(deploy, rs), CLASSES)
    assert (plan.name, plan.priority_class, plan.queue, plan.min_member) == (
        "pg-d-1-abc-pod-uid",
        "inference",
        "test",
        1,
    )


def test_job_pods_get_one_group_each_named_after_the_job_uid() -> None:
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "j", "uid": "job-uid", "namespace": "default"},
    }
    plan = plan_for(owned(pod("j-xyz"), job), lookup(job), CLASSES)
    assert (plan.name, plan.priority_class, plan.min_member) == ("pg-j-xyz-job-uid", "train", 1)


def test_pytorchjob_min_member() -> None:
    job = {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": "pt", "uid": "pt-uid", "namespace": "default"},
        "spec": {"pytorchReplicaSpecs": {"Master": {"replicas": 1}, "Worker": {"replicas": 3}}},
    }
    assert plan_for(owned(pod("pt-master-0"), job), lookup(job), CLASSES).min_member == 4
    job["spec"]["elasticPolicy"] = {"minReplicas": 1}
    assert plan_for(owned(pod("pt-master-0"), job), lookup(job), CLASSES).min_member == 2
    job["spec"]["runPolicy"] = {"schedulingPolicy": {"minAvailable": 3}}
    assert plan_for(owned(pod("pt-master-0"), job), lookup(job), CLASSES).min_member == 3
