"""Groupers for apps/v1 and batch/v1 owners (KAI's deployment and job groupers)."""

from __future__ import annotations

from dataclasses import replace

from pykai.grouping.podgrouper import (
    Context,
    GroupPlan,
    default_grouper,
    podgroup_name,
    priority_of,
    register,
)


@register("apps/Deployment", "apps/ReplicaSet")
def deployment_grouper(context: Context) -> GroupPlan:
    """One PodGroup per pod (``pg-<pod>-<podUID>``), priority ``inference`` by default:
    replicas of a service run independently."""
    meta = context.pod["metadata"]
    return replace(
        default_grouper(context),
        name=podgroup_name(meta["name"], meta.get("uid", "")),
        priority_class=priority_of(context, "inference"),
        owner=context.pod,
    )


@register("batch/Job", "batch/CronJob")
def job_grouper(context: Context) -> GroupPlan:
    """One PodGroup per pod (``pg-<pod>-<jobUID>``), minMember 1: a Job's pods are independent."""
    job = next((o for o in context.owners if o.get("kind") == "Job"), context.top)
    return replace(
        default_grouper(context),
        name=podgroup_name(context.pod["metadata"]["name"], job["metadata"].get("uid", "")),
        owner=context.pod,
    )
