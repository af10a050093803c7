"""Queue capacity checks at every level of the tree: limits and non-preemptible quota."""

from __future__ import annotations

from pykai.engine.decisions import Reason
from pykai.engine.jobs import Job
from pykai.engine.session import QueueInfo
from pykai.model.resources import RESOURCE_NAMES, Resources, format_cpu, format_gpu, format_memory

EPS = 1e-9
_FORMAT = {"cpu": format_cpu, "memory": format_memory, "gpu": format_gpu}
_UNIT_NAME = {"cpu": "cpu", "memory": "memory", "gpu": "nvidia.com/gpu"}


def over_capacity(job: Job, chain: list[QueueInfo], request: Resources) -> Reason | None:
    """OverLimit if any queue up the tree would pass its limit; NonPreemptibleOverQuota if a
    non-preemptible job would pass any queue's quota. None when the job may run."""
    for queue in chain:
        usage = queue.usage
        for name, allocated, asked, limit in zip(
            RESOURCE_NAMES, usage.allocated, request, queue.limit, strict=True
        ):
            if asked > 0 and allocated + asked > limit + EPS:
                fmt = _FORMAT[name]
                return Reason(
                    "OverLimit",
                    f'queue "{queue.name}" would pass its {_UNIT_NAME[name]} limit: '
                    f"{fmt(allocated)} allocated + {fmt(asked)} requested > limit {fmt(limit)}. "
                    f"Wait for the queue's jobs to finish, or raise "
                    f"spec.resources.{name}.limit of queue {queue.name}",
                )
        if job.preemptible:
            continue
        for name, allocated, asked, quota in zip(
            RESOURCE_NAMES, usage.allocated_non_preemptible, request, queue.deserved, strict=True
        ):
            if asked > 0 and allocated + asked > quota + EPS:
                fmt = _FORMAT[name]
                return Reason(
                    "NonPreemptibleOverQuota",
                    f"non-preemptible job would pass the {_UNIT_NAME[name]} quota of queue "
                    f'"{queue.name}": {fmt(allocated)} allocated non-preemptible + {fmt(asked)} '
                    f"requested > quota {fmt(quota)}. Non-preemptible jobs (priority >= 100) "
                    f"may only use in-quota resources: use a preemptible priority class such "
                    f"as train, or raise spec.resources.{name}.quota of queue {queue.name}",
                )
    return None
