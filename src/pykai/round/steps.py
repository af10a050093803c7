"""One round of pykai's controllers and stand-ins over a host, in the order a cluster needs them:
Kueue's admission (and the provisioning stand-in's answers) first, the workload controllers and
stand-ins make Workloads and pods, the pod-grouper groups them, the scheduler decides, its
decisions are carried out, the stand-in kubelet runs what is bound, and the status controllers
write what changed. It sits above controllers/ and standins/ so that neither imports the other's
layer: the stand-ins use controllers/host.py, the controllers use nothing of the stand-ins.

Which of them run is the backend's choice (``components``): the embedded cluster runs them all;
``pykai run`` runs those it was asked for (``--components``), the others run elsewhere.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from pykai.controllers.grouper import group_pods
from pykai.controllers.host import Host
from pykai.controllers.outcome import carry_out
from pykai.controllers.status import write_status
from pykai.engine.decisions import CycleResult
from pykai.model.meta import Obj
from pykai.standins.kubelet import run_pods
from pykai.standins.workloads import Controller, run_workloads

COMPONENTS = (
    "scheduler",
    "binder",
    "podgrouper",
    "queuecontroller",
    "podgroupcontroller",
    "kubelet",
    "kuberay",
    "provisioning",
)


@dataclass(frozen=True)
class Round:
    """What runs in a round, and how."""

    components: frozenset[str]
    workloads: tuple[tuple[str, Controller], ...] = ()  # stand-ins for missing controllers
    check: Callable[[Obj], None] = lambda _: None  # workloads a stand-in must not run as stored
    owner_check: Callable[[Obj], None] = lambda _: None  # owners the pod-grouper must not read
    scheduled_events: bool = True  # a Scheduled event per bind (off for benchmarks)
    # PodGroup and queue statuses (off for trace replays: nothing there reads them, and they
    # visit every PodGroup each round)
    statuses: bool = True
    after_binds: tuple[Callable[[], None], ...] = field(default=())  # e.g. a BindRequest binder
    admission: tuple[Callable[[Host], None], ...] = ()  # e.g. Kueue's, before the workloads

    def run(
        self, host: Host, decide: Callable[[], CycleResult], *, full_status: bool = False
    ) -> CycleResult:
        """One round; ``decide`` runs the scheduling cycle on the host's state. Status is
        written for what changed, or (``full_status``) checked for every object."""
        for admit in self.admission:
            admit(host)
        if self.workloads:
            run_workloads(host, self.workloads, self.check)
        if "podgrouper" in self.components:
            group_pods(host, self.owner_check)
        result = decide()
        if "scheduler" in self.components:
            carry_out(host, result, scheduled_events=self.scheduled_events)
        for step in self.after_binds:
            step()
        if "kubelet" in self.components:
            run_pods(host)
        if self.statuses:
            write_status(host, result, self.components, everything=full_status)
        else:
            host.state.take_changed_jobs()  # nothing will write them
        return result
