"""Queue capacity checks at every level of the tree: limits and non-preemptible quota."""

from __future__ import annotations

from collections.abc import Mapping

from pykai.engine.decisions import Reason
from pykai.engine.jobs import Job
from pykai.engine.queue_sums import QueueUsage
from pykai.engine.session import QueueInfo
from pykai.model.resources import (
    EPS,
    RESOURCE_NAMES,
    Resources,
    format_cpu,
    format_gpu,
    format_memory,
)

_FORMAT = {"cpu": format_cpu, "memory": format_memory, "gpu": format_gpu}
_UNIT_NAME = {"cpu": "cpu", "memory": "memory", "gpu": "nvidia.com/gpu"}


def _excess(
    used: Resources, asked: Resources, bound: Resources
) -> tuple[str, float, float, float] | None:
    """The first resource where ``used + asked`` passes ``bound`` (only resources asked for)."""
    for name, u, a, b in zip(RESOURCE_NAMES, used, asked, bound, strict=True):
        if a > 0 and u + a > b + EPS:
            return name, u, a, b
    return None


Usage = Mapping[str, QueueUsage]  # a simulation's queue figures, by queue name
_LIVE: Usage = {}


def over_capacity(
    job: Job, chain: list[QueueInfo], request: Resources, usage: Usage = _LIVE
) -> Reason | None:
    """OverLimit if any queue up the tree would pass its limit; else NonPreemptibleOverQuota if
    a non-preemptible job would pass any queue's quota. None when the job may run. Limits come
    first over the whole chain, as KAI checks them (capacity_policy.go: resultsOverLimit walks
    leaf to root, then resultsWithNonPreemptibleOverQuota): a leaf over its quota under a parent
    over its limit is OverLimit. ``usage`` stands in for the queues' own figures where it has
    them."""
    reason = over_limit(chain, request, usage)
    if reason is not None:
        return reason
    for queue in chain:
        reason = _over_quota(job, queue, usage.get(queue.name, queue.usage), request)
        if reason is not None:
            return reason
    return None


def over_limit(chain: list[QueueInfo], request: Resources, usage: Usage = _LIVE) -> Reason | None:
    """OverLimit if any queue up the tree would pass its limit with ``request`` more."""
    for queue in chain:
        reason = _over_limit(queue, usage.get(queue.name, queue.usage), request)
        if reason is not None:
            return reason
    return None


def over_quota(job: Job, chain: list[QueueInfo], request: Resources) -> Reason | None:
    """NonPreemptibleOverQuota if a non-preemptible job would pass any queue's quota."""
    for queue in chain:
        reason = _over_quota(job, queue, queue.usage, request)
        if reason is not None:
            return reason
    return None


def _over_limit(queue: QueueInfo, usage: QueueUsage, request: Resources) -> Reason | None:
    over = _excess(usage.allocated, request, queue.limit)
    if over is None:
        return None
    name, allocated, asked, limit = over
    fmt = _FORMAT[name]
    return Reason(
        "OverLimit",
        f'queue "{queue.name}" would pass its {_UNIT_NAME[name]} limit: '
        f"{fmt(allocated)} allocated + {fmt(asked)} requested > limit {fmt(limit)}. "
        f"Wait for the queue's jobs to finish, or raise "
        f"spec.resources.{name}.limit of queue {queue.name}",
    )


def _over_quota(job: Job, queue: QueueInfo, usage: QueueUsage, request: Resources) -> Reason | None:
    if job.preemptible:
        return None
    over = _excess(usage.allocated_non_preemptible, request, queue.deserved)
    if over is None:
        return None
    name, allocated, asked, quota = over
    fmt = _FORMAT[name]
    return Reason(
        "NonPreemptibleOverQuota",
        f"non-preemptible job would pass the {_UNIT_NAME[name]} quota of queue "
        f'"{queue.name}": {fmt(allocated)} allocated non-preemptible + {fmt(asked)} '
        f"requested > quota {fmt(quota)}. Non-preemptible jobs (priority >= 100) "
        f"may only use in-quota resources: use a preemptible priority class such "
        f"as train, or raise spec.resources.{name}.quota of queue {queue.name}",
    )
