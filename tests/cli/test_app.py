"""The pykai commands end to end on a cluster file."""

from __future__ import annotations

import json
import shlex
import sqlite3
import sys
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from pykai.cli.app import app
from pykai.model.builders import node, pod, podgroup, queue
from pykai.model.meta import Obj
from tests.cli.conftest import EXAMPLES, QUEUES, Cli, write

GPU_COLUMNS = (
    "custom-columns=NAME:.metadata.name,NODE:.spec.nodeName,"
    "GPU-FRACTION:.metadata.annotations.gpu-fraction,GPU-GROUP:.metadata.labels.runai-gpu-group"
)


def shared_gpu_pair() -> list[Obj]:
    """A node with 2 GPUs and a gang of two pods asking half a GPU each."""
    halves = [
        pod(f"half-{i}", group="g", annotations={"gpu-fraction": "0.5"}, labels={"app": "half"})
        for i in range(2)
    ]
    return [node("n1", gpus=2), podgroup("g", queue="default-queue", min_member=2), *halves]


def test_apply_prints_one_kubectl_line_per_object(cli: Cli, tmp_path: Path) -> None:
    assert cli("apply", "-f", QUEUES).out.splitlines() == [
        "queue.scheduling.run.ai/department-1 created",
        "queue.scheduling.run.ai/team-a created",
    ]
    assert "queue.scheduling.run.ai/team-a unchanged" in cli("apply", "-f", QUEUES).out
    changed = yaml.safe_load_all(Path(QUEUES).read_text())
    queues = list(changed)
    queues[1]["spec"]["priority"] = 300
    out = cli("apply", "-f", write(tmp_path, "q.yaml", queues)).out
    assert out.splitlines() == [
        "queue.scheduling.run.ai/department-1 unchanged",
        "queue.scheduling.run.ai/team-a configured",
    ]


def test_apply_from_stdin_and_a_directory(cli: Cli, tmp_path: Path) -> None:
    manifests = tmp_path / "manifests"
    manifests.mkdir()
    write(manifests, "1-node.yaml", [node("n1")])
    write(manifests, "2-pod.yaml", [pod("solo")])
    assert cli("apply", "-f", str(manifests)).out.splitlines() == [
        "node/n1 created",
        "pod/solo created",
    ]
    stdin = yaml.safe_dump(pod("other"))
    assert cli("apply", "-f", "-", stdin=stdin).out == "pod/other created\n"


def test_rejected_apply_lists_every_problem_and_changes_nothing(cli: Cli, tmp_path: Path) -> None:
    cli("apply", "-f", QUEUES)
    before = cli("get", "queues").out
    orphan = {
        "apiVersion": "scheduling.run.ai/v2",
        "kind": "Queue",
        "metadata": {"name": "orphan"},
        "spec": {"parentQueue": "dept-9", "resources": {}},
    }
    bad_pod = pod("bad", gpus=1)
    bad_pod["metadata"]["annotations"]["gpu-fraction"] = "1.5"
    result = cli("apply", "-f", write(tmp_path, "bad.yaml", [orphan, bad_pod]))
    assert result.code == 1 and result.out == ""
    problems = result.err.splitlines()
    assert len(problems) >= 2 and all(line.startswith("error: ") for line in problems)
    assert any('Queue "orphan": spec.parentQueue' in line for line in problems)
    assert any('Pod "bad"' in line for line in problems)
    assert cli("get", "queues").out == before


def _nightly(api_version: str, **spec: object) -> Obj:
    template = {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "x"}]}}
    return {
        "apiVersion": api_version,
        "kind": "CronJob",
        "metadata": {"name": "nightly", "namespace": "default"},
        "spec": {"schedule": "0 0 * * *", "jobTemplate": {"spec": {"template": template}}, **spec},
    }


