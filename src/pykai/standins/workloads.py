"""The workload stand-ins, run once over every object of their kinds."""

from __future__ import annotations

from collections.abc import Callable

from pykai.controllers.host import Host
from pykai.model.meta import Obj
from pykai.standins.apps import reconcile_deployment, reconcile_job, reconcile_replicaset
from pykai.standins.kuberay import reconcile_raycluster, reconcile_rayjob, reconcile_rayservice

Controller = Callable[[Host, Obj], None]
KUBERAY: tuple[tuple[str, Controller], ...] = (
    ("RayJob", reconcile_rayjob),
    ("RayService", reconcile_rayservice),
    ("RayCluster", reconcile_raycluster),
)
APPS: tuple[tuple[str, Controller], ...] = (
    ("Deployment", reconcile_deployment),
    ("ReplicaSet", reconcile_replicaset),
    ("Job", reconcile_job),
)


def run_workloads(
    host: Host,
    controllers: tuple[tuple[str, Controller], ...],
    check: Callable[[Obj], None] = lambda _: None,
) -> None:
    """Each controller once over the live objects of its kind; ``check`` raises for an object
    a controller must not run as stored (it is reported and skipped, see controllers/faults)."""
    for kind, controller in controllers:
        live = [o for o in host.list(kind) if not o["metadata"].get("deletionTimestamp")]

        def run(obj: Obj, controller: Controller = controller) -> None:
            check(obj)
            controller(host, obj)

        host.each(f"the {kind} controller", live, run)
