"""The ceiling of ``pykai bench kube --shape kueue``: what an admitter that decides instantly and
never wastes quota reaches on the shape's Jobs, quotas, cohorts and running times. No apiserver:
a small event simulation of quota alone (bench/kueue_shape.py gives the Jobs and the quotas).

The loop the bench measures is not admission alone: a Job holds its quota while it runs, so
admissions per second are bounded by the quotas and the running times. Here every Job arrives at
its ``Arrival.at_s``, is admitted the moment its ClusterQueue has room for it, and frees its
quota ``runtime + hold_s`` later (``hold_s``: what the cluster adds to each Job's hold, from
admission to the quota freed: creating, binding and completing its pod, finishing the Job and
its Workload; 0 for the ceiling).

Contract of ``simulate``: deterministic (ties broken by arrival, then by the Job's key). At each
instant, after every arrival and every release of that instant, the waiting Jobs are taken in
Kueue's order across all ClusterQueues (priority descending, then arrival, then key) and each
one that fits is admitted (BestEffortFIFO: one that does not fit blocks nothing). A Job fits
when its ClusterQueue's usage stays within nominal + borrowing limit and its cohort's within
the sum of its ClusterQueues' nominal quotas (no lending limits, one flavor, one resource: the
shape's). Nothing is preempted: an admitter that evicts a running Job wastes the quota the Job
held (with preemption, as both rows of the bench may preempt, the bound is no worse than the
last arrival: see docs/benchmarks.md). The clock runs, as the bench's, from the first arrival to
the last admission; the waits are per Job from its arrival to its admission.
``hold_for`` inverts it: the ``hold_s`` at which the simulation's time to all admitted equals a
measured one (what a row's time would mean as a per-Job hold; None if no hold up to
``limit_s`` reaches it)."""

from __future__ import annotations

import heapq
import statistics
from dataclasses import dataclass

from pykai.bench.figures import percentile
from pykai.bench.kueue_shape import KueueShape, WorkloadClass, cluster_queue_name


@dataclass(frozen=True, slots=True)
class SimJob:
    """One Job of the simulation: its key, class, ClusterQueue, cohort and arrival."""

    key: str
    cls: WorkloadClass
    cluster_queue: str
    cohort: str
    at_ms: int

    @property
    def at_s(self) -> float:
        return self.at_ms / 1000


@dataclass(frozen=True)
class Ceiling:
    """What the simulation reached: admissions per second and the time to all admitted (from
    the first arrival), each Job's admission time, and the waits per class (median, p99)."""

    jobs: int
    hold_s: float
    all_admitted_s: float
    admitted_at: dict[str, float]
    waits: dict[str, tuple[float, float]]  # class -> (median, p99) from arrival to admission

    @property
    def admissions_per_s(self) -> float | None:
        """None when every Job is admitted the instant it arrives, all at once (no rate)."""
        return self.jobs / self.all_admitted_s if self.all_admitted_s > 0 else None

    def figures(self) -> dict[str, object]:
        """As the bench's runs have them (``admissions_per_s``, ``all_admitted_s``, the
        per-class medians and p99s), rounded."""
        rate = self.admissions_per_s
        made: dict[str, object] = {
            "hold_s": self.hold_s,
            "admissions_per_s": None if rate is None else round(rate, 2),
            "all_admitted_s": round(self.all_admitted_s, 3),
        }
        for name, (median, p99) in self.waits.items():
            made[f"admission_{name}_median_s"] = round(median, 3)
            made[f"admission_{name}_p99_s"] = round(p99, 3)
        return made


def jobs(shape: KueueShape) -> list[SimJob]:
    """The shape's Jobs as bench/kueue_shape.py ``measured`` creates them (same keys, times)."""
    made = []
    for cohort in range(shape.cohorts):
        for index in range(shape.queues_per_cohort):
            queue = cluster_queue_name(cohort, index)
            for number, cls in enumerate(shape.classes):
                for n in range(shape.per_queue(cls)):
                    key = f"{queue}/{cls.name}-{number}-{n}-0"
                    at = shape.arrival_ms(cls, n)
                    made.append(SimJob(key, cls, queue, f"cohort-{cohort}", at))
    return sorted(made, key=lambda j: (j.at_ms, j.key))


