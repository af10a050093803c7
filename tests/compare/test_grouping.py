"""What the pod-groupers made, recorded and compared by owner (pykai.compare.observe, record,
diff), and which controller-made workloads the real KAI can replay (expressible): pods and
PodGroups a controller or grouper made have generated names that differ between the sides."""

from __future__ import annotations

from pathlib import Path

import yaml

from pykai.compare.diff import differences
from pykai.compare.expressible import plan
from pykai.compare.observe import observe
from pykai.compare.record import GroupMade, Record, StepRecord, SubGroup
from pykai.compare.scenario import Scenario, Step
from pykai.model.kinds import KindSpec
from pykai.model.meta import Obj

EXAMPLES = Path(__file__).parents[2] / "examples"
RAY = "RayCluster default/rc"


def record(side: str, step: StepRecord) -> Record:
    return Record(side, (step,), {"n1": "node-a"}, {})


def test_pods_a_controller_made_compare_by_their_class_not_their_name() -> None:
    kai = StepRecord(1, {"default/rc-head-abcde": "n1"}, made={"default/rc-head-abcde": RAY})
    ours = StepRecord(1, {"default/rc-head-vwxyz": "n1"}, made={"default/rc-head-vwxyz": RAY})
    assert differences(record("kai", kai), record("pykai", ours)) == []
    pending = StepRecord(1, {"default/rc-head-vwxyz": ""}, made={"default/rc-head-vwxyz": RAY})
    assert [d.field for d in differences(record("kai", kai), record("pykai", pending))] == [
        "bound",
        "packing",
    ]


def test_grouped_podgroups_compare_by_owner_field_by_field() -> None:
    made = GroupMade(3, "team-a", "train", "", (SubGroup("workers", 2),))
    kai = StepRecord(1, {}, grouped={RAY: made})
    assert (
        differences(record("kai", kai), record("pykai", StepRecord(1, {}, grouped={RAY: made})))
        == []
    )
    other = GroupMade(1, "team-a", "inference", "", ())
    found = differences(
        record("kai", kai), record("pykai", StepRecord(1, {}, grouped={RAY: other}))
    )
    assert [(d.field, d.peer, d.pykai) for d in found] == [
        (f"grouped {RAY} min_member", 3, 1),
        (f"grouped {RAY} priority_class", "train", "inference"),
        (f"grouped {RAY} sub_groups", (SubGroup("workers", 2),), ()),
    ]
    missing = differences(record("kai", kai), record("pykai", StepRecord(1, {})))
    assert [(d.field, d.pykai) for d in missing] == [(f"grouped {RAY}", None)]


class FakeApi:
    """What ``observe`` lists, by kind."""

    def __init__(self, objects: dict[str, list[Obj]]) -> None:
        self.objects = objects

    def list(self, kind: KindSpec) -> tuple[list[Obj], str]:
        return list(self.objects.get(kind.kind, [])), "1"


def owned(kind: str, name: str, uid: str, owner: Obj | None = None, **extra: object) -> Obj:
    meta: Obj = {"name": name, "namespace": "default", "uid": uid}
    if owner is not None:
        meta["ownerReferences"] = [
            {
                "kind": owner["kind"],
                "name": owner["metadata"]["name"],
                "uid": owner["metadata"]["uid"],
            }
        ]
    return {"kind": kind, "metadata": meta, "spec": {}, **extra}


def test_observe_classes_made_pods_by_top_owner_and_keys_podgroups_by_owner() -> None:
    service = owned("RayService", "svc", "u1")
    cluster = owned("RayCluster", "svc-raycluster-x1", "u2", service)
    worker = owned("Pod", "svc-raycluster-x1-gpu-group-worker-abc", "u3", cluster)
    worker["metadata"]["labels"] = {"ray.io/group": "gpu-group"}
    worker["spec"] = {"nodeName": "n1"}
    bare = owned("Pod", "bare", "u4")
    bare["spec"] = {"nodeName": ""}
    group = owned("PodGroup", "pg-svc-u1", "u5", service)
    group["spec"] = {
        "minMember": 2,
        "queue": "team-a",
        "priorityClassName": "inference",
        "subGroups": [{"name": "b", "minMember": 1, "parent": "a"}, {"name": "a", "minMember": 2}],
    }
    api = FakeApi(
        {
            "RayService": [service],
            "RayCluster": [cluster],
            "Pod": [worker, bare],
            "PodGroup": [group],
        }
    )
    seen = observe(api)  # type: ignore[arg-type]
    assert seen.made == {
        f"default/{worker['metadata']['name']}": "RayService default/svc gpu-group"
    }
    assert set(seen.podgroups) == {"RayService default/svc"}
    assert seen.grouped == {
        "RayService default/svc": GroupMade(
            2, "team-a", "inference", "", (SubGroup("a", 2), SubGroup("b", 1, "a"))
        )
    }


def scenario(*objects: Obj) -> Scenario:
    return Scenario("s", Path("."), {}, (Step("apply", ("x.yaml",), objects),))


def test_rayclusters_are_expressible_rayjobs_and_shared_gpus_are_not() -> None:
    ray = yaml.safe_load((EXAMPLES / "ray-cluster.kai-scheduler.yaml").read_text())
    assert plan(scenario(ray)).problems == ()
    sharing = yaml.safe_load((EXAMPLES / "ray-cluster.kai-gpu-sharing.yaml").read_text())
    (problem,) = plan(scenario(sharing)).problems
    assert "shared GPUs (gpu-fraction)" in problem
    job = {"apiVersion": "ray.io/v1", "kind": "RayJob", "metadata": {"name": "j"}, "spec": {}}
    (problem,) = plan(scenario(job)).problems
    assert "refuses every RayJob" in problem
