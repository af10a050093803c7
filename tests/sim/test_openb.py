"""Reading openb trace CSVs, and the errors for bad input."""

from __future__ import annotations

from pathlib import Path

import pytest

from pykai.sim.openb import TraceError, TraceNode, TracePod, read_nodes, read_pods, write_pods
from tests.sim.conftest import NODES_CSV, PODS_CSV

FIVE = "name,cpu_milli,memory_mib,num_gpu,gpu_milli\n"


def write(tmp: Path, text: str, name: str = "t.csv") -> Path:
    path = tmp / name
    path.write_text(text)
    return path


def test_the_shipped_trace_reads_whole() -> None:
    nodes, pods = read_nodes(NODES_CSV), read_pods(PODS_CSV)
    assert len(nodes) == 1213 and sum(n.gpus for n in nodes) == 6212
    assert len(pods) == 8152
    assert pods[1] == TracePod("openb-pod-0001", 6000, 12288, 1, 460)


def test_the_five_column_pod_list_is_enough(tmp_path: Path) -> None:
    pods = read_pods(write(tmp_path, FIVE + "a,1000,10,1,500\nb,2000,20,2,1000\nc,500,5,0,0\n"))
    assert pods == [
        TracePod("a", 1000, 10, 1, 500),
        TracePod("b", 2000, 20, 2, 1000),
        TracePod("c", 500, 5, 0, 0),
    ]
    assert pods[0].is_sharing and pods[1].gpu_request_milli == 2000


def test_gpu_spec_and_extra_columns(tmp_path: Path) -> None:
    text = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos\n"
    text += "a,1,1,1,1000,V100M16|V100M32,LS\nb,1,1,0,0,T4,BE\n"
    a, b = read_pods(write(tmp_path, text))
    assert a.gpu_spec == ("V100M16", "V100M32")
    assert b.gpu_spec == ()  # a CPU pod does not care about GPU models


def test_a_pod_asking_for_no_gpu_milli_is_a_cpu_pod(tmp_path: Path) -> None:
    (pod,) = read_pods(write(tmp_path, FIVE + "a,1,1,1,0\n"))
    assert (pod.num_gpu, pod.gpu_milli) == (0, 0)


def test_nodes(tmp_path: Path) -> None:
    text = "sn,cpu_milli,memory_mib,gpu,model\nn0,8000,100,2,T4\nn1,4000,50,0,\n"
    assert read_nodes(write(tmp_path, text)) == [
        TraceNode("n0", 8000, 100, 2, "T4"),
        TraceNode("n1", 4000, 50, 0, ""),
    ]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("name,cpu_milli,memory_mib,gpu_milli\n", r"t.csv:1: missing column\(s\) 'num_gpu'"),
        (FIVE + "a,1,1,0,0\nb,1,1,1,half\n", r"t.csv:3: column 'gpu_milli' must be a whole"),
        (FIVE + "a,-5,1,0,0\n", r"t.csv:2: column 'cpu_milli' must be a whole number >= 0"),
        (FIVE + "a,1,1.5,0,0\n", r"t.csv:2: column 'memory_mib'"),
        (FIVE + "a,1,1,1,1500\n", r"t.csv:2: column 'gpu_milli' must be at most 1000"),
        (FIVE + "a,1,1,2,500\n", r"t.csv:2: column 'gpu_milli' must be 1000 for a pod of 2"),
        (FIVE + "a,1,1,,0\n", r"t.csv:2: column 'num_gpu'"),
    ],
)
def test_bad_pod_lists_name_file_line_and_column(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(TraceError, match=message):
        read_pods(write(tmp_path, text))


def test_bad_node_lists_name_file_line_and_column(tmp_path: Path) -> None:
    with pytest.raises(TraceError, match=r"t.csv:1: missing column\(s\) 'gpu'"):
        read_nodes(write(tmp_path, "sn,cpu_milli,memory_mib,model\n"))
    with pytest.raises(TraceError, match=r"t.csv:2: column 'gpu' must be a whole number"):
        read_nodes(write(tmp_path, "sn,cpu_milli,memory_mib,gpu,model\nn0,1,1,two,T4\n"))


def test_written_pods_read_back(tmp_path: Path, pods: list[TracePod]) -> None:
    path = tmp_path / "out.csv"
    write_pods(pods, path)
    assert read_pods(path) == pods
