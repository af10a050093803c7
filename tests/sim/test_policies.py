"""Placement policies: every one places only where a pod fits, and each follows its plugin's
rule on small cases."""

from __future__ import annotations

import random

import numpy as np
import pytest

from pykai.sim.cluster import Cluster
from pykai.sim.frag import TypicalPods
from pykai.sim.openb import MILLI, TraceNode, TracePod
from pykai.sim.policies import POLICIES, candidates
from tests.sim.conftest import small_nodes, small_pods


def cluster_of(nodes: list[TraceNode], pods: list[TracePod]) -> Cluster:
    return Cluster.of(nodes, TypicalPods.of(pods))


@pytest.mark.parametrize("policy", sorted(POLICIES))
def test_every_policy_places_only_where_the_pod_fits(policy: str) -> None:
    nodes, pods = small_nodes(), small_pods(300)
    cluster = cluster_of(nodes, pods)
    by_name = {n.name: n for n in nodes}
    cpu = {n.name: n.cpu_milli for n in nodes}
    memory = {n.name: n.memory_mib for n in nodes}
    gpu = {n.name: [MILLI] * n.gpus for n in nodes}
    placed = 0
    for pod in pods:
        rows = cluster.feasible(pod)
        if not len(rows):
            continue
        row, gpus = POLICIES[policy](cluster, pod, rows, random.Random(5))
        name = cluster.names[row]
        assert row in rows
        assert len(gpus) == pod.num_gpu == len(set(gpus))  # a share takes exactly one GPU
        if pod.gpu_spec:
            assert by_name[name].model in pod.gpu_spec
        cpu[name] -= pod.cpu_milli
        memory[name] -= pod.memory_mib
        for g in gpus:
            gpu[name][g] -= pod.gpu_milli
        assert cpu[name] >= 0 and memory[name] >= 0 and min(gpu[name], default=0) >= 0
        cluster.place(row, gpus, pod)
        placed += 1
    assert placed > 40
    for i, name in enumerate(cluster.names):
        assert cluster.cpu[i] == cpu[name] and cluster.memory[i] == memory[name]
        assert cluster.gpu[i, : len(gpu[name])].tolist() == gpu[name]


def test_place_refuses_a_gpu_without_room() -> None:
    cluster = cluster_of([TraceNode("n", 8000, 100, 1, "T4")], [])
    share = TracePod("a", 1, 1, 1, 600)
    cluster.place(0, [0], share)
    with pytest.raises(ValueError, match="does not fit"):
        cluster.place(0, [0], share)


def test_feasibility_checks_cpu_memory_models_and_whole_gpus() -> None:
    nodes = [
        TraceNode("a", 4000, 100, 2, "T4"),
        TraceNode("b", 16_000, 10, 2, "T4"),
        TraceNode("c", 16_000, 100, 2, "P100"),
        TraceNode("d", 16_000, 100, 1, "T4"),
    ]
    cluster = cluster_of(nodes, [])
    pod = TracePod("p", 8000, 50, 2, 1000, ("T4", "P100"))
    assert cluster.feasible(pod).tolist() == [2]  # a lacks CPU, b memory, d a second GPU
    assert cluster.feasible(TracePod("q", 8000, 50, 1, 500, ("T4",))).tolist() == [3]
    cluster.place(3, [0], TracePod("r", 1, 1, 1, 600))
    assert cluster.feasible(TracePod("s", 1, 1, 1, 500, ("T4",))).tolist() == [0, 1]


