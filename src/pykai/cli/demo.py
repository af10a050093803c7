"""The public guides' story, chapter by chapter, that ``pykai demo`` plays on a fresh embedded
cluster (cli/commands/demo.py): what each chapter does to the cluster, and what it shows
afterwards, as the guides' kubectl commands print it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from pykai.cli.cells import Context
from pykai.cli.describe import describe
from pykai.cli.manifests import read_manifests
from pykai.cli.printers import render
from pykai.cli.selectors import select
from pykai.embedded.cluster import EmbeddedCluster, new_namespace
from pykai.model import builders
from pykai.model.errors import PykaiError
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
        raise PykaiError(f"{path} is missing: run the demo from a checkout of pykai")
    return read_manifests([str(path)])


GPU_COLUMNS = (
    "custom-columns=NAME:.metadata.name,NODE:.spec.nodeName,"
    "GPU-FRACTION:.metadata.annotations.gpu-fraction,GPU-GROUP:.metadata.labels.runai-gpu-group"
)


def get(
    cluster: EmbeddedCluster,
    kind: str,
    output: str = "",
    *,
    namespace: str | None = "default",
    selector: str = "",
) -> str:
    """What ``kubectl get KIND -n NAMESPACE -l SELECTOR -o OUTPUT`` prints."""
    objects = select(cluster.list(kind, namespace), selector)
    return render(objects, output, Context(cluster), kind=kind)


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
    return _shown(
        (
            "pykai get pods -l ray.io/cluster=raycluster-sample -o wide",
            get(cluster, "Pod", "wide", selector="ray.io/cluster=raycluster-sample"),
        ),
        ("pykai get podgroups", get(cluster, "PodGroup")),
    )


def _training(cluster: EmbeddedCluster) -> None:
    cluster.delete("RayCluster", "raycluster-sample", "default")
    cluster.apply(example("blog-raycluster-train.yaml"))


def _inference(cluster: EmbeddedCluster) -> None:
    cluster.apply(example("blog-rayservice-inference.yaml"))


def _show_preemption(cluster: EmbeddedCluster) -> str:
    evicted = [
        e
        for e in cluster.list("Event")
        if e["reason"] == "Evict" and e["involvedObject"]["kind"] == "Pod"
    ]
    events = render(evicted, "", Context(cluster), kind="Event")
    return _shown(
        (
            "pykai get pods -o wide  # training terminating, inference waiting for its GPU",
            get(cluster, "Pod", "wide"),
        ),
        ("pykai get events  # the evictions", events),
    )


def _grace(cluster: EmbeddedCluster) -> None:
    cluster.advance(30)  # the training pods' grace period (Kubernetes' default, 30 s)


def _sharing(cluster: EmbeddedCluster) -> None:
    cluster.apply([builders.node("gpu-node-2", gpus=4, cpu="64", memory="256Gi")])
    cluster.apply(example("opennebula-queues-default-test.yaml"))
    cluster.apply([new_namespace("ai-workloads")])  # pykai create namespace ai-workloads
    cluster.apply(example("vllm-gpu-fraction-deployments.yaml"), create_namespaces=False)
    cluster.apply(example("ray-cluster.kai-gpu-sharing.yaml"))


def _show_sharing(cluster: EmbeddedCluster) -> str:
    columns = f'-o "{GPU_COLUMNS}"'
    return _shown(
        (
            f"pykai get pods -n ai-workloads {columns}",
            get(cluster, "Pod", GPU_COLUMNS, namespace="ai-workloads"),
        ),
        (
            f"pykai get pods -l ray.io/cluster=raycluster-half-gpu {columns}",
            get(cluster, "Pod", GPU_COLUMNS, selector="ray.io/cluster=raycluster-half-gpu"),
        ),
    )


MISSING_QUEUE = "team-that-does-not-exist"


def _missing_queue(cluster: EmbeddedCluster) -> None:
    raycluster = example("ray-cluster.kai-scheduler.yaml")[0]
    raycluster["metadata"]["name"] = "raycluster-wrong-queue"
    raycluster["metadata"]["labels"] = {"kai.scheduler/queue": MISSING_QUEUE}
    cluster.apply([raycluster])


def _show_missing_queue(cluster: EmbeddedCluster) -> str:
    selector = "ray.io/cluster=raycluster-wrong-queue"
    groups = [g for g in cluster.list("PodGroup") if g["spec"].get("queue") == MISSING_QUEUE]
    described = [
        (f"pykai describe podgroup {g['metadata']['name']}", describe(cluster, g)) for g in groups
    ]
    return _shown(
        (f"pykai get pods -l {selector}", get(cluster, "Pod", selector=selector)), *described
    )


KUEUE_GUIDE = "kueue/ray-kind"
"""The Kind version of the Ray + Kueue guides (both link to it): quota for one toy RayJob."""


def _rayjob(fragment: str, name: str) -> Obj:
    """The KubeRay toy RayJob with a guide's Kueue labels (its generateName made a name)."""
    (job,) = [o for o in example("kueue/kuberay-samples/ray-job.kueue-toy-sample.yaml")
              if o["kind"] == "RayJob"]  # fmt: skip
    metadata = example(f"{KUEUE_GUIDE}/{fragment}")[0]["metadata"]
    job["metadata"] = {"name": name, "namespace": "default", "labels": metadata["labels"]}
    return job


