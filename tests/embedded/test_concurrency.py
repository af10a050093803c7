"""Ten writers at once on one cluster file: applies of pods and queues (two of them each one
half of a queue cycle), explicit scheduling rounds, a clock advance and a delete. Afterwards no
node holds more GPUs than it has (recounted from the stored pods), every object a successful
writer applied is stored, no queue cycle is stored, and every writer either succeeded or failed
clearly (a refused cycle; never SQLite's "database is locked", never a traceback).

Run twice: as ten ``pykai`` processes started together (and two ``pykai get`` reading
meanwhile), and as ten processes on EmbeddedCluster that all open the file before any of them
writes (a barrier), which is the race at its worst: each one's view of the cluster is stale
when it writes."""

from __future__ import annotations

import multiprocessing
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from pykai.embedded.cluster import EmbeddedCluster
from pykai.embedded.sqlite import Store
from pykai.model import constants as c
from pykai.model.builders import node, pod, queue
from pykai.model.duration import parse_duration
from pykai.model.errors import ValidationError
from pykai.model.meta import Obj
from pykai.model.quantity import count

GPUS = 8
DEADLINE = 600.0  # seconds for the ten writers together, on a loaded machine
REPEATS = 3


@dataclass(frozen=True)
class Step:
    """What one writer does: ``apply`` its objects, ``schedule`` N rounds, ``advance`` the
    clock by a duration, or ``delete`` a pod."""

    verb: str
    objects: tuple[Obj, ...] = ()
    argument: str = ""


def gpu_pod(name: str, queue_name: str, gpus: int) -> Obj:
    return pod(name, gpus=gpus, cpu="100m", labels={c.QUEUE_LABEL: queue_name})


SETUP = [
    node("gpu-node", gpus=GPUS),
    queue("ring-a"),
    queue("ring-b"),
    queue("old"),
    *(gpu_pod(f"old-{k}", "old", gpus=2) for k in (0, 1)),
]
STEPS = [
    # five teams: a queue and two 2-GPU pods each; 4 GPUs are free, 6 once old-0 is deleted
    *(
        Step("apply", (queue(f"team-{i}"), *(gpu_pod(f"p{i}-{k}", f"team-{i}", 2) for k in (0, 1))))
        for i in range(5)
    ),
    Step("apply", (queue("ring-a", parent="ring-b"),)),
    Step("apply", (queue("ring-b", parent="ring-a"),)),
    Step("schedule", argument="3"),
    Step("advance", argument="30s"),
    Step("delete", argument="old-0"),
]


def check(cluster_file: Path, succeeded: list[bool]) -> None:
    """The promises, read from the stored objects once every writer is done."""
    store = Store(cluster_file)
    try:
        pods = store.list("Pod")
        assert gpus_by_node(pods).get("gpu-node", 0.0) <= GPUS, gpus_by_node(pods)
        assert queue_cycles(store.list("Queue")) == []
        for step, ok in zip(STEPS, succeeded, strict=True):
            for obj in step.objects if ok else ():
                stored = store.get(obj["kind"], obj["metadata"]["name"], "default")
                assert stored is not None, obj["metadata"]["name"]
                assert stored["spec"].get("parentQueue") == obj["spec"].get("parentQueue")
        assert (store.get("Pod", "old-0", "default") is None) == succeeded[-1]
        assert store.get("Pod", "old-1", "default") is not None
    finally:
        store.close()
    assert succeeded[5] or succeeded[6], "one half of the cycle is valid on its own"
    assert not (succeeded[5] and succeeded[6]), "both halves of a cycle were accepted"


