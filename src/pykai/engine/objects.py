"""What the engine makes of stored objects: a pod's task status and the GPU groups it holds,
a PodGroup's preemptibility and the times KAI keeps in its annotations."""

from __future__ import annotations

from pykai.engine.jobs import TaskStatus
from pykai.model import constants as c
from pykai.model.meta import parse_time
from pykai.model.pod import PodView
from pykai.model.podgroup import PodGroupView


def task_status(pod: PodView) -> TaskStatus:
    """The task status a stored pod implies (KAI's getTaskStatus)."""
    if pod.phase == "Succeeded":
        return TaskStatus.SUCCEEDED
    if pod.phase == "Failed":
        return TaskStatus.FAILED
    if pod.deleting:
        return TaskStatus.RELEASING if pod.node_name else TaskStatus.FAILED
    if pod.node_name:
        return TaskStatus.RUNNING if pod.phase == "Running" else TaskStatus.BOUND
    return TaskStatus.GATED if pod.gated else TaskStatus.PENDING


def gpu_groups(pod: PodView) -> tuple[str, ...]:
    """The GPU groups a bound pod holds, from the binder's labels."""
    labels = pod.meta.labels
    first = labels.get(c.GPU_GROUP_LABEL)
    if not first:
        return ()
    prefix = c.GPU_GROUP_LABEL + "/"
    extra = sorted(k[len(prefix) :] for k in labels if k.startswith(prefix))
    return (first, *(g for g in extra if g != first))


def annotated_time(group: PodGroupView, annotation: str, known: float | None) -> float | None:
    """A time KAI keeps in a PodGroup annotation, else what this state already knew."""
    stamp = group.meta.annotations.get(annotation)
    if stamp:
        try:
            return parse_time(stamp)
        except ValueError:
            pass
    return known


def preemptible(group: PodGroupView, priority: int) -> bool:
    """Explicit spec.preemptibility or label wins; otherwise priority < 100 is preemptible."""
    explicit = group.spec.preemptibility or group.meta.labels.get(c.PREEMPTIBILITY_LABEL, "")
    if explicit:
        return explicit == "preemptible"
    return priority < c.PREEMPTIBLE_BELOW_PRIORITY
