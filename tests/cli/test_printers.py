"""Tables, -o formats and custom-columns on plain objects."""

from __future__ import annotations

import json

import pytest
import yaml

from pykai.cli.cells import Context
from pykai.cli.columns import render_table
from pykai.cli.jsonpath import JsonPathError, select, template
from pykai.cli.printers import OutputError, custom_columns, render
from pykai.model.builders import node, pod, podgroup, queue
from pykai.model.meta import Obj
from tests.cli.conftest import FakeReader

GPU_COLUMNS = (
    "NAME:.metadata.name,NODE:.spec.nodeName,"
    "GPU-FRACTION:.metadata.annotations.gpu-fraction,GPU-GROUP:.metadata.labels.runai-gpu-group"
)


def rows(kind: str, objects: list[Obj], reader: FakeReader | None = None, **kw: bool) -> list[str]:
    return render_table(kind, objects, Context(reader or FakeReader(objects)), **kw).splitlines()


def with_status(obj: Obj, **status: object) -> Obj:
    return {**obj, "status": {**(obj.get("status") or {}), **status}}


def test_queue_columns_are_kais_printer_columns_with_empty_cells() -> None:
    dept = with_status(queue("department-1"), childQueues=["team-a", "team-b"])
    team = queue("team-a", parent="department-1", priority=200)
    team["spec"]["displayName"] = "Team A"
    assert rows("Queue", [dept, team]) == [
        "NAME           PRIORITY   PARENT         CHILDREN              DISPLAYNAME",
        'department-1                             ["team-a","team-b"]',
        "team-a         200        department-1                         Team A",
    ]


def test_queue_wide_adds_gpu_quota_limit_fair_share_and_allocated() -> None:
    team = with_status(
        queue("team-a", gpu=(2, 4, 1)),
        conditions=[
            {
                "type": "FairShare",
                "status": "True",
                "message": json.dumps({"fairShare": {"nvidia.com/gpu": "2500m"}}),
            }
        ],
        allocated={"nvidia.com/gpu": "1500m"},
    )
    header, row = rows("Queue", [team], wide=True)
    assert header.split()[-4:] == ["GPU-QUOTA", "GPU-LIMIT", "FAIR-SHARE", "ALLOCATED"]
    assert row.split() == ["team-a", "2", "4", "2500m", "1500m"]


def test_pods_table_and_wide_columns() -> None:
    shared = pod("a", annotations={"gpu-fraction": "0.5"}, labels={"runai-gpu-group": "g-1"})
    shared["spec"]["nodeName"] = "n1"
    shared = with_status(shared, phase="Running", conditions=[{"type": "Ready", "status": "True"}])
    waiting = pod("b")
    assert [r.split() for r in rows("Pod", [shared, waiting], wide=True)] == [
        ["NAME", "READY", "STATUS", "RESTARTS", "AGE", "NODE", "GPU-FRACTION", "GPU-GROUP"],
        ["a", "1/1", "Running", "0", "<unknown>", "n1", "0.5", "g-1"],
        ["b", "0/1", "Pending", "0", "<unknown>", "<none>", "<none>", "<none>"],
    ]


def test_pod_status_terminating_reason_and_gated() -> None:
    gated = pod("gated")
    gated["spec"]["schedulingGates"] = [{"name": "wait"}]
    evicted = with_status(pod("evicted"), phase="Failed", reason="Evicted")
    leaving = pod("leaving")
    leaving["metadata"]["deletionTimestamp"] = "1970-01-01T00:00:00Z"
    statuses = [r.split()[2] for r in rows("Pod", [gated, evicted, leaving])[1:]]
    assert statuses == ["SchedulingGated", "Evicted", "Terminating"]


def test_all_namespaces_adds_a_namespace_column() -> None:
    header, row = rows("Pod", [pod("a", namespace="ml")], namespace_column=True)
    assert header.split()[:2] == ["NAMESPACE", "NAME"] and row.split()[:2] == ["ml", "a"]


def test_nodes_show_readiness_and_gpus_allocated_with_fractions() -> None:
    ready, cordoned = node("n1", gpus=8), node("n2", gpus=4, cpu="16", memory="64Gi")
    cordoned["spec"]["unschedulable"] = True
    cordoned["status"]["conditions"] = [{"type": "Ready", "status": "False"}]
    pods = [pod("whole", gpus=2), pod("half", annotations={"gpu-fraction": "0.5"}), pod("done")]
    for p in pods:
        p["spec"]["nodeName"] = "n1"
    pods[2]["status"] = {"phase": "Succeeded"}
    reader = FakeReader([ready, cordoned, *pods], clock=90)
    assert [r.split() for r in rows("Node", [ready, cordoned], reader)] == [
        ["NAME", "STATUS", "GPUS", "GPU-ALLOCATED", "CPU", "MEMORY", "AGE"],
        ["n1", "Ready", "8", "2.5", "64", "512Gi", "<unknown>"],
        ["n2", "NotReady,SchedulingDisabled", "4", "0", "16", "64Gi", "<unknown>"],
    ]