DEV_RAYJOBS = ("rayjob-sample-dev-1", "rayjob-sample-dev-2")
PROD_RAYJOB = "rayjob-sample-prod"


def _kueue(cluster: EmbeddedCluster) -> None:
    cluster.apply(example(f"{KUEUE_GUIDE}/kueue-resources.yaml"))
    for name in DEV_RAYJOBS:
        cluster.apply([_rayjob("rayjob-metadata-dev.fragment.yaml", name)])
        cluster.advance(1)


def _prod(cluster: EmbeddedCluster) -> None:
    cluster.apply([_rayjob("rayjob-metadata-prod.fragment.yaml", PROD_RAYJOB)])
    cluster.advance(30)  # the preempted pods' grace period


def _prod_done(cluster: EmbeddedCluster) -> None:
    cluster.delete("RayJob", PROD_RAYJOB, "default")
    cluster.advance(30)


def _show_kueue(cluster: EmbeddedCluster) -> str:
    return _shown(
        ("pykai get clusterqueues", get(cluster, "ClusterQueue", namespace=None)),
        ("pykai get workloads", get(cluster, "Workload")),
        ("pykai get rayjobs", get(cluster, "RayJob")),
        ("pykai get pods | grep rayjob-sample", _rayjob_pods(cluster)),
    )


def _rayjob_pods(cluster: EmbeddedCluster) -> str:
    """The header and rows of ``pykai get pods`` that name a RayJob of the chapter."""
    lines = get(cluster, "Pod").splitlines()
    return "\n".join(lines[:1] + [line for line in lines[1:] if "rayjob-sample" in line])


def _shown(*commands: tuple[str, str]) -> str:
    """Commands and what they print, as in a terminal."""
    return "\n\n".join(f"$ {command}\n{output}" for command, output in commands)


CHAPTERS: list[Chapter] = [
    Chapter(
        "A cluster: one node with 1 GPU, one CPU-only node",
        _nodes,
        lambda c: _shown(("pykai get nodes", get(c, "Node", namespace=None))),
    ),
    Chapter(
        "pykai apply -f examples/queues-department-1-team-a.yaml",
        _queues,
        lambda c: _shown(("pykai get queues", get(c, "Queue", namespace=None))),
    ),
    Chapter(
        "pykai apply -f examples/ray-cluster.kai-scheduler.yaml: head + 2 workers, one gang of 3",
        _gang,
        _show_gang,
    ),
    Chapter(
        "The blog's training RayCluster (priority train) takes the only GPU",
        _training,
        lambda c: _shown(("pykai get pods -o wide", get(c, "Pod", "wide"))),
    ),
    Chapter(
        "The blog's RayService (priority inference) arrives: training is preempted as a gang",
        _inference,
        _show_preemption,
    ),
    Chapter(
        "pykai advance 30s: the training pods have terminated; inference runs, KubeRay's new "
        "training pods wait",
        _grace,
        lambda c: _shown(("pykai get pods -o wide", get(c, "Pod", "wide"))),
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
    Chapter(
        "Kueue: pykai apply -f examples/kueue/ray-kind/kueue-resources.yaml and two "
        "dev-priority RayJobs: quota for one; the other waits suspended",
        _kueue,
        _show_kueue,
    ),
    Chapter(
        "A prod-priority RayJob arrives: Kueue preempts the running dev RayJob by suspending "
        "it (its Ray pods deleted)",
        _prod,
        _show_kueue,
    ),
    Chapter(
        "The prod RayJob is deleted: quota frees, and the first dev RayJob resumes",
        _prod_done,
        _show_kueue,
    ),
]
