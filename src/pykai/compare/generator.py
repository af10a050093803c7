"""Small random KAI clusters from a seed, as scenario folders (issue 23): whole GPUs only.

Contract: ``generate(seed)`` is a pure function of the seed (``random.Random(seed)``, nothing
else read) returning two ``apply`` steps: the first holds the nodes (1 to ``MAX_NODES``, of a
few shapes), the queues (one or two parents with quota, limit and overQuotaWeight per
resource; leaves under them, ``MAX_QUEUES`` in all) and the first jobs, which run once it
settles; the second adds more jobs (pending, preempting or reclaiming). Jobs (``MAX_JOBS`` in
all) are gangs (minMember = replicas) or elastic (minMember < replicas), of one of KAI's four
priority classes, named in creation order (``j00``, ``j01``…) so that age and name order agree
on both sides however the creations fall across seconds. ``write(seed, folder)`` writes it in
the scenario folder format, so a failing seed can be saved and replayed."""

from __future__ import annotations

import random
from pathlib import Path

from pykai.compare.scenario import Scenario, Step, write_scenario
from pykai.model.meta import Obj

MAX_NODES, MAX_QUEUES, MAX_JOBS = 8, 6, 30
PRIORITIES = ("train", "build-preemptible", "build", "inference")  # 50, 75, 100, 125
# GPUs, CPUs, memory (Gi) of the node shapes
SHAPES = ((8, 64, 512), (4, 32, 256), (2, 16, 128))
RESOURCES = ("cpu", "gpu", "memory")


def generate(seed: int) -> list[Step]:
    """The two apply steps of seed ``seed`` (see the module's contract)."""
    rng = random.Random(seed)
    shapes = rng.sample(SHAPES, rng.randint(1, 2))
    nodes = [_node(f"n{i}", rng.choice(shapes)) for i in range(rng.randint(1, MAX_NODES))]
    gpus = sum(int(n["status"]["allocatable"]["nvidia.com/gpu"]) for n in nodes)
    parents = [f"dept-{c}" for c in "ab"[: rng.randint(1, 2)]]
    leaves = [f"team-{i}" for i in range(rng.randint(1, MAX_QUEUES - len(parents)))]
    queues = [_queue(rng, name, "", gpus) for name in parents]
    queues += [_queue(rng, name, rng.choice(parents), gpus) for name in leaves]
    biggest = max(int(n["status"]["allocatable"]["nvidia.com/gpu"]) for n in nodes)
    jobs: list[list[Obj]] = []
    for number in range(rng.randint(2, MAX_JOBS)):
        jobs.append(_job(rng, f"j{number:02d}", rng.choice(leaves), biggest))
        if sum(len(j) - 1 for j in jobs) > 3 * gpus + 8:  # enough to contend; fewer to wait for
            break
    first = rng.randint(1, max(1, len(jobs) - 1))
    running = [o for job in jobs[:first] for o in job]
    added = [o for job in jobs[first:] for o in job]
    steps = [Step("apply", ("running.yaml",), tuple([*nodes, *queues, *running]))]
    if added:
        steps.append(Step("apply", ("added.yaml",), tuple(added)))
    return steps


def write(seed: int, folder: Path) -> Scenario:
    """Seed ``seed`` written to ``folder`` (and read back)."""
    description = f"seed {seed} of pykai.compare.generator: running jobs, then more"
    return write_scenario(folder, description, generate(seed))


def _node(name: str, shape: tuple[int, int, int]) -> Obj:
    gpus, cpus, memory = shape
    resources = {
        "cpu": str(cpus),
        "memory": f"{memory}Gi",
        "pods": "110",
        "nvidia.com/gpu": str(gpus),
    }
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "spec": {},
        "status": {"allocatable": dict(resources), "capacity": dict(resources)},
    }


def _queue(rng: random.Random, name: str, parent: str, gpus: int) -> Obj:
    resources: Obj = {}
    for resource in RESOURCES:
        if resource != "gpu" and rng.random() < 0.8:
            resources[resource] = {"quota": -1, "limit": -1, "overQuotaWeight": 1}
            continue
        scale = gpus  # about one pod a GPU: every job's pod asks 1 CPU and 1Gi
        quota = rng.choice([0, rng.randint(0, max(1, scale // 2)), -1])
        limit = rng.choice([-1, -1, max(quota, 0) + rng.randint(1, max(1, scale))])
        weight = rng.randint(0, 3)
        # a pod's request in the queue's units: KAI's cpu is in millicores, its memory in MB
        unit = {"cpu": 1000, "memory": 1100, "gpu": 1}[resource]
        amount = quota * unit if quota > 0 else quota
        resources[resource] = {
            "quota": amount,
            "limit": limit * unit if limit > 0 else limit,
            "overQuotaWeight": weight,
        }
    spec: Obj = {"resources": resources}
    if parent:
        spec["parentQueue"] = parent
    return {
        "apiVersion": "scheduling.run.ai/v2",
        "kind": "Queue",
        "metadata": {"name": name},
        "spec": spec,
    }


def _job(rng: random.Random, name: str, queue: str, biggest: int) -> list[Obj]:
    replicas = rng.choice([1, 1, 2, 2, 3, 4])
    elastic = replicas > 1 and rng.random() < 0.3
    minimum = rng.randint(1, replicas - 1) if elastic else replicas
    gpus = rng.choice([g for g in (1, 1, 2, 4, 8) if g <= biggest])
    group: Obj = {
        "apiVersion": "scheduling.run.ai/v2alpha2",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "minMember": minimum,
            "queue": queue,
            "priorityClassName": rng.choice(PRIORITIES),
        },
    }
    pods = [
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": f"{name}-{index}",
                "namespace": "default",
                "annotations": {"pod-group-name": name},
            },
            "spec": {
                "schedulerName": "kai-scheduler",
                "terminationGracePeriodSeconds": 0,
                "containers": [
                    {
                        "name": "main",
                        "image": "busybox",
                        "resources": {
                            "requests": {"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": str(gpus)},
                            "limits": {"nvidia.com/gpu": str(gpus)},
                        },
                    }
                ],
            },
        }
        for index in range(replicas)
    ]
    return [group, *pods]
