"""The page model on the engine alone: queue figures, the GPU map, pending jobs in the order
the scheduler will try them, evictions as their events say."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pykai.dashboard.memory import Memory, from_decision, from_event
from pykai.dashboard.model import allocated_gpus, build_page
from pykai.engine.decisions import Reason
from pykai.engine.settings import SchedulerConfig
from pykai.model.builders import node, pod, podgroup, queue
from pykai.model.meta import Obj
from tests.engine.conftest import Engine


def job(
    name: str, queue_name: str, gpus: int = 0, priority: str = "train", **extra: str
) -> list[Obj]:
    """A one-pod PodGroup; ``node_name`` and ``phase`` make it run; ``annotations`` as JSON."""
    annotations = {"gpu-fraction": extra.pop("fraction")} if "fraction" in extra else None
    return [
        podgroup(
            name,
            queue=queue_name,
            priority_class=priority,
            uid=f"uid-{name}",
            creation=extra.pop("created", "2024-01-01T00:00:00Z"),
        ),
        pod(
            f"{name}-0",
            group=name,
            gpus=gpus,
            uid=f"uid-{name}-0",
            annotations=annotations,
            creation="2024-01-01T00:00:00Z",
            **extra,
        ),
    ]


def page(engine: Engine, reasons: Mapping[str, Sequence[Reason]] | None = None) -> dict:  # type: ignore[type-arg]
    return build_page(
        engine.state,
        SchedulerConfig(),
        engine.now,
        reasons=reasons or {},
        evictions=[],
        history=Memory().history(),
    )


def test_queue_tree_figures_and_the_gpu_map() -> None:
    """Two teams under one department on a node of 8 GPUs and one of 4: team-a runs 6 whole
    GPUs and half a device, team-b the other half of that device. Fair share: each team
    deserves its quota (3) up to its request; the rest of the 12 GPUs goes over quota to
    team-a, the only one asking for more, up to its limit of 10 (KAI's proportion plugin)."""
    engine = Engine()
    engine.add([node("big", gpus=8), node("small", gpus=4), node("cpu-only", gpus=0)])
    engine.add(
        [
            queue("dept"),
            queue("team-a", parent="dept", gpu=(3, 10, 1)),
            queue("team-b", parent="dept", gpu=(3, -1, 1)),
        ]
    )
    engine.add(job("a-train", "team-a", gpus=6, node_name="big", phase="Running"))
    engine.add(job("a-half", "team-a", fraction="0.5"))
    engine.add(job("b-half", "team-b", fraction="0.5"))
    engine.add(job("a-wait", "team-a", gpus=16))  # fits nowhere: stays pending
    engine.cycle()
    model = page(engine)

    names = [(q["name"], q["depth"]) for q in model["queues"]]
    assert names == [("dept", 0), ("team-a", 1), ("team-b", 1)]
    team_a = next(q for q in model["queues"] if q["name"] == "team-a")["figures"]["gpu"]
    assert team_a == {"quota": 3, "limit": 10, "fairShare": 10, "allocated": 6.5, "requested": 22.5}
    team_b = next(q for q in model["queues"] if q["name"] == "team-b")["figures"]["gpu"]
    assert team_b["limit"] is None and team_b["fairShare"] == 0.5 and team_b["allocated"] == 0.5

    gpus = model["gpus"]
    nodes = dict(gpus["nodes"])
    a, b = gpus["queues"].index("team-a"), gpus["queues"].index("team-b")
    assert nodes["cpu-only"] == []
    assert len(nodes["big"]) == 8 and nodes["big"].count([[a, 1.0]]) == 6
    assert len(nodes["small"]) == 4
    # the two halves share one device (binpack), whatever node it is on
    shared = [d for devices in nodes.values() for d in devices if len(d) == 2]
    assert shared == [[[a, 0.5], [b, 0.5]]]
    assert [(s["queues"][0]["queue"], s["queues"][1]["queue"]) for s in gpus["shared"]] == [
        ("team-a", "team-b")
    ]
    assert allocated_gpus(engine.state) == {"dept": 7.0, "team-a": 6.5, "team-b": 0.5}


def test_pending_jobs_in_the_order_the_scheduler_tries_them() -> None:
    """Nothing fits (16 GPUs on a node of 8). Queue order: team-b, further below its fair
    share (it runs nothing), before team-a; job order in a queue: higher priority first,
    then older first. Jobs of a missing queue have no position."""
    engine = Engine()
    engine.add(
        [node("n1", gpus=8), queue("team-a", gpu=(4, -1, 1)), queue("team-b", gpu=(4, -1, 1))]
    )
    engine.add(job("a-run", "team-a", gpus=2, node_name="n1", phase="Running"))
    engine.add(job("a-old", "team-a", gpus=16, created="2024-01-01T00:00:01Z"))
    engine.add(job("a-new", "team-a", gpus=16, created="2024-01-01T00:00:05Z"))
    engine.add(
        job("a-urgent", "team-a", gpus=16, priority="inference", created="2024-01-01T00:00:09Z")
    )
    engine.add(job("b-one", "team-b", gpus=16, created="2024-01-01T00:00:09Z"))
    engine.add(job("lost", "no-such-queue", gpus=1))
    result = engine.cycle()
    pending = page(engine, result.unschedulable)["pending"]

    rows = [(j["job"], j["position"], j["queuePosition"]) for j in pending["jobs"]]
    assert rows == [
        ("default/b-one", 1, 1),
        ("default/a-urgent", 2, 1),
        ("default/a-old", 3, 2),
        ("default/a-new", 4, 3),
        ("default/lost", None, None),
    ]
    assert pending["total"] == 5
    by_job = {j["job"]: j for j in pending["jobs"]}
    assert "needs 16 on one node" in by_job["default/b-one"]["reason"]
    assert by_job["default/lost"]["reason"].startswith("QueueDoesNotExist")


def test_an_eviction_names_its_action_and_preemptor() -> None:
    """An inference job preempts a training job of the same queue (KAI's preempt): the
    dashboard says so, whether it reads the decision (pykai run) or the Evict event
    (the embedded cluster) that says it."""
    engine = Engine()
    engine.add([node("n1", gpus=8), queue("prod", gpu=(8, -1, 1))])
    engine.add(job("train", "prod", gpus=8, node_name="n1", phase="Running"))
    engine.add(job("serve", "prod", gpus=8, priority="inference"))
    evict = engine.cycle().evictions[0]
    seen = from_decision(evict, 100.0)
    assert (seen.pod, seen.action, seen.preemptor) == ("train-0", "preempt", "default/serve")
    event = {
        "reason": "Evict",
        "involvedObject": {"kind": "Pod", "namespace": "default", "name": "train-0"},
        "message": f"{seen.message} (action: preempt)",
        "lastTimestamp": "1970-01-01T00:01:40Z",
    }
    assert from_event(event) == seen
    assert from_event({**event, "involvedObject": {"kind": "PodGroup", "name": "train"}}) is None


def test_a_stale_gang_names_no_preemptor() -> None:
    """A gang below its minimum for longer than the grace period is evicted by
    stalegangeviction; its message names the gang itself, which is no preemptor."""
    engine = Engine()
    engine.add([node("n1", gpus=8), queue("prod")])
    gang = podgroup("gang", queue="prod", min_member=2, uid="uid-gang")
    gang["metadata"]["annotations"] = {
        "kai.scheduler/stale-podgroup-timestamp": "1970-01-01T00:00:00Z"
    }
    engine.add([gang, pod("gang-0", group="gang", gpus=1, node_name="n1", phase="Running")])
    evictions = engine.cycle().evictions
    assert [e.reason for e in evictions] == ["StaleGang"]
    seen = from_decision(evictions[0], engine.now)
    assert (seen.action, seen.preemptor) == ("stalegangeviction", "")
