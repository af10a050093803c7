"""Placement policies as engine plugins: each places only where a pod fits, follows its
plugin's rule on small cases, and the fragmentation measure matches the paper's definition."""

from __future__ import annotations

import random

import numpy as np
import pytest

from pykai.engine.fragmentation import FragIndex
from pykai.engine.policies import shape_from
from pykai.engine.settings import SchedulerConfig, TypicalShape
from pykai.engine.typical import TypicalPods
from pykai.model import builders
from pykai.model.meta import format_time
from pykai.model.queue import default_queues
from pykai.sim.objects import node_object, pod_object
from pykai.sim.openb import TraceNode, TracePod
from tests.engine.conftest import Engine
from tests.sim.conftest import small_nodes, small_pods

POLICIES = (
    *("binpack", "spread", "random", "dotprod", "clustering", "packing", "bestfit"),
    *("fgd", "pykai"),
)
PAPER = ("dotprod", "clustering", "packing", "bestfit", "fgd", "pykai")


def engine_of(policy: str, nodes: list[TraceNode], typical: list[TracePod] | None = None) -> Engine:
    """An engine with ``policy``, the nodes, and (for fragmentation) the typical pods given."""
    placement: dict[str, object] = {"gpu": policy}
    if typical is not None:
        placement["typicalPods"] = {"shapes": [s.model_dump() for s in shapes_of(typical)]}
    engine = Engine(SchedulerConfig.model_validate({"placementStrategy": placement}))
    engine.add(default_queues())
    engine.add(node_object(n) for n in nodes)
    return engine


def shapes_of(pods: list[TracePod]) -> list[TypicalShape]:
    counted: dict[tuple[int, int, int, tuple[str, ...]], int] = {}
    for p in pods:
        key = (p.cpu_milli, p.gpu_milli, p.num_gpu, p.gpu_spec)
        counted[key] = counted.get(key, 0) + 1
    return [
        TypicalShape(cpu_milli=cpu, gpu_milli=milli, gpus=n, gpu_models=list(spec), count=count)
        for (cpu, milli, n, spec), count in counted.items()
    ]


def submit(engine: Engine, pods: list[TracePod]) -> None:
    for i, p in enumerate(pods):
        group = f"pg-{p.name}"
        engine.add(
            [builders.podgroup(group, queue="default-queue", creation=format_time(1000 + i))]
        )
        obj = pod_object(p)
        obj["metadata"]["annotations"]["pod-group-name"] = group
        obj["metadata"]["creationTimestamp"] = format_time(1000 + i)
        obj["metadata"]["uid"] = f"uid-{p.name}"
        engine.add([obj])


def place(engine: Engine, pods: list[TracePod]) -> dict[str, str]:
    submit(engine, pods)
    engine.cycle()  # binds stay in the state as assumed (Binding), on their nodes
    return engine.placements()


@pytest.mark.parametrize("policy", POLICIES)
def test_every_policy_places_only_where_the_pod_fits(policy: str) -> None:
    nodes, pods = small_nodes(), small_pods(300)
    engine = engine_of(policy, nodes, pods)
    placed = place(engine, pods)
    by_name = {n.name: n for n in nodes}
    cpu = {n.name: n.cpu_milli for n in nodes}
    memory = {n.name: n.memory_mib for n in nodes}
    whole = {n.name: n.gpus for n in nodes}
    for p in pods:
        name = placed[p.name]
        if not name:
            continue
        if p.gpu_spec:
            assert by_name[name].model in p.gpu_spec
        cpu[name] -= p.cpu_milli
        memory[name] -= p.memory_mib
        whole[name] -= 0 if p.is_sharing else p.num_gpu
        assert cpu[name] >= 0 and memory[name] >= 0 and whole[name] >= 0
    assert sum(1 for n in placed.values() if n) > 40
    table = engine.state.nodes
    for name, groups in table.shared.items():  # a share never spans devices or overfills one
        assert all(g.used <= 1 + 1e-9 for g in groups.groups.values()), name
        assert len(groups.groups) <= whole[name], name
    assert (table.device_milli >= 0).all()


def two_nodes(policy: str, gpus: int = 2, typical: list[TracePod] | None = None) -> Engine:
    return engine_of(
        policy, [TraceNode(n, 32_000, 1000, gpus, "T4") for n in ("n1", "n0")], typical
    )


@pytest.mark.parametrize("policy", PAPER)
def test_equal_scores_go_to_the_smallest_node_name(policy: str) -> None:
    engine = two_nodes(policy, typical=[])
    assert place(engine, [TracePod("p", 1000, 1, 1, 500)])["p"] == "n0"
    assert place(engine, [TracePod("c", 1000, 1, 0, 0)])["c"] == "n0"


