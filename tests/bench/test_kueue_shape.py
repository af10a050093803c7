"""``pykai bench kube --shape kueue``'s workloads: Kueue v0.17.0's scheduler performance baseline
(read from its module) scaled, as the same suspended Jobs for both rows but the pods'
scheduler; and the command line's refusals before any control plane starts."""

from __future__ import annotations

from collections import Counter

import pytest
import yaml
from typer.testing import CliRunner

from pykai.bench.kueue_ceiling import simulate
from pykai.bench.kueue_shape import (
    CLASS_LABEL,
    DURATION,
    KUEUE_SHAPE,
    PRIORITY_LABEL,
    QUEUE_LABEL,
    KueueShape,
    measured,
    nodes,
    setup,
)
from pykai.cli.app import app
from pykai.kube import peers
from pykai.model.quantity import parse_quantity


def baseline() -> dict[str, object]:
    """Kueue's own baseline configuration, from its module."""
    try:
        module = peers.module("kueue")
    except peers.PeerMissing as missing:
        pytest.skip(str(missing))
    path = module / "test/performance/scheduler/configs/baseline/generator.yaml"
    loaded: dict[str, object] = yaml.safe_load(path.read_text())
    return loaded


def test_the_shape_is_kueues_baseline() -> None:
    [cohorts] = baseline()["cohorts"]  # type: ignore[misc]
    [queues] = cohorts["queuesSets"]
    shape = KUEUE_SHAPE
    assert (shape.cohorts, shape.queues_per_cohort) == (cohorts["count"], queues["count"])
    assert (shape.cohorts, shape.queues_per_cohort) == (5, 6)
    assert shape.nominal_cpu == int(queues["nominalQuota"])
    assert shape.borrowing_limit_cpu == int(queues["borrowingLimit"])
    assert shape.reclaim_within_cohort == queues["reclaimWithinCohort"]
    assert shape.within_cluster_queue == queues["withinClusterQueue"]
    theirs = set()
    for s in queues["workloadsSets"]:
        for w in s["workloads"]:
            name, request = w["className"], int(w["request"])
            theirs.add(
                (name, s["count"], s["creationIntervalMs"], w["runtimeMs"], w["priority"], request)
            )
    mine = {
        (c.name, c.count, c.interval_ms, c.runtime_ms, c.priority, c.cpu) for c in shape.classes
    }
    assert mine == theirs


def test_setup_has_a_cluster_queue_and_local_queue_per_namespace_in_five_cohorts() -> None:
    objects = setup(KUEUE_SHAPE)
    kinds = Counter(o["kind"] for o in objects)
    assert kinds == {
        "ResourceFlavor": 1,
        "WorkloadPriorityClass": 3,
        "Namespace": 30,
        "ClusterQueue": 30,
        "LocalQueue": 30,
    }
    queues = [o for o in objects if o["kind"] == "ClusterQueue"]
    assert Counter(q["spec"]["cohortName"] for q in queues) == {f"cohort-{i}": 6 for i in range(5)}
    [quota] = queues[0]["spec"]["resourceGroups"][0]["flavors"][0]["resources"]
    assert (quota["nominalQuota"], quota["borrowingLimit"]) == ("20", "100")
    assert queues[0]["spec"]["preemption"] == {
        "reclaimWithinCohort": "Any",
        "withinClusterQueue": "LowerPriority",
    }
    for local in (o for o in objects if o["kind"] == "LocalQueue"):
        assert local["spec"]["clusterQueue"] == local["metadata"]["namespace"]
    priorities = {
        o["metadata"]["name"]: o["value"] for o in objects if o["kind"] == "WorkloadPriorityClass"
    }
    assert priorities == {"small": 50, "medium": 100, "large": 200}


def test_the_jobs_are_the_classes_scaled_the_same_for_both_rows_but_the_scheduler() -> None:
    kueue, pykai = measured(KUEUE_SHAPE, "kueue"), measured(KUEUE_SHAPE, "pykai")
    assert len(kueue) == len(pykai) == KUEUE_SHAPE.workloads == 30 * (7 + 2 + 1)
    per_queue = Counter((a.job["metadata"]["namespace"], a.cls) for a in kueue)
    assert set(per_queue.values()) == {7, 2, 1} and len(per_queue) == 90
    sizes = {"small": ("1", "200ms"), "medium": ("5", "500ms"), "large": ("20", "1000ms")}
    for mine, theirs in zip(kueue, pykai, strict=True):
        job = mine.job
        labels = job["metadata"]["labels"]
        assert labels[QUEUE_LABEL] == job["metadata"]["namespace"]
        assert labels[PRIORITY_LABEL] == labels[CLASS_LABEL] == mine.cls
        assert job["spec"]["suspend"] is True
        template = job["spec"]["template"]
        cpu = template["spec"]["containers"][0]["resources"]["requests"]["cpu"]
        assert (cpu, template["metadata"]["annotations"][DURATION]) == sizes[mine.cls]
        assert "schedulerName" not in template["spec"]
        assert theirs.job["spec"]["template"]["spec"]["schedulerName"] == "kai-scheduler"
        theirs.job["spec"]["template"]["spec"].pop("schedulerName")
        assert theirs == mine
    # each set's n-th after n + 1 intervals: small every 0.1 s, large every 1.2 s
    assert [a.at_s for a in kueue] == sorted(a.at_s for a in kueue)
    assert {a.at_s for a in kueue if a.cls == "large"} == {1.2}
    assert {a.at_s for a in kueue if a.cls == "small"} == {round(0.1 * n, 1) for n in range(1, 8)}