def test_podgroups_and_their_pending_reason() -> None:
    group = with_status(
        podgroup("g", queue="team-a", min_member=3),
        phase="Pending",
        schedulingConditions=[
            {
                "type": "UnschedulableOnNodePool",
                "reasons": [{"reason": "OverLimit", "message": "m"}],
            }
        ],
    )
    assert [r.split() for r in rows("PodGroup", [group], wide=True)] == [
        ["NAME", "QUEUE", "MIN-MEMBER", "PRIORITY", "PHASE", "POSITION", "AGE", "REASON"],
        ["g", "team-a", "3", "train", "Pending", "<none>", "<unknown>", "OverLimit"],
    ]


def test_priority_classes_namespaces_events_and_other_kinds() -> None:
    stamp = {"creationTimestamp": "1970-01-01T00:00:00Z"}
    klass = {"kind": "PriorityClass", "metadata": {"name": "build", **stamp}, "value": 100}
    reader = FakeReader(clock=300)
    assert render_table("PriorityClass", [klass], Context(reader)).splitlines()[1].split() == [
        "build",
        "100",
        "false",
        "5m",
    ]
    namespace = {"kind": "Namespace", "metadata": {"name": "ml", **stamp}}
    assert render_table("Namespace", [namespace], Context(reader)).split() == [
        "NAME", "STATUS", "AGE", "ml", "Active", "5m",
    ]  # fmt: skip
    event = {
        "kind": "Event",
        "metadata": {"name": "e"},
        "involvedObject": {"kind": "Pod", "name": "p"},
        "type": "Warning",
        "reason": "Unschedulable",
        "message": "no room",
        "lastTimestamp": "1970-01-01T00:04:00Z",
    }
    assert render_table("Event", [event], Context(reader)).splitlines() == [
        "LAST SEEN   TYPE      REASON          OBJECT   MESSAGE",
        "60s         Warning   Unschedulable   pod/p    no room",
    ]
    secret = {"kind": "Secret", "metadata": {"name": "token", **stamp}}
    assert render_table("Secret", [secret], Context(reader)).split() == [
        "NAME",
        "AGE",
        "token",
        "5m",
    ]


def test_json_is_a_list_or_the_single_object() -> None:
    objects = [pod("a"), pod("b")]
    listed = json.loads(render(objects, "json", Context(FakeReader()), kind="Pod"))
    assert listed == {
        "apiVersion": "v1",
        "items": objects,
        "kind": "List",
        "metadata": {"resourceVersion": ""},
    }
    single = json.loads(render(objects[:1], "json", Context(FakeReader()), kind="Pod", single=True))
    assert single == objects[0]


def test_yaml_and_name() -> None:
    objects = [pod("a"), queue("q")]
    assert (
        yaml.safe_load(render(objects, "yaml", Context(FakeReader()), kind="Pod"))["kind"] == "List"
    )
    assert render(objects, "name", Context(FakeReader()), kind="Pod") == (
        "pod/a\nqueue.scheduling.run.ai/q"
    )


def test_unknown_output_format() -> None:
    with pytest.raises(OutputError, match='output format "xml", allowed formats are'):
        render([], "xml", Context(FakeReader()), kind="Pod")


def test_custom_columns_read_annotation_and_label_keys_with_dashes() -> None:
    shared = pod("w1", annotations={"gpu-fraction": "0.5"}, labels={"runai-gpu-group": "uuid-1"})
    shared["spec"]["nodeName"] = "n1"
    assert custom_columns(GPU_COLUMNS, [shared, pod("head")]).splitlines() == [
        "NAME   NODE     GPU-FRACTION   GPU-GROUP",
        "w1     n1       0.5            uuid-1",
        "head   <none>   <none>         <none>",
    ]


def test_custom_columns_spec_must_be_header_colon_path() -> None:
    with pytest.raises(OutputError, match="expected <header>:<json-path-expr>"):
        custom_columns("NAME", [pod("a")])


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        (".metadata.name", ["a"]),
        ("{.metadata.name}", ["a"]),
        ("metadata.name", ["a"]),
        (".metadata.labels.ray\\.io/cluster", ["rc"]),
        (".spec.containers[0].name", ["main"]),
        (".spec.containers[*].image", ["busybox"]),
        (".spec.containers[3].name", []),
        (".metadata.missing.deeper", []),
    ],
)
def test_jsonpath(path: str, expected: list[str]) -> None:
    assert select(pod("a", labels={"ray.io/cluster": "rc"}), path) == expected