def simulate(shape: KueueShape, hold_s: float = 0.0) -> Ceiling:
    """Admit the shape's Jobs instantly as quota allows (the module's contract); the clock in
    whole milliseconds (``hold_s`` rounded to one), so instants that coincide do."""
    work = jobs(shape)
    if not work:
        raise ValueError(f"{shape.name}: no Jobs")
    hold_ms = round(hold_s * 1000)
    queue_limit = shape.nominal_cpu + shape.borrowing_limit_cpu
    cohort_limit = shape.queues_per_cohort * shape.nominal_cpu
    used_queue: dict[str, int] = {}
    used_cohort: dict[str, int] = {}
    releases: list[tuple[int, str, SimJob]] = []  # (at, key, Job)
    arrivals = list(reversed(work))  # popped from the end: earliest first
    waiting: list[tuple[int, int, str, SimJob]] = []  # Kueue's order
    admitted_at: dict[str, int] = {}
    while arrivals or waiting:
        upcoming = [arrivals[-1].at_ms] if arrivals else []
        if releases:
            upcoming.append(releases[0][0])
        if not upcoming:  # nothing runs and what waits can never fit
            stuck = ", ".join(entry[3].key for entry in waiting[:3])
            raise ValueError(f"{shape.name}: Jobs larger than their quota: {stuck}")
        now = min(upcoming)
        while releases and releases[0][0] <= now:
            _, _, done = heapq.heappop(releases)
            used_queue[done.cluster_queue] -= done.cls.cpu
            used_cohort[done.cohort] -= done.cls.cpu
        while arrivals and arrivals[-1].at_ms <= now:
            job = arrivals.pop()
            heapq.heappush(waiting, (-job.cls.priority, job.at_ms, job.key, job))
        still: list[tuple[int, int, str, SimJob]] = []
        while waiting:
            entry = heapq.heappop(waiting)
            job = entry[3]
            cpu = job.cls.cpu
            queue_ok = used_queue.get(job.cluster_queue, 0) + cpu <= queue_limit
            if queue_ok and used_cohort.get(job.cohort, 0) + cpu <= cohort_limit:
                used_queue[job.cluster_queue] = used_queue.get(job.cluster_queue, 0) + cpu
                used_cohort[job.cohort] = used_cohort.get(job.cohort, 0) + cpu
                admitted_at[job.key] = now
                heapq.heappush(releases, (now + job.cls.runtime_ms + hold_ms, job.key, job))
            else:
                still.append(entry)
        waiting = still
        heapq.heapify(waiting)
    first = min(job.at_ms for job in work)
    waits: dict[str, tuple[float, float]] = {}
    for cls in shape.classes:
        mine = [(admitted_at[j.key] - j.at_ms) / 1000 for j in work if j.cls.name == cls.name]
        if mine:
            waits[cls.name] = (statistics.median(mine), percentile(mine, 99))
    return Ceiling(
        len(work),
        hold_ms / 1000,
        (max(admitted_at.values()) - first) / 1000,
        {key: at / 1000 for key, at in admitted_at.items()},
        waits,
    )


def hold_for(
    shape: KueueShape, all_admitted_s: float, limit_s: float = 600.0, within_s: float = 0.002
) -> float | None:
    """The per-Job hold at which ``simulate`` takes ``all_admitted_s`` (bisection to
    ``within_s``); 0.0 if the ceiling already takes that long, None if ``limit_s`` of hold is
    not enough."""
    if simulate(shape).all_admitted_s >= all_admitted_s:
        return 0.0
    if simulate(shape, limit_s).all_admitted_s < all_admitted_s:
        return None
    low, high = 0.0, limit_s
    while high - low > within_s:
        middle = (low + high) / 2
        if simulate(shape, middle).all_admitted_s < all_admitted_s:
            low = middle
        else:
            high = middle
    return round(high, 3)