def gpus_by_node(pods: list[Obj]) -> dict[str, float]:
    """GPUs requested by the unfinished pods placed on each node."""
    used: dict[str, float] = {}
    for p in pods:
        node_name = p["spec"].get("nodeName")
        if node_name and (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed"):
            for container in p["spec"]["containers"]:
                gpus = container["resources"].get("requests", {}).get(c.GPU_RESOURCE, "0")
                used[node_name] = used.get(node_name, 0.0) + count(gpus)
    return used


def queue_cycles(queues: list[Obj]) -> list[str]:
    """Queues whose chain of parents comes back to a queue already on it."""
    parents = {q["metadata"]["name"]: (q.get("spec") or {}).get("parentQueue", "") for q in queues}
    cycles = []
    for name, parent in parents.items():
        seen, current = {name}, parent
        while current in parents:
            if current in seen:
                cycles.append(name)
                break
            seen.add(current)
            current = parents[current]
    return cycles


# ---- ten pykai processes -------------------------------------------------------------------------


def cli(cluster_file: Path, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "pykai", "--cluster", str(cluster_file), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def cli_args(step: Step, manifest: Path) -> list[str]:
    if step.verb == "apply":
        manifest.write_text(yaml.safe_dump_all(list(step.objects)))
        return ["apply", "-f", str(manifest)]
    if step.verb == "schedule":
        return ["schedule", "--cycles", step.argument]
    if step.verb == "delete":
        return ["delete", "pod", step.argument]
    return [step.verb, step.argument]


def clear_failure(stderr: str) -> bool:
    """One ``error:`` line per problem (a refused cycle names each queue on it), never a
    traceback or SQLite's "database is locked"."""
    lines = stderr.strip().splitlines()
    return bool(lines) and all(line.startswith("error:") and "locked" not in line for line in lines)


@pytest.mark.parametrize("repeat", range(REPEATS))
def test_ten_pykai_commands_at_once(tmp_path: Path, repeat: int) -> None:
    cluster_file = tmp_path / "cluster.db"
    (tmp_path / "setup.yaml").write_text(yaml.safe_dump_all(SETUP))
    first = cli(cluster_file, "apply", "-f", str(tmp_path / "setup.yaml"))
    assert first.wait(DEADLINE) == 0, first.communicate()
    args = [cli_args(step, tmp_path / f"step-{i}.yaml") for i, step in enumerate(STEPS)]
    processes = [cli(cluster_file, *a) for a in args]
    readers = [cli(cluster_file, "get", "pods", "-A") for _ in range(2)]  # alongside the writers
    errors = [process.communicate(timeout=DEADLINE)[1] for process in processes]
    for a, process, err in zip(args, processes, errors, strict=True):
        assert process.returncode == 0 or clear_failure(err), (a, process.returncode, err)
    for reader in readers:
        out, err = reader.communicate(timeout=DEADLINE)
        assert reader.returncode == 0 and "old-1" in out, err
    check(cluster_file, [process.returncode == 0 for process in processes])


# ---- ten processes on EmbeddedCluster, all open before anyone writes -----------------------------


def run_step(cluster_file: str, step: Step, opened: Any) -> str:
    """Open the cluster and build its engine state, wait until every writer has, then do
    ``step``: "" if it succeeded, else the validation error."""
    cluster = EmbeddedCluster.open(cluster_file)
    try:
        assert cluster.state.tasks  # the engine's view, built before anyone writes
        opened.wait(DEADLINE)
        if step.verb == "apply":
            cluster.apply(list(step.objects))
        elif step.verb == "schedule":
            cluster.schedule(int(step.argument))
        elif step.verb == "advance":
            cluster.advance(parse_duration(step.argument))
        else:
            assert cluster.delete("Pod", step.argument, "default")
    except ValidationError as exc:
        return str(exc) or "refused"
    finally:
        cluster.close()
    return ""


@pytest.mark.parametrize("repeat", range(REPEATS))
def test_ten_writers_with_stale_views_at_once(tmp_path: Path, repeat: int) -> None:
    cluster_file = tmp_path / "cluster.db"
    setup = EmbeddedCluster.open(cluster_file)
    setup.apply(SETUP)
    setup.close()
    context = multiprocessing.get_context("spawn")
    with context.Manager() as manager, context.Pool(len(STEPS)) as pool:
        opened = manager.Barrier(len(STEPS))
        pending = [pool.apply_async(run_step, (str(cluster_file), step, opened)) for step in STEPS]
        refusals = [result.get(DEADLINE) for result in pending]
    for step, refusal in zip(STEPS, refusals, strict=True):
        assert not refusal or "cycle" in refusal, (step, refusal)
    check(cluster_file, [not refusal for refusal in refusals])