def test_apply_refuses_versions_kubernetes_1_34_does_not_serve_as_kubectl_does(
    cli: Cli, tmp_path: Path
) -> None:
    """kubectl v1.34 against a v1.34 apiserver, applying these three objects, printed
    ``error: resource mapping not found for name: "nightly" namespace: "default" from "…":
    no matches for kind "CronJob" in version "batch/v1beta1"`` and ``ensure CRDs are installed
    first``, and the same for the PodDisruptionBudget in policy/v1beta1 and the PriorityClass
    in scheduling.k8s.io/v1beta1 (the apiserver answers 404 for those versions' paths): apply
    names each object, kind and version, and writes nothing."""
    budget = {
        "apiVersion": "policy/v1beta1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": "pdb", "namespace": "default"},
        "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "x"}}},
    }
    old_class = {
        "apiVersion": "scheduling.k8s.io/v1beta1",
        "kind": "PriorityClass",
        "metadata": {"name": "old"},
        "value": 10,
    }
    old = [_nightly("batch/v1beta1"), budget, old_class]
    result = cli("apply", "-f", write(tmp_path, "old.yaml", old))
    assert (result.code, result.out) == (1, "")
    assert result.err.splitlines() == [
        'error: CronJob "nightly": apiVersion: no matches for kind "CronJob" in version '
        '"batch/v1beta1": Kubernetes v1.25 stopped serving it (use apiVersion batch/v1)',
        'error: PodDisruptionBudget "pdb": apiVersion: no matches for kind "PodDisruptionBudget" '
        'in version "policy/v1beta1": Kubernetes v1.25 stopped serving it '
        "(use apiVersion policy/v1)",
        'error: PriorityClass "old": apiVersion: no matches for kind "PriorityClass" in version '
        '"scheduling.k8s.io/v1beta1": Kubernetes v1.22 stopped serving it '
        "(use apiVersion scheduling.k8s.io/v1)",
    ]
    assert cli("get", "cronjobs,pdb").err == "No resources found in default namespace.\n"

    budget["apiVersion"], old_class["apiVersion"] = "policy/v1", "scheduling.k8s.io/v1"
    new = [_nightly("batch/v1", timeZone="Europe/Berlin", suspend=True), budget, old_class]
    assert cli("apply", "-f", write(tmp_path, "new.yaml", new)).out.splitlines() == [
        "cronjob.batch/nightly created",
        "poddisruptionbudget.policy/pdb created",
        "priorityclass.scheduling.k8s.io/old created",
    ]


def test_apply_refuses_a_missing_namespace_unless_it_is_among_the_objects(
    cli: Cli, tmp_path: Path
) -> None:
    refused = cli("apply", "-f", write(tmp_path, "x.yaml", [pod("a"), pod("b", namespace="ml")]))
    assert (refused.code, refused.out) == (1, "")
    assert refused.err == 'Error from server (NotFound): namespaces "ml" not found\n'
    assert cli("get", "pods", "-A").err == "No resources found.\n"  # nothing written
    ml = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ml"}}
    done = cli("apply", "-f", write(tmp_path, "y.yaml", [pod("b", namespace="ml"), ml]))
    assert done.out.splitlines() == ["pod/b created", "namespace/ml created"]


def test_create_namespace_once_as_kubectl(cli: Cli) -> None:
    assert {row[0] for row in cli.lines("get", "ns")} >= {
        "default", "kube-system", "kube-public", "kube-node-lease",
    }  # fmt: skip
    assert cli("create", "ns", "team-a").out == "namespace/team-a created\n"
    again = cli("create", "namespace", "team-a")
    assert again.code == 1
    assert again.err == 'Error from server (AlreadyExists): namespaces "team-a" already exists\n'
    bad = cli("create", "namespace", "Team_A")
    assert bad.code == 1 and 'Namespace "Team_A": metadata.name' in bad.err


