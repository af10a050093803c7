"""The workloads of ``pykai bench kube --shape``: KAI's own scale tests (500 nodes of 8 GPUs:
``fill``, ``reclaim``, ``distributed``) and kube-scheduler's SchedulingBasic (``basic``), as the
objects every row gets alike (only ``schedulerName`` differs).

Contract of ``build``: for a ``Shape`` and a row it returns the queues (one parent and its
leaves, which KAI v0.12.0 needs: it schedules no queue without a parent), the background jobs
(created and bound before the clock starts: ``reclaim``'s queue A filling the cluster) and the
measured jobs, each a PodGroup followed by its pods. Every pod is in namespace ``default``, has
``terminationGracePeriodSeconds: 0`` (an evicted pod is gone at once: no kubelet runs), names
its PodGroup (KAI's pod-grouper then leaves it alone) and the leaf queue in ``QUEUE_LABEL``.
Rows that cannot run a shape (kube-scheduler: no gangs, no queues) are not in its ``rows``;
``warm`` is ``basic`` against the warm no-decision binder (``warm-ceiling``)."""

from __future__ import annotations

from dataclasses import dataclass, replace

from pykai.model import builders
from pykai.model.meta import Obj

PARENT = "bench-root"
QUEUE_A, QUEUE_B = "bench-a", "bench-b"
QUEUE_LABEL = "kai.scheduler/queue"
SCHEDULERS = {
    "kai": "kai-scheduler",
    "pykai": "kai-scheduler",
    "kube-scheduler": "default-scheduler",
    "warm-ceiling": "nobody",  # bench/warm_binder.py binds them, deciding nothing
}
GPUS_PER_NODE = 8


@dataclass(frozen=True)
class Shape:
    """One shape: ``nodes`` of 8 GPUs; ``jobs`` measured jobs of ``pods_per_job`` pods of
    ``gpus_per_pod`` GPUs each; ``reclaim``: queue A first fills the cluster with one-GPU jobs,
    then the measured jobs come in queue B, which deserves half the cluster."""

    name: str
    nodes: int
    jobs: int
    pods_per_job: int = 1
    gpus_per_pod: int = 1
    reclaim: bool = False
    rows: tuple[str, ...] = ("kai", "pykai")

    @property
    def pods(self) -> int:
        """Measured pods."""
        return self.jobs * self.pods_per_job

    @property
    def gpus(self) -> int:
        """GPUs in the cluster."""
        return self.nodes * GPUS_PER_NODE

    @property
    def background(self) -> int:
        """One-GPU pods of queue A bound before the clock starts (``reclaim`` only)."""
        return self.gpus if self.reclaim else 0

    def check(self) -> None:
        """Refuse a shape whose measured pods cannot all be bound."""
        need = self.pods * self.gpus_per_pod
        room = self.gpus // 2 if self.reclaim else self.gpus
        if self.jobs < 1 or self.nodes < 1:
            raise ValueError(f"{self.name}: needs at least one node and one job")
        if need > room:
            where = "half the cluster (queue B's share)" if self.reclaim else "the cluster"
            raise ValueError(
                f"{self.name}: {self.pods} pods of {self.gpus_per_pod} GPUs ({need} GPUs) do "
                f"not fit in {where}: {room} GPUs on {self.nodes} nodes of {GPUS_PER_NODE}"
            )

    def sized(self, nodes: int | None = None, pods: int | None = None) -> Shape:
        """The shape at another size: ``pods`` measured pods (one gang of them for
        ``distributed``)."""
        shape = replace(self, nodes=nodes or self.nodes)
        if pods is None:
            return shape
        if self.pods_per_job > 1:
            return replace(shape, jobs=1, pods_per_job=pods)
        return replace(shape, jobs=pods)


SHAPES = {
    "fill": Shape("fill", nodes=500, jobs=4000, rows=("kai", "pykai", "kube-scheduler")),
    "reclaim": Shape("reclaim", nodes=500, jobs=2000, reclaim=True),
    "distributed": Shape("distributed", nodes=512, jobs=1, pods_per_job=512, gpus_per_pod=8),
    "basic": Shape("basic", nodes=1000, jobs=5000, rows=("kai", "pykai", "kube-scheduler")),
    "warm": Shape("warm", nodes=1000, jobs=5000, rows=("pykai", "warm-ceiling")),
}


def queues(shape: Shape) -> list[Obj]:
    """The parent (unlimited) and the leaves: A alone deserves every GPU, or A and B half each
    for ``reclaim``; CPU and memory unlimited."""
    unlimited = (-1.0, -1.0, 1.0)
    share = float(shape.gpus // 2 if shape.reclaim else shape.gpus)
    leaves = [QUEUE_A, QUEUE_B] if shape.reclaim else [QUEUE_A]
    return [
        builders.queue(PARENT),
        *(
            builders.queue(name, parent=PARENT, gpu=(share, -1.0, 1.0), cpu=unlimited)
            for name in leaves
        ),
    ]


def jobs(row: str, prefix: str, queue: str, count: int, size: int, gpus: int) -> list[list[Obj]]:
    """``count`` jobs, each its PodGroup (min member ``size``) and ``size`` pods."""
    made = []
    for index in range(count):
        group = f"{prefix}-{index}"
        objects: list[Obj] = [builders.podgroup(group, queue=queue, min_member=size)]
        for member in range(size):
            pod = builders.pod(
                f"{group}-{member}" if size > 1 else group,
                group=group,
                gpus=gpus,
                cpu="100m",
                memory="128Mi",
                labels={QUEUE_LABEL: queue},
                scheduler=SCHEDULERS[row],
            )
            pod["spec"]["terminationGracePeriodSeconds"] = 0
            objects.append(pod)
        made.append(objects)
    return made


def background(shape: Shape, row: str) -> list[list[Obj]]:
    """Queue A's one-GPU jobs that fill the cluster before ``reclaim``'s clock starts."""
    return jobs(row, "fill-a", QUEUE_A, shape.background, 1, 1)


def measured(shape: Shape, row: str) -> list[list[Obj]]:
    """The jobs the clock measures (queue B's for ``reclaim``, else queue A's)."""
    queue = QUEUE_B if shape.reclaim else QUEUE_A
    return jobs(row, "job", queue, shape.jobs, shape.pods_per_job, shape.gpus_per_pod)


def probe(row: str) -> list[Obj]:
    """A job of one small CPU pod: once it is bound, the row's scheduler is up and has
    listed the cluster (it then takes nothing the measured jobs need)."""
    [objects] = jobs(row, "probe", QUEUE_A, 1, 1, 0)
    return objects