def test_candidate_growth_matches_re_measuring_the_node() -> None:
    nodes, pods = small_nodes(), small_pods(200)
    cluster = cluster_of(nodes, pods)
    rng = random.Random(2)
    for pod in pods:
        rows = cluster.feasible(pod)
        if not len(rows):
            continue
        found = candidates(cluster, pod, rows)
        for i, g, growth in zip(found.row, found.gpu, found.growth, strict=True):
            row = int(rows[i])
            after = cluster.gpu[row : row + 1].copy()
            if g >= 0:
                after[0, g] -= pod.gpu_milli
            else:
                after[0, np.flatnonzero(after[0] == MILLI)[: pod.num_gpu]] = 0
            new = cluster.frag_model.of_states(
                cluster.cpu[row : row + 1] - pod.cpu_milli, after, cluster.model[row : row + 1]
            )
            assert new[0] - cluster.frag[row] == growth
        row, gpus = POLICIES["fgd"](cluster, pod, rows, rng)
        cluster.place(row, gpus, pod)


def two_nodes(gpus: int = 2) -> Cluster:
    return cluster_of([TraceNode(n, 32_000, 1000, gpus, "T4") for n in ("n1", "n0")], [])


@pytest.mark.parametrize("policy", ["dotprod", "clustering", "packing", "bestfit", "fgd"])
def test_equal_scores_go_to_the_smallest_node_name(policy: str) -> None:
    cluster = two_nodes()
    assert cluster.names == ["n0", "n1"]
    pod = TracePod("p", 1000, 1, 1, 500)
    row, _ = POLICIES[policy](cluster, pod, cluster.feasible(pod), random.Random(0))
    assert cluster.names[row] == "n0"


@pytest.mark.parametrize("policy", ["dotprod", "clustering", "packing", "bestfit", "fgd"])
def test_equal_scores_follow_the_given_tie_ranks(policy: str) -> None:
    nodes = [TraceNode(n, 32_000, 1000, 2, "T4") for n in ("n0", "n1", "n2")]
    cluster = Cluster.of(nodes, TypicalPods.of([]), {"n0": 2, "n1": 0, "n2": 1})
    assert cluster.names == ["n1", "n2", "n0"]
    for pod in (TracePod("p", 1000, 1, 1, 500), TracePod("c", 1000, 1, 0, 0)):
        row, _ = POLICIES[policy](cluster, pod, cluster.feasible(pod), random.Random(0))
        assert cluster.names[row] == "n1"


def test_tie_ranks_must_cover_the_nodes() -> None:
    nodes = [TraceNode(n, 32_000, 1000, 2, "T4") for n in ("n0", "n1")]
    with pytest.raises(ValueError, match="every node"):
        Cluster.of(nodes, TypicalPods.of([]), {"n0": 0})


def test_packing_and_bestfit_fill_the_shared_gpu_with_least_room() -> None:
    for policy in ("packing", "bestfit", "clustering"):
        cluster = two_nodes()
        cluster.place(0, [1], TracePod("a", 1, 1, 1, 300))
        cluster.place(1, [0], TracePod("b", 1, 1, 1, 500))
        pod = TracePod("p", 1000, 1, 1, 400)
        assert POLICIES[policy](cluster, pod, cluster.feasible(pod), random.Random(0)) == (1, [0])


def test_random_spreads_over_nodes_and_gpus() -> None:
    cluster = two_nodes(4)
    pod = TracePod("p", 1, 1, 1, 100)
    rng = random.Random(0)
    picks = set()
    for _ in range(100):
        row, gpus = POLICIES["random"](cluster, pod, cluster.feasible(pod), rng)
        picks.add((row, *gpus))
    assert len(picks) == 8


def test_fgd_keeps_whole_gpus_for_whole_gpu_pods() -> None:
    # typical pods: whole GPUs; a share should go next to the other share, not on a free GPU
    pods = [TracePod(f"w{i}", 1000, 1, 1, 1000) for i in range(9)] + [TracePod("s", 1, 1, 1, 200)]
    cluster = cluster_of([TraceNode(n, 32_000, 1000, 2, "T4") for n in ("n0", "n1")], pods)
    cluster.place(1, [1], TracePod("a", 1, 1, 1, 500))
    pod = TracePod("p", 1000, 1, 1, 400)
    for policy in ("fgd", "pykai"):
        assert POLICIES[policy](cluster, pod, cluster.feasible(pod), random.Random(0)) == (1, [1])
