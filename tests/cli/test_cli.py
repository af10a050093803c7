"""The pykai CLI end to end on a cluster file: apply, get, describe, delete, errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from pykai.cli.app import app
from pykai.cli.manifests import ManifestError, parse_documents, read_manifests
from pykai.cli.printers import age, custom_columns
from pykai.model.builders import node, pod, podgroup

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
runner = CliRunner()


@pytest.fixture
def cluster(tmp_path: Path) -> list[str]:
    return ["--cluster", str(tmp_path / "c.db")]


def run(*args: str, stdin: str | None = None) -> tuple[int, str, str]:
    result = runner.invoke(app, list(args), input=stdin)
    return result.exit_code, result.stdout, result.stderr


def write(tmp_path: Path, name: str, objects: list[dict]) -> str:  # type: ignore[type-arg]
    path = tmp_path / name
    path.write_text(yaml.safe_dump_all(objects))
    return str(path)


def test_apply_prints_kubectl_lines_and_get_queues_shows_kai_columns(cluster: list[str]) -> None:
    code, out, _ = run("apply", "-f", str(EXAMPLES / "queues-department-1-team-a.yaml"), *cluster)
    assert code == 0
    assert out.splitlines() == [
        "queue.scheduling.run.ai/department-1 created",
        "queue.scheduling.run.ai/team-a created",
    ]
    code, out, _ = run("get", "queues", *cluster)
    lines = out.splitlines()
    assert lines[0].split() == ["NAME", "PRIORITY", "PARENT", "CHILDREN", "DISPLAYNAME"]
    rows = {line.split()[0]: line.split()[1:] for line in lines[1:]}
    assert rows["department-1"] == ['["team-a"]']
    assert rows["team-a"] == ["department-1"]
    code, out, _ = run("apply", "-f", str(EXAMPLES / "queues-department-1-team-a.yaml"), *cluster)
    assert "queue.scheduling.run.ai/team-a unchanged" in out


def test_pods_wide_json_and_custom_columns(cluster: list[str], tmp_path: Path) -> None:
    objects = [node("n1", gpus=2), podgroup("g", queue="default-queue", min_member=2)]
    objects += [pod(f"p{i}", group="g", annotations={"gpu-fraction": "0.5"}) for i in range(2)]
    assert run("apply", "-f", write(tmp_path, "x.yaml", objects), *cluster)[0] == 0
    _, out, _ = run("get", "pods", "-o", "wide", *cluster)
    header = out.splitlines()[0].split()
    assert header[-3:] == ["NODE", "GPU-FRACTION", "GPU-GROUP"]
    groups = {line.split()[-1] for line in out.splitlines()[1:]}
    assert len(groups) == 1 and "<none>" not in groups  # both halves share one GPU group
    _, out, _ = run("get", "pods", "-o", "json", *cluster)
    listed = json.loads(out)
    assert listed["kind"] == "List" and len(listed["items"]) == 2
    columns = (
        "NAME:.metadata.name,NODE:.spec.nodeName,"
        "GPU-FRACTION:.metadata.annotations.gpu-fraction,GPU-GROUP:.metadata.labels.runai-gpu-group"
    )
    _, out, _ = run("get", "pods", "-o", f"custom-columns={columns}", *cluster)
    rows = [line.split() for line in out.splitlines()]
    assert rows[0] == ["NAME", "NODE", "GPU-FRACTION", "GPU-GROUP"]
    assert rows[1][1:3] == ["n1", "0.5"] and rows[1][3] == rows[2][3]


def test_rejected_apply_exits_1_and_changes_nothing(cluster: list[str], tmp_path: Path) -> None:
    run("apply", "-f", str(EXAMPLES / "queues-department-1-team-a.yaml"), *cluster)
    before = run("get", "queues", "-o", "json", *cluster)[1]
    bad = {
        "apiVersion": "scheduling.run.ai/v2",
        "kind": "Queue",
        "metadata": {"name": "x"},
        "spec": {"parentQueue": "dept-9", "resources": {}},
    }
    code, _, err = run("apply", "-f", write(tmp_path, "bad.yaml", [bad]), *cluster)
    assert code == 1
    assert 'Queue "x": spec.parentQueue: queue "dept-9" does not exist' in err
    assert run("get", "queues", "-o", "json", *cluster)[1] == before


def test_malformed_yaml_names_file_and_line(tmp_path: Path, cluster: list[str]) -> None:
    path = tmp_path / "broken.yaml"
    path.write_text("kind: Pod\nmetadata:\n  name: x\n  labels: [a\n")
    code, _, err = run("apply", "-f", str(path), *cluster)
    assert code == 1 and f"{path}:" in err


def test_describe_podgroup_explains_pending(cluster: list[str], tmp_path: Path) -> None:
    objects = [
        node("n1", gpus=2),
        podgroup("big", queue="default-queue"),
        pod("big-0", group="big", gpus=4),
    ]
    run("apply", "-f", write(tmp_path, "x.yaml", objects), *cluster)
    code, out, _ = run("describe", "podgroup", "big", *cluster)
    assert code == 0
    assert "not enough GPUs: needs 4 on one node, largest free is 2" in out
    assert "Unschedulable" in out.split("Events:")[1]
    code, out, _ = run("describe", "pod", "big-0", *cluster)
    assert "PodGroup:     big" in out


def test_delete_and_not_found(cluster: list[str], tmp_path: Path) -> None:
    run("apply", "-f", write(tmp_path, "x.yaml", [node("n1"), pod("solo")]), *cluster)
    code, out, _ = run("delete", "pod", "solo", *cluster)
    assert code == 0 and out.strip() == 'pod "solo" deleted'
    code, _, err = run("delete", "pod", "solo", *cluster)
    assert code == 1 and "NotFound" in err
    code, _, err = run("get", "podz", *cluster)
    assert code == 1 and 'the server doesn\'t have a resource type "podz"' in err


def test_manifests_multi_doc_lists_dirs_and_stdin(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text("---\nkind: Pod\nmetadata: {name: a}\n---\n\n")
    (tmp_path / "b.yml").write_text(
        "kind: List\nitems:\n"
        "- {kind: Pod, metadata: {name: b}}\n- {kind: Pod, metadata: {name: c}}\n"
    )
    (tmp_path / "notes.txt").write_text("ignored")
    assert [o["metadata"]["name"] for o in read_manifests([str(tmp_path)])] == ["a", "b", "c"]
    with pytest.raises(ManifestError, match="not a mapping"):
        parse_documents("- just\n- a list\n", "x.yaml")
    code, out, _ = (
        runner.invoke(app, ["version"]).exit_code,
        runner.invoke(app, ["version"]).stdout,
        "",
    )
    assert code == 0 and out.startswith("pykai ")


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(5, "5s"), (119, "119s"), (182, "3m2s"), (900, "15m"), (5 * 3600, "5h"), (3 * 86400, "3d")],
)
def test_age(seconds: int, text: str) -> None:
    assert age(0, seconds) == text


def test_custom_columns_missing_values() -> None:
    out = custom_columns(
        "NAME:.metadata.name,X:.metadata.labels.missing", [{"metadata": {"name": "a"}}]
    )
    assert out.splitlines()[1].split() == ["a", "<none>"]


def test_demo_runs_every_chapter() -> None:
    result = runner.invoke(app, ["demo"])
    assert result.exit_code == 0, result.output
    assert "kubectl get queues" in result.stdout
    chapters = [line for line in result.stdout.splitlines() if line.startswith("== ")]
    assert len(chapters) == 7
    assert "QueueDoesNotExist" in result.stdout and "Preempted by" in result.stdout


def test_describe_workload_shows_its_podgroup_conditions_and_pod_events(cluster: list[str]) -> None:
    run("apply", "-f", str(EXAMPLES / "queues-department-1-team-a.yaml"), *cluster)
    run("apply", "-f", str(EXAMPLES / "ray-cluster.kai-scheduler.yaml"), *cluster)
    code, out, _ = run("get", "rayclusters", *cluster)
    assert code == 0 and out.splitlines()[1].split()[:3] == ["raycluster-sample", "2", "0"]
    code, out, _ = run("describe", "raycluster", "raycluster-sample", *cluster)
    assert code == 0
    assert "queue team-a, minMember 3, phase Pending" in out
    assert "the cluster has no nodes" in out and "Pod events:" in out


def test_run_rejects_an_invalid_scheduler_config(tmp_path: Path) -> None:
    bad = tmp_path / "shard.yaml"
    bad.write_text(
        "apiVersion: kai.scheduler/v1\nkind: SchedulingShard\nmetadata: {name: default}\n"
        "spec:\n  placementStrategy: {gpu: pack}\n"
    )
    code, _, err = run(
        "run", "--kubeconfig", str(tmp_path / "none"), "--scheduler-config", str(bad)
    )
    assert code == 1 and "spec.placementStrategy.gpu" in err