def test_deleting_a_namespace_deletes_what_is_in_it_but_default_stays(
    cli: Cli, tmp_path: Path
) -> None:
    cli("create", "namespace", "ml")
    cli(
        "apply",
        "-f",
        write(tmp_path, "a.yaml", [node("n1", gpus=1), pod("a", namespace="ml", gpus=1)]),
    )
    cli("apply", "-f", write(tmp_path, "b.yaml", [pod("b", gpus=1)]))
    assert cli.lines("get", "pod", "b", "--no-headers")[0][2] == "Pending"  # a has the GPU
    assert cli("delete", "namespace", "ml").out == 'namespace "ml" deleted\n'
    assert cli("get", "pods", "-n", "ml").err == "No resources found in ml namespace.\n"
    assert cli.lines("get", "pod", "b", "--no-headers")[0][2] == "Running"  # a's GPU is free
    kept = cli("delete", "ns", "default")
    assert (kept.code, kept.err) == (
        1,
        'Error from server (Forbidden): namespaces "default" is forbidden: '
        "this namespace may not be deleted\n",
    )


def test_malformed_yaml_is_one_line_with_file_and_line(cli: Cli, tmp_path: Path) -> None:
    path = tmp_path / "broken.yaml"
    path.write_text("kind: Pod\nmetadata:\n  name: x\n  labels: a: b\n")
    result = cli("apply", "-f", str(path))
    assert (result.code, result.err) == (
        1,
        f"error: {path}:4: mapping values are not allowed here\n",
    )


def test_get_queues_has_exactly_kais_columns(cli: Cli) -> None:
    cli("apply", "-f", QUEUES)
    out = cli("get", "queues").out.splitlines()
    assert out[0].split() == ["NAME", "PRIORITY", "PARENT", "CHILDREN", "DISPLAYNAME"]
    rows = {line.split()[0]: line.split()[1:] for line in out[1:]}
    assert rows["department-1"] == ['["team-a"]']
    assert rows["team-a"] == ["department-1"]
    assert rows["default-queue"] == ["default-parent-queue"]


def test_get_pods_wide_shows_the_shared_gpu_group(cli: Cli, tmp_path: Path) -> None:
    cli("apply", "-f", write(tmp_path, "x.yaml", shared_gpu_pair()))
    header, *rows = cli.lines("get", "pods", "-o", "wide")
    assert header == [
        "NAME", "READY", "STATUS", "RESTARTS", "AGE", "NODE", "GPU-FRACTION", "GPU-GROUP",
    ]  # fmt: skip
    assert [r[:3] + r[5:7] for r in rows] == [
        ["half-0", "1/1", "Running", "n1", "0.5"],
        ["half-1", "1/1", "Running", "n1", "0.5"],
    ]
    assert rows[0][7] == rows[1][7] != "<none>"


def test_get_custom_columns_as_the_guides_print_them(cli: Cli, tmp_path: Path) -> None:
    cli("apply", "-f", write(tmp_path, "x.yaml", [*shared_gpu_pair(), pod("plain", gpus=1)]))
    header, *rows = cli.lines("get", "pods", "-o", GPU_COLUMNS)
    assert header == ["NAME", "NODE", "GPU-FRACTION", "GPU-GROUP"]
    assert rows[0][:3] == ["half-0", "n1", "0.5"] and rows[0][3] == rows[1][3]
    assert rows[2][0] == "plain" and rows[2][2:] == ["<none>", "<none>"]


def test_get_json_yaml_name_and_one_object(cli: Cli, tmp_path: Path) -> None:
    cli("apply", "-f", write(tmp_path, "x.yaml", shared_gpu_pair()))
    listed = json.loads(cli("get", "pods", "-o", "json").out)
    assert (listed["apiVersion"], listed["kind"], listed["metadata"]) == (
        "v1",
        "List",
        {"resourceVersion": ""},
    )
    assert [p["metadata"]["name"] for p in listed["items"]] == ["half-0", "half-1"]
    one = json.loads(cli("get", "pod", "half-1", "-o", "json").out)
    assert one["kind"] == "Pod" and one["spec"]["nodeName"] == "n1"
    assert yaml.safe_load(cli("get", "po/half-0", "-o", "yaml").out)["metadata"]["name"] == "half-0"
    assert cli("get", "pg", "-o", "name").out == "podgroup.scheduling.run.ai/g\n"
    assert json.loads(cli("get", "pods", "-l", "app=none", "-o", "json").out)["items"] == []


