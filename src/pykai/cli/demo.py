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


def get(
    cluster: EmbeddedCluster, kind: str, *, wide: bool = False, namespace: str | None = "default"
) -> str:
    """What `kubectl get <kind>` prints."""
    objects = cluster.list(kind, namespace)
    return printers.render_table(
        kind, objects, cluster.now(), wide=wide, all_namespaces=False, pods=[]
    )


def _gpu_nodes(cluster: EmbeddedCluster) -> None:
    cluster.apply(
        [builders.node(f"gpu-node-{i}", gpus=8, cpu="32", memory="256Gi") for i in range(2)]
    )


def _queues(cluster: EmbeddedCluster) -> None:
    cluster.apply(example("queues-department-1-team-a.yaml"))


def _gang(cluster: EmbeddedCluster) -> None:
    gang = [builders.podgroup("distributed-training", queue="team-a", min_member=3)]
    gang += [builders.pod(f"trainer-{i}", group="distributed-training", gpus=4) for i in range(3)]
    cluster.apply(gang)


CHAPTERS: list[Chapter] = [
    Chapter(
        "A cluster of 2 fake nodes with 8 GPUs each",
        _gpu_nodes,
        lambda c: get(c, "Node", namespace=None),
    ),
    Chapter(
        "kubectl apply -f queues-department-1-team-a.yaml; kubectl get queues",
        _queues,
        lambda c: get(c, "Queue", namespace=None),
    ),
    Chapter(
        "A gang of 3 pods (4 GPUs each, minMember 3) in queue team-a starts together",
        _gang,
        lambda c: get(c, "Pod", wide=True),
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