def test_scale_and_nodes() -> None:
    full = KUEUE_SHAPE.sized(scale=1)
    assert full.workloads == 15_000  # the baseline's own count
    assert KUEUE_SHAPE.sized(scale=1000).workloads == 30 * 3  # at least one of each class
    room = sum(parse_quantity(n["status"]["allocatable"]["cpu"]) for n in nodes(KUEUE_SHAPE))
    assert room >= 30 * 20  # every ClusterQueue's nominal quota at once
    KUEUE_SHAPE.check()
    with pytest.raises(ValueError, match="do not fit"):
        KueueShape(nodes=6).check()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--shape", "kueue", "--rows", "kai"], "cannot run rows kai"),
        (["--shape", "kueue", "--pods", "10"], "--pods does not apply"),
        (["--shape", "kueue", "--nodes", "2"], "do not fit on 2 nodes"),
        (["--shape", "fill", "--scale", "10"], "--scale applies to --shape kueue"),
        (["--shape", "kueue-backlog", "--nodes", "8"], "do not fit on 8 nodes"),
    ],
)
def test_what_the_kueue_shape_cannot_run_is_refused_before_measuring(
    args: list[str], message: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("pykai.bench.kueue_side_by_side.measure", lambda *_, **__: pytest.fail())
    result = CliRunner().invoke(app, ["bench", "kube", *args])
    assert result.exit_code == 1 and message in result.stderr, result.output


def test_the_table_has_each_rows_medians_its_ratio_to_kueue_and_a_failed_rows_log(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from pykai.bench.figures import summarize
    from pykai.bench.kueue_side_by_side import figures

    ok = {"run": 1, "row": "kueue", "ok": True, "preempted": 5, "cpu_total_s": 2.5}
    ok |= {"admissions_per_s": 2.0, "all_admitted_s": 15.0}
    ok |= {
        f"admission_{c}_{p}_s": 1.0 for c in ("small", "medium", "large") for p in ("median", "p99")
    }
    failed = {"run": 1, "row": "pykai", "ok": False, "error": "RowFailed: 3 of 30 Jobs admitted"}
    failed |= {"log_tail": "== pykai.log\nthe last line"}
    runs = [ok, failed]
    canned = {
        "runs": runs,
        "rows": summarize(runs, ("kueue", "pykai"), figures(KUEUE_SHAPE), ("kueue",)),
        "ceiling": simulate(KUEUE_SHAPE).figures(),
    }
    monkeypatch.setattr("pykai.bench.kueue_side_by_side.run_kueue_bench", lambda *_, **__: canned)
    result = CliRunner().invoke(app, ["bench", "kube", "--shape", "kueue"])
    assert result.exit_code == 0, result.output
    assert "300 Jobs" in result.output and "× KUEUE" in result.output
    [kueue] = [line for line in result.output.splitlines() if line.startswith("kueue")]
    assert "2 (2-2)" in kueue and "15 (15-15)" in kueue and "1.0" in kueue
    [ceiling] = [line for line in result.output.splitlines() if line.startswith("ceiling")]
    assert "214.29" in ceiling and "1.4" in ceiling
    assert "failed: pykai run 1: RowFailed: 3 of 30 Jobs admitted" in result.output
    assert "the last line" in result.output


def test_the_backlog_is_the_same_jobs_at_once_with_quota_for_all_of_them() -> None:
    backlog = KUEUE_SHAPE.backlog()
    assert backlog.demand_cpu() == 7 * 1 + 2 * 5 + 1 * 20
    assert (backlog.name, backlog.nominal_cpu, backlog.at_once) == ("kueue-backlog", 37, True)
    assert backlog.nodes == 12  # 30 ClusterQueues of 37 CPUs on nodes of 96
    backlog.check()
    arrivals = measured(backlog, "pykai")
    assert {a.at_s for a in arrivals} == {0.0}
    assert [a.job for a in arrivals] == [
        a.job for a in sorted(measured(KUEUE_SHAPE, "pykai"), key=lambda a: a.key)
    ]
    queues = [o for o in setup(backlog) if o["kind"] == "ClusterQueue"]
    [quota] = queues[0]["spec"]["resourceGroups"][0]["flavors"][0]["resources"]
    assert quota["nominalQuota"] == "37"
    # every Job is admitted the moment it is created: no rate, nothing waits
    ceiling = simulate(backlog)
    assert ceiling.all_admitted_s == 0.0 and ceiling.admissions_per_s is None
    assert set(ceiling.waits.values()) == {(0.0, 0.0)}