def test_get_selector_namespaces_and_empty_results(cli: Cli, tmp_path: Path) -> None:
    objects = [node("n1"), pod("a", labels={"team": "x"}), pod("b"), pod("c", namespace="ml")]
    assert cli("create", "namespace", "ml").out == "namespace/ml created\n"
    cli("apply", "-f", write(tmp_path, "x.yaml", objects))
    assert [r[0] for r in cli.lines("get", "pods", "-l", "team=x")[1:]] == ["a"]
    assert [r[0] for r in cli.lines("get", "pods", "-l", "!team")[1:]] == ["b"]
    assert [r[:2] for r in cli.lines("get", "pods", "-A")] == [
        ["NAMESPACE", "NAME"], ["default", "a"], ["default", "b"], ["ml", "c"],
    ]  # fmt: skip
    assert [r[0] for r in cli.lines("get", "pods", "-n", "ml", "--no-headers")] == ["c"]
    empty = cli("get", "pods", "-n", "nowhere")
    assert (empty.code, empty.out, empty.err) == (
        0,
        "",
        "No resources found in nowhere namespace.\n",
    )


def test_age_follows_the_virtual_clock(cli: Cli, tmp_path: Path) -> None:
    cli("apply", "-f", write(tmp_path, "x.yaml", [node("n1"), pod("a")]))
    assert cli("advance", "3m2s").out == "clock advanced by 3m2s\n"
    assert cli.lines("get", "pods")[1][4] == "3m2s"
    cli("advance", "5h")
    assert cli.lines("get", "nodes")[1][-1] == "5h3m"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["get", "podz"], 'error: the server doesn\'t have a resource type "podz"'),
        (["get", "pod", "ghost"], 'Error from server (NotFound): pods "ghost" not found'),
        (
            ["get", "q", "ghost"],
            'Error from server (NotFound): queues.scheduling.run.ai "ghost" not found',
        ),
        (
            ["get", "pods", "-o", "xml"],
            'error: unable to match a printer suitable for the output format "xml", '
            "allowed formats are: custom-columns,json,jsonpath,name,wide,yaml",
        ),
        (["get", "pods", "-l", "=x"], 'error: unable to parse requirement: "=x"'),
        (["describe", "pod", "ghost"], 'Error from server (NotFound): pods "ghost" not found'),
        (["advance", "soon"], "error: 'soon' is not a duration; write e.g. 30s, 5m or 1h30m"),
        (["delete", "pod"], "error: resource(s) were provided, but no name was specified"),
        (
            ["get", "pod", "a", "-A"],
            "error: a resource cannot be retrieved by name across all namespaces",
        ),
    ],
)
def test_errors_are_one_line_on_stderr(cli: Cli, args: list[str], message: str) -> None:
    result = cli(*args)
    assert (result.code, result.out, result.err) == (1, "", message + "\n")


def test_describe_podgroup_explains_why_it_is_pending(cli: Cli, tmp_path: Path) -> None:
    objects = [
        node("n1", gpus=2),
        podgroup("big", queue="default-queue"),
        pod("big-0", group="big", gpus=4),
    ]
    cli("apply", "-f", write(tmp_path, "x.yaml", objects))
    out = cli("describe", "podgroup", "big").out
    assert "Queue:          default-queue" in out and "Phase:          Pending" in out
    conditions = out.split("Scheduling Conditions:")[1].split("Pods:")[0]
    assert "UnschedulableOnNodePool" in conditions
    assert "not enough GPUs: needs 4 on one node, largest free is 2" in conditions
    pods = out.split("Pods:")[1].split("Events:")[0]
    assert "big-0" in pods and "Pending" in pods
    events = out.split("Events:")[1].splitlines()
    assert events[1].split() == ["Type", "Reason", "Age", "From", "Message"]
    assert events[3].split()[:2] == ["Normal", "Unschedulable"]  # KAI's type on a PodGroup


