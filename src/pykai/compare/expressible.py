"""What of a scenario a real cluster can replay under the real KAI, and how.

Contract of ``plan(scenario)``: a ``Plan`` whose ``problems`` list, each with its reason,
whatever the peer cannot express (then the scenario is "not expressible" and nothing runs):

- an ``advance`` longer than ``advance_limit`` seconds (``ADVANCE_LIMIT`` unless given: a
  real cluster has no clock to advance; a shorter one is replayed as a real wait on both
  sides);
- a ``config`` key KAI's scheduler cannot be given (``EXPRESSIBLE_CONFIG`` lists the ones it
  can: placement through its configuration, the rest through kai-scheduler's flags);
- a pod owned by an object of a kind the cluster serves (``served``): no manifest can give
  an object the uid an ownerReference names, and kube-controller-manager's garbage collector
  deletes a pod whose owner it finds missing (``controller``'s contract says why the harness
  creates no owners);
- a terminating pod (``metadata.deletionTimestamp``) without a finalizer: on a real cluster
  only a finalizer keeps a deleted pod (the harness creates it, then deletes it: ``run.create``);
- an ``ages`` key other than ``file-order``;
- kinds outside KAI's API (Kueue's are compared elsewhere), and RayJobs (``NOT_REPLAYED``);
- a RayCluster, RayService or Deployment (``GROUPED_KINDS``: the real KubeRay operator or
  the Deployment controller makes its pods on both sides, each side's pod-grouper its
  PodGroup) that asks for shared GPUs in a pod template (``grouped_problems``).

Shared GPUs (``gpu-fraction``, ``gpu-memory``, ``gpu-fraction-num-devices``) are expressible:
the KAI side runs kai-admission and the reservation stand-in (``peer_kai.start_admission``).

``recreate_evicted: true`` is expressible: the harness plays the pods' controller on both
sides (``controller.PodController``; ``Plan.recreate``). ``ages: file-order`` (the ported KAI
cases) creates each PodGroup, with its pods, in an apiserver second of its own, in file order
(``Plan.ages``), as KAI's fakes make each job older than the next.

``reject`` steps are not decisions: they are left out and listed in ``skipped``. Both sides
get the same configuration: ``pykai_config`` for ``pykai run --scheduler-config``,
``placement`` and ``kai_flags`` for ``peer_kai.start``."""

from __future__ import annotations

from dataclasses import dataclass, field

from pykai.compare.scenario import Scenario, Step
from pykai.model.duration import parse_duration
from pykai.model.kinds import BY_KIND
from pykai.model.meta import Obj

FILE_ORDER = "file-order"  # the one value of a scenario's ``ages`` key
ADVANCE_LIMIT = 5.0  # seconds: longer advances are not replayed as real waits, by default
SHARED_GPU = frozenset({"gpu-fraction", "gpu-memory", "gpu-fraction-num-devices"})
KINDS = frozenset({"Node", "Queue", "PodGroup", "Pod", "PriorityClass", "Namespace", "Secret"})
# workloads whose pods a controller makes (the KubeRay operator, kube-controller-manager) and
# whose PodGroups each side's pod-grouper makes (KAI's kai-podgrouper; pykai's grouping)
GROUPED_KINDS = frozenset({"RayCluster", "RayService", "Deployment"})
# kinds KAI's API has but this harness cannot replay, and why
NOT_REPLAYED = {
    "RayJob": (
        "KubeRay v1.5.0's kai-scheduler batch plugin refuses every RayJob (\"currently only "
        'RayCluster is supported", batchscheduler/kai-scheduler/kai_scheduler.go:39-43), so '
        "its RayCluster is never made on either side"
    ),
}
# SchedulerConfig key -> how KAI is told it ("placementStrategy": its scheduler configuration)
EXPRESSIBLE_CONFIG = {
    "placementStrategy": "the shard's placement (scheduler configuration)",
    "staleGangGracePeriod": "kai-scheduler --default-staleness-grace-period",
    "maxConsolidationPreemptees": "kai-scheduler --max-consolidation-preemptees",
}


@dataclass(frozen=True)
class Plan:
    """How a scenario runs side by side: the ``steps`` to run (1-based number, step), the steps
    left out (``skipped``, each with why), the configuration of each side, and ``problems``
    (non-empty: not expressible, each a reason)."""

    steps: tuple[tuple[int, Step], ...]
    skipped: tuple[str, ...] = ()
    pykai_config: Obj = field(default_factory=dict)
    placement: dict[str, str] = field(default_factory=dict)
    kai_flags: tuple[str, ...] = ()
    problems: tuple[str, ...] = ()
    recreate: bool = False  # recreate_evicted: the harness plays the pods' controller
    ages: str = ""  # FILE_ORDER: each PodGroup in a second of its own, in file order