def test_custom_columns_print_maps_and_lists_as_kubectl_does() -> None:
    obj = {"metadata": {"labels": {"b": "2", "a": "1"}}, "spec": {"on": True, "xs": [1, 2]}}
    text = custom_columns("L:.metadata.labels,ON:.spec.on,XS:.spec.xs", [obj])
    assert text.splitlines()[1].split("   ") == ["map[a:1 b:2]", "true", "[1 2]"]


def test_jsonpath_filters_negative_indexes_and_the_root() -> None:
    obj = {
        "status": {"conditions": [{"type": "Ready", "status": "True"}, {"type": "X", "n": 2}]},
        "items": [1, 2, 3],
    }
    assert select(obj, '.status.conditions[?(@.type=="Ready")].status') == ["True"]
    assert select(obj, ".status.conditions[?(@.n==2)].type") == ["X"]
    assert select(obj, ".status.conditions[?(@.type!='Ready')].type") == ["X"]
    assert select(obj, ".items[-1]") == [3]
    assert select(obj["items"], "$", root=obj) == [obj]


def test_jsonpath_slices_unions_wildcards_descent_and_comparisons_as_kubernetes_docs() -> None:
    """The examples of Kubernetes' JSONPath support page (kubectl reference), on its sample."""
    doc = {
        "kind": "List",
        "items": [
            {
                "kind": "None",
                "metadata": {
                    "name": "127.0.0.1",
                    "labels": {"kubernetes.io/hostname": "127.0.0.1"},
                },
                "status": {
                    "capacity": {"cpu": "4"},
                    "addresses": [{"type": "LegacyHostIP", "address": "127.0.0.1"}],
                },
            },
            {
                "kind": "None",
                "metadata": {"name": "127.0.0.2"},
                "status": {
                    "capacity": {"cpu": "8"},
                    "addresses": [
                        {"type": "LegacyHostIP", "address": "127.0.0.2"},
                        {"type": "another", "address": "127.0.0.3"},
                    ],
                },
            },
        ],
        "users": [{"name": "myself", "user": {}}, {"name": "e2e", "user": {"username": "admin"}}],
    }
    assert select(doc, "{.kind}") == ["List"]
    assert select(doc, "{..name}") == ["127.0.0.1", "127.0.0.2", "myself", "e2e"]
    assert select(doc, "{.items[*].metadata.name}") == ["127.0.0.1", "127.0.0.2"]
    assert select(doc, "{.users[0].name}") == ["myself"]
    assert select(doc, "{.items[0].status.capacity.*}") == ["4"]
    assert select(doc, "{.items[-1:].metadata.name}") == ["127.0.0.2"]
    assert select(doc, "{.items[0:1].metadata.name}") == ["127.0.0.1"]
    assert select(doc, "{.users[0,1].name}") == ["myself", "e2e"]
    assert select(doc, '{.users[?(@.name=="e2e")].user.username}') == ["admin"]
    assert select(doc, "{.users[?(@.user.username)].name}") == ["e2e"]
    assert select(doc, ".items[::-1].metadata.name") == ["127.0.0.2", "127.0.0.1"]
    assert select({"xs": [{"n": 1}, {"n": 5}, {"n": 9}]}, ".xs[?(@.n>=5)].n") == [5, 9]
    assert select({"xs": [{"n": 1}, {"n": 5}, {"n": "a"}]}, ".xs[?(@.n<5)].n") == [1]
    with pytest.raises(JsonPathError, match="step cannot be 0"):
        select(doc, ".items[::0]")


def test_jsonpath_templates_nest_ranges_and_print_non_strings_as_kubectl() -> None:
    doc = {"items": [{"n": "a", "xs": [1, 2]}, {"n": "b", "xs": [], "on": True}]}
    assert template(doc, "{range .items[*]}[{.n}:{range .xs[*]}<{@}>{end}]{end}") == (
        "[a:<1><2>][b:]"
    )
    assert template(doc, "{.items[1].on} {.items[0].xs}") == "true [1,2]"
    assert template(doc, 'names: {.items[*].n}{"\\n"}') == "names: a b\n"
    with pytest.raises(JsonPathError, match=r'unexpected "\{end\}"'):
        template(doc, "{.n}{end}")