@pytest.mark.parametrize("policy", ["packing", "bestfit", "clustering"])
def test_shares_fill_the_shared_gpu_with_least_room(policy: str) -> None:
    engine = two_nodes(policy)
    place(engine, [TracePod("a", 1, 1, 1, 300)])  # n0: one GPU 700 free
    engine.state.upsert(node_object(TraceNode("n1", 32_000, 1000, 2, "T4")))
    placed = place(engine, [TracePod("b", 1, 1, 1, 500), TracePod("p", 1000, 1, 1, 400)])
    assert placed["b"] == "n0"  # the shared GPU with 700 free
    # n0 now has a GPU with 200 free and one idle; p (400) fits only on idle GPUs there and
    # on n1: bestfit / packing / clustering prefer the fuller node n0
    assert placed["p"] == "n0"
    groups = engine.state.nodes.shared["n0"].groups
    assert sorted(round(g.used, 3) for g in groups.values()) == [0.4, 0.8]


@pytest.mark.parametrize("policy", ["fgd", "pykai"])
def test_fgd_keeps_whole_gpus_for_whole_gpu_pods(policy: str) -> None:
    # typical pods: mostly whole GPUs; a share goes next to the other share, not on a free GPU
    typical = [TracePod(f"w{i}", 1000, 1, 1, 1000) for i in range(9)]
    typical.append(TracePod("s", 1, 1, 1, 200))
    engine = two_nodes(policy, typical=typical)
    placed = place(engine, [TracePod("a", 1, 1, 1, 500)])
    placed = place(engine, [TracePod("p", 1000, 1, 1, 400)])
    assert placed["p"] == placed["a"]
    groups = engine.state.nodes.shared[placed["a"]].groups
    assert [round(g.used, 3) for g in groups.values()] == [0.9]


def test_pykai_breaks_fgds_equal_scores_by_the_exact_fragmentation_growth() -> None:
    # Typical pods: mostly one whole GPU, some two GPUs, some one T4. Each node has one idle
    # GPU, useless to the two-GPU pods; n1's, a V100, is useless to the T4 pods too. Taking
    # it removes 30 milli of fragmentation there, 10 on n0: both truncate to FGD's score 50,
    # a tie FGD gives to n0; pykai takes the larger decrease.
    typical = [TracePod(f"w{i}", 1000, 1, 1, 1000) for i in range(970)]
    typical += [TracePod(f"d{i}", 1000, 1, 2, 1000) for i in range(10)]
    typical += [TracePod(f"t{i}", 1000, 1, 1, 1000, ("T4",)) for i in range(20)]
    nodes = [TraceNode("n0", 32_000, 1000, 1, "T4"), TraceNode("n1", 32_000, 1000, 1, "V100")]
    placed = {
        policy: place(engine_of(policy, nodes, typical), [TracePod("p", 1000, 1, 1, 1000)])["p"]
        for policy in ("fgd", "pykai")
    }
    assert placed == {"fgd": "n0", "pykai": "n1"}


def test_tie_breaks_order_options_lexicographically_and_keep_equal_ones_equal() -> None:
    from pykai.engine.policies.fgd import tie_breaks

    first, second = np.array([3.0, 1.0, 1.0, 2.0, 1.0]), np.array([0.0, 5.0, 5.0, 9.0, 4.0])
    fraction = tie_breaks(first, second)
    assert list(np.argsort(-fraction, kind="stable")) == [4, 1, 2, 3, 0]
    assert fraction[1] == fraction[2] and fraction.max() == 1.0 and fraction.min() > 0


def test_random_spreads_over_nodes_and_gpus() -> None:
    engine = two_nodes("random", gpus=4)
    placed = place(engine, [TracePod(f"p{i}", 1, 1, 1, 10) for i in range(60)])
    assert set(placed.values()) == {"n0", "n1"}
    groups = sum(len(g.groups) for g in engine.state.nodes.shared.values())
    assert groups >= 6  # a one-percent share almost always lands on an idle GPU of its own


def slow_fragment(typical: list[TracePod], cpu: int, gpu: list[int], model: str) -> float:
    """The paper's definition, shape by shape, as frequency-weighted GPU milli."""
    counted = {
        (s.cpu_milli, s.gpu_milli, s.gpus, tuple(s.gpu_models)): s.count for s in shapes_of(typical)
    }
    total, idle = sum(counted.values()), sum(gpu)
    out = 0.0
    for (s_cpu, milli, count, spec), n in counted.items():
        allowed = not spec or model in spec
        fits = milli > 0 and allowed and cpu >= s_cpu and sum(g >= milli for g in gpu) >= count
        out += n / total * (sum(g for g in gpu if g < milli) if fits else idle)
    return out