def plan(scenario: Scenario, advance_limit: float = ADVANCE_LIMIT) -> Plan:
    """The plan for ``scenario`` (see the module's contract)."""
    problems: list[str] = []
    steps: list[tuple[int, Step]] = []
    skipped: list[str] = []
    for number, step in enumerate(scenario.steps, start=1):
        if step.action == "reject":
            skipped.append(f"step {number}: reject (a validation, not a decision)")
            continue
        if step.action == "advance" and step.seconds > advance_limit:
            problems.append(
                f"step {number}: advance {step.seconds:g}s: a real cluster has no clock to "
                f"advance (waits of up to {advance_limit:g}s are replayed)"
            )
        problems += _object_problems(number, step)
        steps.append((number, step))
    ages = str(scenario.document.get("ages") or "")
    if ages not in ("", FILE_ORDER):
        problems.append(f"ages {ages}: the harness knows only {FILE_ORDER}")
    problems += _owner_problems(scenario)
    placement: dict[str, str] = {}
    flags: list[str] = []
    for key, value in scenario.config.items():
        if key not in EXPRESSIBLE_CONFIG:
            problems.append(f"config {key}: KAI's scheduler has no setting for it")
        elif key == "placementStrategy":
            placement = {k: str(v) for k, v in dict(value).items() if k in ("gpu", "cpu")}
        elif key == "staleGangGracePeriod":
            flags.append(f"--default-staleness-grace-period={parse_duration(str(value)):g}s")
        else:
            flags.append(f"--max-consolidation-preemptees={int(value)}")
    return Plan(
        tuple(steps),
        tuple(skipped),
        dict(scenario.config),
        placement,
        tuple(flags),
        tuple(dict.fromkeys(problems)),
        bool(scenario.document.get("recreate_evicted")),
        ages,
    )


def served(api_version: str, kind: str) -> bool:
    """Whether a cluster of the harness serves ``kind`` of ``api_version``: Kubernetes' own
    groups (no dot, or ending in ``.k8s.io``) and the kinds pykai knows (KAI's, KubeRay's,
    Kueue's). The garbage collector can look such an owner up, and deletes its dependents
    when it is missing."""
    group = api_version.rpartition("/")[0]
    if "." not in group or group.endswith(".k8s.io"):
        return True
    spec = BY_KIND.get(kind)
    return spec is not None and spec.group == group


def _owner_problems(scenario: Scenario) -> list[str]:
    """Pods whose owner the garbage collector would look up and find missing: no manifest can
    give an object the uid an ownerReference names."""
    problems = []
    for number, step in enumerate(scenario.steps, start=1):
        for obj in step.objects if step.action == "apply" else ():
            for ref in obj["metadata"].get("ownerReferences") or []:
                kind = str(ref.get("kind"))
                if served(str(ref.get("apiVersion", "")), kind):
                    problems.append(
                        f"step {number}: {obj['kind']} {obj['metadata']['name']} is owned by "
                        f"{kind} {ref.get('name')} (uid {ref.get('uid')}), which no manifest "
                        "can create: kube-controller-manager's garbage collector deletes the "
                        "pod on a real cluster (and a real owner would make KAI's podgrouper "
                        "regroup it)"
                    )
    return problems


def _object_problems(number: int, step: Step) -> list[str]:
    problems = []
    for obj in step.objects:
        if obj["kind"] in GROUPED_KINDS:
            problems += grouped_problems(number, obj)
        elif obj["kind"] in NOT_REPLAYED:
            problems.append(f"step {number}: kind {obj['kind']}: {NOT_REPLAYED[obj['kind']]}")
        elif obj["kind"] not in KINDS:
            problems.append(f"step {number}: kind {obj['kind']} is not in KAI's API")
        meta = obj["metadata"]
        if obj["kind"] == "Pod" and meta.get("deletionTimestamp") and not meta.get("finalizers"):
            problems.append(
                f"step {number}: pod {meta['name']} is terminating without a finalizer: a "
                "real cluster removes it at once"
            )
    return problems


def grouped_problems(number: int, obj: Obj) -> list[str]:
    """What the peer cannot express of a workload whose pods a controller makes: shared GPUs
    asked for in any of its pod templates' annotations (as for a bare pod)."""
    shared: set[str] = set()
    pending: list[object] = [obj.get("spec") or {}]
    while pending:
        value = pending.pop()
        if isinstance(value, dict):
            template = value.get("template")
            if isinstance(template, dict):
                annotations = (template.get("metadata") or {}).get("annotations") or {}
                shared |= SHARED_GPU & set(annotations)
            pending += list(value.values())
        elif isinstance(value, list):
            pending += value
    if not shared:
        return []
    return [
        f"step {number}: {obj['kind']} {obj['metadata']['name']}: shared GPUs "
        f"({', '.join(sorted(shared))}) in its pod templates: not tried side by side yet "
        "(bare pods' shared GPUs are: peer_kai.start_admission)"
    ]
