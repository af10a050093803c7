"""``pykai demo``: the public guides' story, chapter by chapter, on a fresh embedded cluster."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import typer

from pykai.cli import printers
from pykai.cli.manifests import read_manifests
from pykai.embedded.cluster import EmbeddedCluster
from pykai.model import builders
from pykai.model.meta import Obj

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"


@dataclass(frozen=True, slots=True)
class Chapter:
    """A step of the story: what to do, and what to show afterwards (like kubectl)."""

    title: str
    act: Callable[[EmbeddedCluster], None]
    show: Callable[[EmbeddedCluster], str]


def example(name: str) -> list[Obj]:
    """The objects of one of the guides' manifests in examples/."""
    path = EXAMPLES / name
    if not path.exists():
        raise FileNotFoundError(f"{path} is missing: run the demo from a checkout of pykai")
    return read_manifests([str(path)])


GPU_COLUMNS = (
    "NAME:.metadata.name,NODE:.spec.nodeName,"
    "GPU-FRACTION:.metadata.annotations.gpu-fraction,GPU-GROUP:.metadata.labels.runai-gpu-group"
)


def get(
    cluster: EmbeddedCluster,
    kind: str,
    *,
    wide: bool = False,
    namespace: str | None = "default",
    selector: dict[str, str] | None = None,
    columns: str = "",
) -> str:
    """What `kubectl get <kind>` prints (with -l and -o wide / custom-columns)."""
    objects = [
        o
        for o in cluster.list(kind, namespace)
        if all((o["metadata"].get("labels") or {}).get(k) == v for k, v in (selector or {}).items())
    ]
    if columns:
        return printers.custom_columns(columns, objects)
    return printers.render_table(
        kind, objects, cluster.now(), wide=wide, all_namespaces=False, pods=[]
    )


def _nodes(cluster: EmbeddedCluster) -> None:
    cluster.apply(
        [
            builders.node("gpu-node-1", gpus=1, cpu="32", memory="128Gi"),
            builders.node("cpu-node-1", gpus=0, cpu="16", memory="64Gi"),
        ]
    )


def _queues(cluster: EmbeddedCluster) -> None:
    cluster.apply(example("queues-department-1-team-a.yaml"))


def _gang(cluster: EmbeddedCluster) -> None:
    cluster.apply(example("ray-cluster.kai-scheduler.yaml"))


def _show_gang(cluster: EmbeddedCluster) -> str:
    pods = get(cluster, "Pod", wide=True, selector={"ray.io/cluster": "raycluster-sample"})
    return pods + "\n\n" + get(cluster, "PodGroup")


def _training(cluster: EmbeddedCluster) -> None:
    cluster.delete("RayCluster", "raycluster-sample", "default")
    cluster.apply(example("blog-raycluster-train.yaml"))


def _inference(cluster: EmbeddedCluster) -> None:
    cluster.apply(example("blog-rayservice-inference.yaml"))


def _show_preemption(cluster: EmbeddedCluster) -> str:
    preempted = [
        f"{e['involvedObject']['kind'].lower()}/{e['involvedObject']['name']}: {e['message']}"
        for e in cluster.list("Event")
        if e["reason"] == "Preempted" and e["involvedObject"]["kind"] == "Pod"
    ]
    return get(cluster, "Pod", wide=True) + "\n\nPreemption events:\n" + "\n".join(preempted)


def _sharing(cluster: EmbeddedCluster) -> None:
    cluster.apply([builders.node("gpu-node-2", gpus=4, cpu="64", memory="256Gi")])
    cluster.apply(example("opennebula-queues-default-test.yaml"))
    cluster.apply(example("vllm-gpu-fraction-deployments.yaml"))
    cluster.apply(example("ray-cluster.kai-gpu-sharing.yaml"))


def _show_sharing(cluster: EmbeddedCluster) -> str:
    vllm = get(cluster, "Pod", namespace="ai-workloads", columns=GPU_COLUMNS)
    ray = get(
        cluster, "Pod", selector={"ray.io/cluster": "raycluster-half-gpu"}, columns=GPU_COLUMNS
    )
    return f"$ kubectl get pods -n ai-workloads -o custom-columns=...\n{vllm}\n\n" + (
        f"$ kubectl get pods -l ray.io/cluster=raycluster-half-gpu -o custom-columns=...\n{ray}"
    )


MISSING_QUEUE = "team-that-does-not-exist"


def _missing_queue(cluster: EmbeddedCluster) -> None:
    raycluster = example("ray-cluster.kai-scheduler.yaml")[0]
    raycluster["metadata"]["name"] = "raycluster-wrong-queue"
    raycluster["metadata"]["labels"] = {"kai.scheduler/queue": MISSING_QUEUE}
    cluster.apply([raycluster])


def _show_missing_queue(cluster: EmbeddedCluster) -> str:
    pods = get(cluster, "Pod", selector={"ray.io/cluster": "raycluster-wrong-queue"})
    groups = [
        g
        for g in cluster.list("PodGroup", "default")
        if (g.get("spec") or {}).get("queue") == MISSING_QUEUE
    ]
    reasons = [
        f"  {r['reason']}: {r['message']}"
        for g in groups
        for cond in (g.get("status") or {}).get("schedulingConditions") or []
        for r in cond.get("reasons") or []
    ]
    return (
        pods + "\n\n$ kubectl describe podgroup ...\nScheduling conditions:\n" + "\n".join(reasons)
    )


CHAPTERS: list[Chapter] = [
    Chapter(
        "A cluster: one node with 1 GPU, one CPU-only node",
        _nodes,
        lambda c: get(c, "Node", namespace=None),
    ),
    Chapter(
        "kubectl apply -f queues-department-1-team-a.yaml; kubectl get queues",
        _queues,
        lambda c: get(c, "Queue", namespace=None),
    ),
    Chapter(
        "kubectl apply -f ray-cluster.kai-scheduler.yaml: head + 2 workers start as one gang of 3",
        _gang,
        _show_gang,
    ),
    Chapter(
        "The blog's training RayCluster (priority train) takes the only GPU",
        _training,
        lambda c: get(c, "Pod", wide=True),
    ),
    Chapter(
        "The blog's RayService (priority inference) arrives: training is preempted as a gang",
        _inference,
        _show_preemption,
    ),
    Chapter(
        "GPU sharing: a node with 4 GPUs; vLLM at 0.7 and 0.2, and two Ray workers at 0.5 each",
        _sharing,
        _show_sharing,
    ),
    Chapter(
        "Troubleshooting: a RayCluster whose queue label names no queue stays Pending",
        _missing_queue,
        _show_missing_queue,
    ),
]


def run_demo(*, step: bool = False, chapters: list[Chapter] | None = None) -> EmbeddedCluster:
    """Play the chapters on a fresh in-memory cluster, printing what each shows."""
    cluster = EmbeddedCluster.open(None)
    for number, chapter in enumerate(chapters or CHAPTERS, start=1):
        if step and number > 1:
            typer.prompt("Press Enter for the next chapter", default="", show_default=False)
        typer.secho(f"\n== {number}. {chapter.title}", bold=True)
        chapter.act(cluster)
        typer.echo(chapter.show(cluster))
    return cluster