def test_the_measure_matches_the_papers_definition() -> None:
    rng = random.Random(3)
    kinds = [(0, 0), (1, 250), (1, 470), (1, 810), (1, 1000), (2, 1000), (4, 1000)]
    typical = []
    for i in range(400):
        n, m = rng.choice(kinds)
        spec = rng.choice([(), ("T4",)]) if n else ()
        typical.append(TracePod(f"p{i}", rng.choice([1000, 6000, 12_000]), 1, n, m, spec))
    nodes = [
        TraceNode(f"n{i:02d}", rng.randrange(0, 20_000), 1000, 8, rng.choice(["P100", "T4"]))
        for i in range(50)
    ]
    engine = engine_of("fgd", nodes)
    table = engine.state.nodes
    engine.state.ensure_current()
    gpu = np.array([[rng.choice([0, 50, 190, 470, 530, 1000]) for _ in range(8)] for _ in nodes])
    table.device_milli[:] = gpu
    table.row_version += 1
    given = TypicalPods(
        tuple(shape_from(s) for s in shapes_of(typical)), tuple(s.count for s in shapes_of(typical))
    )
    index = FragIndex.of(table, given)
    got = index.frag / index.model.total
    by_name = {n.name: n for n in nodes}
    want = [
        slow_fragment(typical, by_name[name].cpu_milli, gpu[i].tolist(), by_name[name].model)
        for i, name in enumerate(table.names)
    ]
    assert np.allclose(got, want)


def test_typical_pods_cover_95_percent_most_frequent_first() -> None:
    a, b, c = (shape_from(TypicalShape(cpu_milli=cpu, count=1)) for cpu in (1000, 2000, 3000))
    typical = TypicalPods.of([a] * 90 + [b] * 6 + [c] * 4)
    assert typical.shapes == (a, b)  # 96 % >= 95 %: stop
    assert typical.counts == (90, 6)


def test_a_scheduling_shard_names_any_policy_and_its_typical_pods() -> None:
    from pykai.engine.config import config_from_mapping
    from pykai.model.errors import ValidationError

    def shard(placement: dict[str, object]) -> dict[str, object]:
        spec = {"placementStrategy": placement}
        return {"kind": "SchedulingShard", "metadata": {"name": "default"}, "spec": spec}

    config = config_from_mapping(shard({"gpu": "fgd", "typicalPods": {"window": 50}}))
    assert (config.placement.gpu, config.placement.typical_pods.window) == ("fgd", 50)
    with pytest.raises(ValidationError, match=r"spec\.placementStrategy\.typicalPods\.window"):
        config_from_mapping(shard({"gpu": "pykai", "typicalPods": {"window": 0}}))


def test_a_bind_says_which_scorer_chose_its_node_and_the_runner_up() -> None:
    typical = [TracePod(f"w{i}", 1000, 1, 1, 1000) for i in range(9)]
    engine = two_nodes("fgd", typical=typical)
    submit(engine, [TracePod("p", 1000, 1, 1, 1000)])
    (bind,) = engine.cycle().binds
    assert bind.node == "n0" and bind.choice is not None
    assert (bind.choice.scorer, bind.choice.runner_up) == ("fgd", "n1")
    assert bind.choice.score == bind.choice.runner_up_score  # a tie, given to the first name
    assert bind.choice.describe().startswith("by fgd (score ")


@pytest.mark.parametrize("policy", ["binpack", "fgd"])
def test_a_node_claiming_absurdly_many_gpus_does_not_stop_placement(policy: str) -> None:
    engine = two_nodes(policy, typical=[TracePod("w", 1000, 1, 1, 1000)])
    huge = node_object(TraceNode("huge", 32_000, 1000, 1, "T4"))
    huge["status"]["allocatable"]["nvidia.com/gpu"] = "1e400"
    huge["status"]["capacity"]["nvidia.com/gpu"] = "1e400"
    engine.add([huge])
    placed = place(engine, [TracePod("p", 1000, 1, 1, 1000), TracePod("s", 1000, 1, 1, 500)])
    assert placed["p"] in ("n0", "n1") and placed["s"] in ("n0", "n1")


def test_typical_pods_come_from_the_last_pods_seen_and_one_index_is_kept() -> None:
    from pykai.engine.typical import SeenPods

    engine = engine_of("fgd", [TraceNode("n0", 32_000, 1000, 2, "T4")])
    engine.state.seen.resize(2)
    submit(engine, [TracePod("a", 1000, 1, 0, 0), TracePod("b", 2000, 1, 1, 500)])
    submit(engine, [TracePod("c", 3000, 1, 1, 1000)])
    counted = sorted((s.cpu_milli, s.gpu_milli, n) for s, n in engine.state.seen.counter.items())
    assert counted == [(2000, 500, 1), (3000, 1000, 1)]  # "a" dropped out of the window
    table = engine.state.nodes
    engine.state.ensure_current()
    first = FragIndex.of(table, engine.state.seen.typical())
    other = SeenPods(5)
    other.add(shape_from(TypicalShape(cpu_milli=1000, gpu_milli=250, gpus=1, count=1)))
    second = FragIndex.of(table, other.typical())
    assert second is not first
    assert [v for v in table.derived.values() if isinstance(v, FragIndex)] == [second]
