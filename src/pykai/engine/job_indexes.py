"""Indexes of the jobs the actions look for, kept as the jobs change: running jobs by queue and
priority (victim candidates), running jobs below their gang's minimum, and jobs marked stale."""

from __future__ import annotations

from pykai.engine.jobs import Job


class JobIndexes:
    """Job keys by what the actions ask of them."""

    def __init__(self) -> None:
        # queue -> priority -> keys of jobs with pods holding nodes (victim candidates)
        self.running: dict[str, dict[int, set[str]]] = {}
        self.below_minimum: set[str] = set()  # running jobs whose gang is not satisfied
        self.stale_marked: set[str] = set()  # jobs with a stale-since time

    def update(self, job: Job) -> None:
        """Keep the running-jobs and below-minimum indexes current for one job."""
        bucket = self.running.setdefault(job.queue, {}).setdefault(job.priority, set())
        if job.running > 0:
            bucket.add(job.key)
            if job.gang_satisfied():
                self.below_minimum.discard(job.key)
            else:
                self.below_minimum.add(job.key)
        else:
            bucket.discard(job.key)
            self.below_minimum.discard(job.key)

    def mark_stale(self, job: Job, since: float | None) -> None:
        """Record since when a job has run below its minimum (None: it does not)."""
        job.stale_since = since
        if since is None:
            self.stale_marked.discard(job.key)
        else:
            self.stale_marked.add(job.key)

    def running_keys(self, queue: str, below_priority: int | None = None) -> list[str]:
        """Keys of a queue's jobs with pods holding nodes (optionally only those of lower
        priority), in order."""
        return sorted(
            key
            for priority, bucket in self.running.get(queue, {}).items()
            if below_priority is None or priority < below_priority
            for key in bucket
        )