def test_describe_pod_queue_and_node(cli: Cli, tmp_path: Path) -> None:
    cli("apply", "-f", QUEUES)
    cli("apply", "-f", write(tmp_path, "x.yaml", shared_gpu_pair()))
    out = cli("describe", "pod", "half-0").out
    assert "Node:           n1" in out and "PodGroup:       g" in out
    assert "GPU:            0.5 of a GPU (gpu-fraction)" in out
    out = cli("describe", "queue", "department-1").out
    assert "Children:       team-a" in out and "Priority:       100" in out
    resources = out.split("Resources:")[1].splitlines()
    assert resources[1].split() == [
        "RESOURCE", "QUOTA", "LIMIT", "WEIGHT", "DESERVED", "FAIR-SHARE", "ALLOCATED",
        "NON-PREEMPTIBLE", "REQUESTED",
    ]  # fmt: skip
    assert resources[4].split()[:4] == ["gpu", "-1", "-1", "1"]
    out = cli("describe", "queue", "default-queue").out
    assert ["default", "g", "Running"] in [
        line.split() for line in out.split("PodGroups:")[1].splitlines()
    ]
    out = cli("describe", "node", "n1").out
    assert "nvidia.com/gpu   1" in out  # two halves of one GPU requested
    assert "Non-terminated Pods (2 in total)" in out


def test_describe_and_why_pending_write_quantities_as_kubernetes_does(
    cli: Cli, tmp_path: Path
) -> None:
    """Canonical quantities (6G, 1500m), never %g's ``5.85938e+06Ki``; plain numbers whole."""
    big = queue("big", gpu=(1234567, -1, 1))
    objects = [
        node("n1", gpus=0, cpu="2", memory="4G"),
        big,
        podgroup("wide", queue="big"),
        pod("wide-0", group="wide", cpu="1500m", memory="6G"),
    ]
    cli("apply", "-f", write(tmp_path, "x.yaml", objects))
    assert "Requests:       cpu 1500m, memory 6G" in cli("describe", "pod", "wide-0").out
    conditions = cli("describe", "podgroup", "wide").out.split("Scheduling Conditions:")[1]
    assert "needs cpu 1500m and memory 6G on one node; largest free: cpu 2, memory 4G" in (
        conditions
    )
    gpu = cli("describe", "queue", "big").out.split("Resources:")[1].splitlines()[4].split()
    assert gpu[:4] == ["gpu", "1234567", "-1", "1"]
    assert "memory 6G" in cli("explain", "podgroup", "wide").out


def test_describe_a_workload_shows_its_podgroup_conditions_and_pod_events(cli: Cli) -> None:
    cli("apply", "-f", QUEUES)
    cli("apply", "-f", str(EXAMPLES / "ray-cluster.kai-scheduler.yaml"))
    # AVAILABLE WORKERS and STATUS blank: KubeRay leaves a count of 0 and the state out
    assert cli.lines("get", "rayclusters")[1] == ["raycluster-sample", "2", "0s"]
    out = cli("describe", "raycluster", "raycluster-sample").out
    assert "queue team-a, minMember 3, phase Pending" in out
    assert "the cluster has no nodes" in out and "Pod events:" in out


def test_describe_without_a_name_or_with_a_prefix(cli: Cli, tmp_path: Path) -> None:
    cli("apply", "-f", write(tmp_path, "x.yaml", [pod("web-1"), pod("web-2"), pod("db")]))
    described = [
        line for line in cli("describe", "pods", "web").out.splitlines() if line.startswith("Name:")
    ]
    assert described == ["Name:           web-1", "Name:           web-2"]
    assert cli("describe", "pods").out.count("Name:") == 3


def test_describe_several_names_kinds_and_a_selector_as_kubectl(cli: Cli, tmp_path: Path) -> None:
    """kubectl describe takes several names, KIND/NAME pairs, several kinds, -l and -A; a
    name is exact before it is a prefix; a missing name is reported after what was found."""
    objects = [
        pod("web-1", labels={"app": "web"}),
        pod("web-2", labels={"app": "web"}),
        pod("db"),
        pod("web-3", namespace="other", labels={"app": "web"}),
        queue("team-1"),
        queue("team-10"),
    ]
    other = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "other"}}
    cli("apply", "-f", write(tmp_path, "x.yaml", [other, *objects]))

    def names(result_out: str) -> list[str]:
        return [line.split()[1] for line in result_out.splitlines() if line.startswith("Name:")]

    assert names(cli("describe", "pod", "db", "web-2").out) == ["db", "web-2"]
    assert names(cli("describe", "pod/db", "queue/team-1").out) == ["db", "team-1"]
    assert names(cli("describe", "queues", "team-1").out) == ["team-1"]  # not team-10
    assert names(cli("describe", "pods", "-l", "app=web").out) == ["web-1", "web-2"]
    assert names(cli("describe", "pods", "-A", "-l", "app=web").out) == ["web-1", "web-2", "web-3"]
    both = cli("describe", "pods,queues", "-l", "app=web").out
    assert names(both) == ["web-1", "web-2"]
    partly = cli("describe", "pod", "db", "ghost")
    assert partly.code == 1 and names(partly.out) == ["db"]
    assert 'pods "ghost" not found' in partly.err
    refused = cli("describe", "pod", "db", "-l", "app=web")
    assert refused.code != 0 and "selector" in refused.err


def test_delete_by_name_kind_slash_name_and_file(cli: Cli, tmp_path: Path) -> None:
    manifest = write(tmp_path, "x.yaml", [node("n1"), pod("a"), pod("b")])
    cli("apply", "-f", manifest)
    assert cli("delete", "pod", "a").out == 'pod "a" deleted\n'
    assert cli("delete", "po/b").out == 'pod "b" deleted\n'
    result = cli("delete", "-f", manifest)
    assert result.code == 1
    assert result.out == 'node "n1" deleted\n'
    assert result.err.splitlines() == [
        'Error from server (NotFound): pods "a" not found',
        'Error from server (NotFound): pods "b" not found',
    ]
    assert cli("delete", "-f", QUEUES).code == 1  # nothing to delete yet
    cli("apply", "-f", QUEUES)
    used = cli("delete", "queue", "department-1")
    assert used.code == 1 and 'Queue "department-1": is still used by queue "team-a"' in used.err


def test_schedule_and_version(cli: Cli) -> None:
    assert cli("schedule", "--cycles", "2").out == "ran 2 round(s)\n"
    result = CliRunner().invoke(app, ["version"])
    assert result.exit_code == 0 and result.stdout.startswith("pykai ")


def test_the_cluster_option_before_the_command_and_from_the_environment(tmp_path: Path) -> None:
    runner = CliRunner()
    first, second = tmp_path / "first.db", tmp_path / "second.db"
    manifest = write(tmp_path, "x.yaml", [pod("a")])
    assert runner.invoke(app, ["--cluster", str(first), "apply", "-f", manifest]).exit_code == 0
    env = {"PYKAI_CLUSTER": str(first)}
    assert "a" in runner.invoke(app, ["get", "pods"], env=env).stdout
    after_command = runner.invoke(app, ["get", "pods", "--cluster", str(second)], env=env)
    assert after_command.exit_code == 1
    assert after_command.stderr == (
        f'error: no cluster at "{second}": make one with pykai apply -f FILE (such as '
        "examples/nodes.yaml) or pykai create namespace NAME, or name another with --cluster\n"
    )
    assert not second.exists()  # reading never makes a cluster


@pytest.mark.parametrize("content", [b"", b"this is not sqlite" * 100], ids=["empty", "garbage"])
@pytest.mark.parametrize(
    "command", [["get", "pods"], ["apply", "-f", QUEUES]], ids=["get", "apply"]
)
def test_a_damaged_cluster_file_is_one_line_and_left_alone(
    tmp_path: Path, content: bytes, command: list[str]
) -> None:
    damaged = tmp_path / "cluster.db"
    damaged.write_bytes(content)
    result = CliRunner().invoke(app, [*command, "--cluster", str(damaged)])
    assert result.exit_code == 1 and result.stdout == ""
    assert result.stderr.startswith(f'error: the cluster file "{damaged}" is not a pykai cluster')
    assert result.stderr.count("\n") == 1 and "move it aside" in result.stderr
    assert damaged.read_bytes() == content


def test_a_command_that_waits_too_long_for_another_says_busy_in_one_line(
    cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("pykai.embedded.sqlite.BUSY_TIMEOUT", 0.2)
    holder = sqlite3.connect(cli.path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        result = cli("apply", "-f", QUEUES)
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert result.code == 1
    assert result.err == (
        f'error: the cluster file "{cli.path}" stayed busy with other pykai commands for 0.2s; '
        "try again when they are done\n"
    )


def test_bench_engine_is_wired_lazily(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pykai.bench.engine", None)
    result = CliRunner().invoke(app, ["bench", "engine"])
    assert result.exit_code == 1
    assert result.stderr == (
        "error: the engine benchmark (pykai.bench.engine) is not part of this build yet\n"
    )
    monkeypatch.undo()
    monkeypatch.setattr(
        "pykai.bench.engine.run_engine_bench",
        lambda nodes, pods, progress, **sizes: {"nodes": nodes, "pods": pods, **sizes},
    )
    result = CliRunner().invoke(
        app, ["bench", "engine", "--nodes", "3", "--reclaim-nodes", "20", "-o", "json"]
    )
    figures = json.loads(result.stdout)
    assert (figures["nodes"], figures["pods"], figures["reclaim_nodes"]) == (3, 10_000, 20)
    assert figures["contended_nodes"] == 1000 and figures["repeat"] == 3


def test_demo_plays_every_chapter_and_leaves_the_story_in_the_file(tmp_path: Path) -> None:
    story = tmp_path / "story.db"
    result = CliRunner().invoke(app, ["demo", "--cluster", str(story)])
    assert result.exit_code == 0, result.output
    chapters = [line for line in result.stdout.splitlines() if line.startswith("== ")]
    assert len(chapters) == 11  # 8 of KAI's guides, 3 of Kueue's
    assert "$ pykai get queues" in result.stdout
    assert "QueueDoesNotExist" in result.stdout and "Preempted by" in result.stdout
    assert f"The story is in {story}" in result.stdout
    explore = Cli(story)
    vllm = explore.lines("get", "pods", "-n", "ai-workloads", "--no-headers")
    assert [row[2] for row in vllm] == ["Running", "Running"]
    assert "QueueDoesNotExist" in explore("describe", "podgroup", "pg-raycluster-wrong-queue").out
    again = CliRunner().invoke(app, ["demo", "--cluster", str(story)])
    assert again.exit_code == 1 and "needs a fresh cluster" in again.stderr


def test_run_rejects_an_invalid_scheduler_config(tmp_path: Path) -> None:
    bad = tmp_path / "shard.yaml"
    bad.write_text(
        "apiVersion: kai.scheduler/v1\nkind: SchedulingShard\nmetadata: {name: default}\n"
        "spec:\n  placementStrategy: {gpu: pack}\n"
    )
    args = ["run", "--kubeconfig", str(tmp_path / "none"), "--scheduler-config", str(bad)]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 1 and "spec.placementStrategy.gpu" in result.stderr, (
        result.stdout,
        result.stderr,
        result.exception,
    )


def test_bench_fgd_plot_says_how_to_get_matplotlib(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """matplotlib is the plot extra, not installed with pykai (nor in its image)."""
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # find_spec: not installed
    result = CliRunner().invoke(app, ["bench", "fgd", "--plot", str(tmp_path / "f.png")])
    assert result.exit_code == 1
    assert result.stderr == (
        "error: --plot needs matplotlib, not installed with pykai: pip install 'pykai[plot]'\n"
    )


def test_run_and_webhook_refuse_a_malformed_address(tmp_path: Path) -> None:
    none = str(tmp_path / "none")
    for args in (
        ["run", "--kubeconfig", none, "--metrics-address", "8080"],
        ["webhook", "--kubeconfig", none, "--address", "localhost:http"],
    ):
        result = CliRunner().invoke(app, args)
        assert result.exit_code == 1 and "write it as HOST:PORT" in result.stderr, result.stderr


def test_the_readme_walkthrough_runs_as_written(cli: Cli, monkeypatch: pytest.MonkeyPatch) -> None:
    root = EXAMPLES.parent
    block = (root / "README.md").read_text().split("## Using it", 1)[1].split("```")[1]
    commands = [
        shlex.split(line.split("#", 1)[0])[1:]
        for line in block.splitlines()
        if line.startswith("pykai ")
    ]
    assert commands[0] == ["apply", "-f", "examples/nodes.yaml"]
    monkeypatch.chdir(root)
    for args in commands:
        if args[0] == "bench" or "-w" in args or "NAME" in args:
            continue  # benchmarks, the watch that runs until Ctrl-C, placeholders
        result = cli(*args)
        assert result.code == 0, (args, result.err)
    pods = cli.lines("get", "pods", "-A", "--no-headers")
    assert {row[0] for row in pods} == {"default", "ai-workloads"}
    assert all(row[3] == "Running" for row in pods), pods


def test_describe_pod_says_how_its_node_was_chosen(cli: Cli, tmp_path: Path) -> None:
    # binpack: the node left with the fewest free GPUs scores 9, the emptiest 0 (KAI's scale)
    objects = [node("n1", gpus=8), node("n2", gpus=4), pod("p", gpus=2)]
    cli("apply", "-f", write(tmp_path, "x.yaml", objects))
    out = cli("describe", "pod", "p").out
    assert (
        "Successfully assigned default/p to n2, chosen by binpack (score 9; runner-up n1, 0)"
        in (" ".join(out.split()))
    )


def test_a_queue_quota_kai_accepts_is_accepted(cli: Cli, tmp_path: Path) -> None:
    """KAI's CRD takes any finite float64 (type: number): 1e30 as kubectl reads the YAML."""
    text = (
        "apiVersion: scheduling.run.ai/v2\nkind: Queue\nmetadata: {name: vast}\n"
        "spec: {resources: {gpu: {quota: 1e30, limit: -1, overQuotaWeight: 1}}}\n"
    )
    (tmp_path / "q.yaml").write_text(text)
    result = cli("apply", "-f", str(tmp_path / "q.yaml"))
    assert result.out == "queue.scheduling.run.ai/vast created\n", result.err
    gpu = cli("describe", "queue", "vast").out.split("Resources:")[1].splitlines()[4].split()
    assert gpu[:2] == ["gpu", "1e+30"]


def test_describe_podgroup_says_its_priority_class_does_not_exist(cli: Cli, tmp_path: Path) -> None:
    """KAI gives such a PodGroup the default priority (the global default class's value,
    else 50); describe says so rather than show the name as if it were in force."""
    unknown = podgroup("gold", queue="default-queue", priority_class="platinum")
    known = podgroup("plain", queue="default-queue", priority_class="train")
    cli("apply", "-f", write(tmp_path, "x.yaml", [unknown, known]))
    out = cli("describe", "podgroup", "gold").out
    assert (
        'Priority:       platinum (PriorityClass "platinum" does not exist: '
        "the default priority, 50, is used)" in out
    )
    assert "Priority:       train\n" in cli("describe", "podgroup", "plain").out
    default = {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": "everyday"},
        "value": 10,
        "globalDefault": True,
    }
    cli("apply", "-f", write(tmp_path, "pc.yaml", [default]))
    assert "the default priority, 10, is used" in cli("describe", "podgroup", "gold").out
