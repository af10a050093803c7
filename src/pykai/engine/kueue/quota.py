"""Kueue's quota model (kubernetes-sigs/kueue ``pkg/cache/scheduler/resource_node.go`` and
``pkg/scheduler/flavorassigner/flavorassigner.go``), beside KAI's queues: ClusterQueues and
Cohorts form trees; each holds quota per (flavor, resource); usage of a ClusterQueue beyond the
part it never lends counts in its cohort; what a ClusterQueue may still take is its unlent
quota left plus what its cohort has available, capped by its borrowing limit. Pure: built from
objects, changed only by ``reserve`` / ``release`` during one admission pass."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import IntEnum

from pykai.model.constraints import (
    NodeConstraints,
    Requirement,
    Taint,
    parse_constraints,
    parse_taints,
)
from pykai.model.meta import Obj, mapping, objects
from pykai.model.quantity import exact, format_quantity, resource_amount
from pykai.model.resources import EPS

FlavorResource = tuple[str, str]  # (flavor, resource)
PodSetRequests = dict[str, float]  # resource -> total over the PodSet's pods, engine units


@dataclass(slots=True)
class Quota:
    """One (flavor, resource) of a node: nominal quota and optional limits."""

    nominal: float = 0.0
    borrowing_limit: float | None = None
    lending_limit: float | None = None


@dataclass(slots=True)
class QuotaNode:
    """A ClusterQueue or a Cohort in the quota tree."""

    name: str
    is_cluster_queue: bool
    parent: QuotaNode | None = None
    children: list[QuotaNode] = field(default_factory=list)
    quotas: dict[FlavorResource, Quota] = field(default_factory=dict)
    usage: dict[FlavorResource, float] = field(default_factory=dict)  # a ClusterQueue's own

    def subtree_quota(self, fr: FlavorResource) -> float:
        """Nominal quota, plus for a cohort what its children lend it."""
        own = self.quotas[fr].nominal if fr in self.quotas else 0.0
        if self.is_cluster_queue:
            return own
        return own + sum(c.subtree_quota(fr) - c.guaranteed(fr) for c in self.children)

    def guaranteed(self, fr: FlavorResource) -> float:
        """The part never lent: subtree quota beyond the lending limit (0 without one)."""
        quota = self.quotas.get(fr)
        if quota is None or quota.lending_limit is None:
            return 0.0
        return max(0.0, self.subtree_quota(fr) - quota.lending_limit)

    def used(self, fr: FlavorResource, *, ignore_usage: bool = False) -> float:
        """Usage; a cohort's is what its children use beyond their guaranteed quota."""
        if ignore_usage:
            return 0.0
        if self.is_cluster_queue:
            return self.usage.get(fr, 0.0)
        return sum(max(0.0, c.used(fr) - c.guaranteed(fr)) for c in self.children)

    def available(self, fr: FlavorResource, *, ignore_usage: bool = False) -> float:
        """What this node may still take of ``fr`` (Kueue's ``available``; with
        ``ignore_usage``, ``potentialAvailable``)."""
        used = self.used(fr, ignore_usage=ignore_usage)
        if self.parent is None:
            return self.subtree_quota(fr) - used
        guaranteed = self.guaranteed(fr)
        local = max(0.0, guaranteed - used)
        from_parent = self.parent.available(fr, ignore_usage=ignore_usage)
        quota = self.quotas.get(fr)
        if quota is not None and quota.borrowing_limit is not None:
            stored = self.subtree_quota(fr) - guaranteed
            used_in_parent = max(0.0, used - guaranteed)
            from_parent = min(stored - used_in_parent + quota.borrowing_limit, from_parent)
        return local + from_parent

    def borrowing(self, fr: FlavorResource) -> bool:
        """Whether a ClusterQueue uses more than its nominal quota of ``fr``."""
        nominal = self.quotas[fr].nominal if fr in self.quotas else 0.0
        return self.usage.get(fr, 0.0) > nominal + EPS

    def path(self) -> str:
        """``/<cohort>…/<cq>``, as Kueue writes it in preemption messages."""
        names: list[str] = []
        node: QuotaNode | None = self
        while node is not None:
            names.append(node.name)
            node = node.parent
        return "/" + "/".join(reversed(names))

    def root(self) -> QuotaNode:
        """The top of this node's tree."""
        node = self
        while node.parent is not None:
            node = node.parent
        return node


@dataclass(slots=True)
class ResourceGroup:
    """Resources that share one flavor per PodSet, and the flavors to try, in order."""

    resources: tuple[str, ...]
    flavors: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Flavor:
    """What a ResourceFlavor says about nodes: their labels, taints, and the tolerations it
    gives admitted pods (as written in its spec)."""

    name: str
    node_labels: dict[str, str]
    taints: tuple[Taint, ...]
    tolerations: tuple[Obj, ...]

    def rejects(self, pod: NodeConstraints) -> str:
        """Why a PodSet cannot use this flavor ("" if it can), as Kueue's
        ``checkFlavorForPodSets``: a NoSchedule/NoExecute taint that neither the pods nor the
        flavor tolerate, or a node selector / required affinity that the flavor's labels
        contradict (only the flavor's own label keys are compared)."""
        own = parse_constraints({"tolerations": list(self.tolerations)}, "ResourceFlavor", "")
        tolerating = NodeConstraints(tolerations=(*pod.tolerations, *own.tolerations))
        untolerated = tolerating.untolerated(self.taints)
        if untolerated:
            return f"untolerated taint {_taint(untolerated[0])} in flavor {self.name}"
        if not _restricted(pod, set(self.node_labels)).selects(self.node_labels):
            return f"flavor {self.name} doesn't match node affinity"
        return ""


def read_flavor(obj: Obj) -> Flavor:
    """A ResourceFlavor's node labels, taints and tolerations."""
    spec = mapping(obj.get("spec"))
    name = str(obj["metadata"]["name"])
    return Flavor(
        name,
        {str(k): str(v) for k, v in mapping(spec.get("nodeLabels")).items()},
        parse_taints({"taints": spec.get("nodeTaints")}, "ResourceFlavor", name),
        tuple(objects(spec.get("tolerations"))),
    )


def _taint(taint: Taint) -> str:
    """A taint as Kubernetes prints it: ``key=value:Effect`` (``key:Effect`` without value)."""
    value = f"={taint.value}" if taint.value else ""
    return f"{taint.key}{value}:{taint.effect}"


def _restricted(pod: NodeConstraints, keys: set[str]) -> NodeConstraints:
    """The pod's node selector and required affinity over ``keys`` only (Kueue's
    ``flavorSelector``): a term left empty matches any flavor, so the affinity is dropped."""
    terms: list[tuple[Requirement, ...]] = []
    for term in pod.affinity_terms:
        kept = tuple(r for r in term if r.key in keys)
        if not kept:
            terms = []
            break
        terms.append(kept)
    selector = tuple((k, v) for k, v in pod.node_selector if k in keys)
    return NodeConstraints(node_selector=selector, affinity_terms=tuple(terms))


@dataclass(slots=True)
class ClusterQueueView:
    """What admission reads of a ClusterQueue."""

    name: str
    node: QuotaNode
    groups: list[ResourceGroup]
    strategy: str  # StrictFIFO | BestEffortFIFO
    preemption: Obj
    fungibility: Obj
    missing_flavors: list[str]
    flavors: dict[str, Flavor]
    namespace_selector: Obj | None  # None selects no namespace, {} every one
    checks: list[str]  # the AdmissionChecks a Workload must pass before it is admitted
    missing_checks: list[str]
    inactive_checks: list[str]

    def admits_namespace(self, labels: dict[str, str]) -> bool:
        """Whether a namespace with these labels may submit here (Kueue's
        ``LabelSelectorAsSelector``: a null selector matches nothing)."""
        selector = self.namespace_selector
        if selector is None:
            return False
        wanted = mapping(selector.get("matchLabels"))
        if any(labels.get(str(k)) != str(v) for k, v in wanted.items()):
            return False
        return all(
            Requirement(
                str(e.get("key", "")),
                str(e.get("operator", "")),
                tuple(str(v) for v in e.get("values") or []),
            ).matches(labels)
            for e in objects(selector.get("matchExpressions"))
        )

    @property
    def active(self) -> bool:
        """A ClusterQueue whose flavors and admission checks all exist, the checks active,
        can admit."""
        return not (self.missing_flavors or self.missing_checks or self.inactive_checks)

    def group_of(self, resource: str) -> ResourceGroup | None:
        """The resource group that covers a resource."""
        return next((g for g in self.groups if resource in g.resources), None)


def amount(resource: str, value: object) -> float:
    """A quantity in engine units (cpu in millicores, memory in bytes, else a count)."""
    return resource_amount(resource, value if isinstance(value, (str, int, float)) else 0)


def quantity(resource: str, value: float) -> str:
    """Engine units back as a canonical Kubernetes quantity (``500m``, ``2``, ``8G``,
    ``200Mi``), as ``resource_list`` writes them."""
    exact_value = exact(value)
    if resource == "cpu":
        return format_quantity(exact_value / 1000)
    return format_quantity(exact_value, binary=resource == "memory")


def _quotas(spec: Obj) -> tuple[dict[FlavorResource, Quota], list[ResourceGroup]]:
    quotas: dict[FlavorResource, Quota] = {}
    groups: list[ResourceGroup] = []
    for group in objects(spec.get("resourceGroups")):
        flavors = objects(group.get("flavors"))
        groups.append(
            ResourceGroup(
                tuple(str(r) for r in group.get("coveredResources") or []),
                tuple(str(f.get("name")) for f in flavors),
            )
        )
        for flavor in flavors:
            for res in objects(flavor.get("resources")):
                name = str(res.get("name"))
                limits = {
                    key: amount(name, res[key]) if res.get(key) is not None else None
                    for key in ("borrowingLimit", "lendingLimit")
                }
                quotas[(str(flavor.get("name")), name)] = Quota(
                    amount(name, res.get("nominalQuota", 0)),
                    limits["borrowingLimit"],
                    limits["lendingLimit"],
                )
    return quotas, groups


def build_tree(
    cluster_queues: list[Obj],
    cohorts: list[Obj],
    flavors: dict[str, Flavor],
    checks: dict[str, bool] | None = None,
) -> dict[str, ClusterQueueView]:
    """The ClusterQueues, linked into cohort trees (a cohort named but not defined is an
    implicit root without quota of its own); ``flavors``: the ResourceFlavors by name;
    ``checks``: whether each AdmissionCheck is active, by name."""
    checks = checks or {}
    nodes: dict[str, QuotaNode] = {}

    def cohort(name: str, seen: frozenset[str] = frozenset()) -> QuotaNode:
        if name in nodes:
            return nodes[name]
        node = nodes[name] = QuotaNode(name, is_cluster_queue=False)
        found = next((c for c in cohorts if c["metadata"]["name"] == name), None)
        if found is not None:
            spec = mapping(found.get("spec"))
            node.quotas, _ = _quotas(spec)
            parent = str(spec.get("parentName") or spec.get("parent") or "")
            if parent and parent not in seen | {name}:
                _link(node, cohort(parent, seen | {name}))
        return node

    views: dict[str, ClusterQueueView] = {}
    for obj in cluster_queues:
        spec = mapping(obj.get("spec"))
        name = str(obj["metadata"]["name"])
        quotas, groups = _quotas(spec)
        node = QuotaNode(name, is_cluster_queue=True, quotas=quotas)
        parent = str(spec.get("cohortName") or spec.get("cohort") or "")
        if parent:
            _link(node, cohort(parent))
        named = {f for g in groups for f in g.flavors}
        wanted = check_names(spec)
        views[name] = ClusterQueueView(
            name,
            node,
            groups,
            str(spec.get("queueingStrategy") or "BestEffortFIFO"),
            mapping(spec.get("preemption")),
            mapping(spec.get("flavorFungibility")),
            sorted(named - set(flavors)),
            {f: flavors[f] for f in named if f in flavors},
            selector if isinstance(selector := spec.get("namespaceSelector"), dict) else None,
            wanted,
            [c for c in wanted if c not in checks],
            [c for c in wanted if checks.get(c) is False],
        )
    return views


def check_names(spec: Obj) -> list[str]:
    """The AdmissionChecks a ClusterQueue names (``admissionChecksStrategy``, or v1beta1's
    ``admissionChecks`` where no conversion ran)."""
    rules = objects(mapping(spec.get("admissionChecksStrategy")).get("admissionChecks"))
    names = [str(r.get("name")) for r in rules] + [
        str(n) for n in spec.get("admissionChecks") or [] if isinstance(n, str)
    ]
    return list(dict.fromkeys(names))


def _link(child: QuotaNode, parent: QuotaNode) -> None:
    child.parent = parent
    parent.children.append(child)


class Mode(IntEnum):
    """How a flavor serves a PodSet, best first (Kueue's ``isPreferred`` with the default
    BorrowingOverPreemption)."""

    FIT = 0
    FIT_BORROWING = 1
    PREEMPT = 2
    PREEMPT_BORROWING = 3
    NO_FIT = 4


NO_FIT_REASONS = ("WaitingForQuota", "ExceedsMaxQuota", "NoMatchingFlavor")
"""QuotaReserved reasons of a PodSet that fits no flavor, least severe first (Kueue's
``reasonSeverity``): a resource group's reason is that of its least severe flavor."""


@dataclass(slots=True)
class PodSetAssignment:
    """The flavor of each resource of one PodSet, its usage, and how it fits."""

    name: str
    count: int
    flavors: dict[str, str]
    usage: dict[FlavorResource, float]
    mode: Mode
    reasons: list[str] = field(default_factory=list)
    reason: str = ""  # the QuotaReserved reason when it does not fit


@dataclass(slots=True)
class Assignment:
    """A whole Workload's flavor assignment."""

    pod_sets: list[PodSetAssignment]

    @property
    def mode(self) -> Mode:
        """The worst PodSet's mode."""
        return max((p.mode for p in self.pod_sets), default=Mode.FIT)

    def usage(self) -> dict[FlavorResource, float]:
        """What the Workload takes, per flavor and resource."""
        total: dict[FlavorResource, float] = {}
        for pod_set in self.pod_sets:
            for fr, value in pod_set.usage.items():
                total[fr] = total.get(fr, 0.0) + value
        return total

    def message(self) -> str:
        """Kueue's ``Assignment.Message``."""
        return "; ".join(
            f"couldn't assign flavors to pod set {p.name}: {', '.join(sorted(p.reasons))}"
            for p in self.pod_sets
            if p.mode in (Mode.NO_FIT, Mode.PREEMPT, Mode.PREEMPT_BORROWING) and p.reasons
        )

    def reason(self) -> str:
        """The QuotaReserved reason of the first PodSet that does not fit."""
        return next((p.reason for p in self.pod_sets if p.mode == Mode.NO_FIT), "")


def assign_flavors(
    cq: ClusterQueueView, pod_sets: list[tuple[str, int, PodSetRequests, NodeConstraints]]
) -> Assignment:
    """Kueue's flavor assignment: PodSets in order, each resource group's flavors in order;
    a flavor whose taints the PodSet does not tolerate, or whose labels its node selector or
    required affinity contradicts, is skipped. ``pod_sets``: (name, count, total requests,
    the pods' node constraints)."""
    earlier: dict[FlavorResource, float] = {}
    out: list[PodSetAssignment] = []
    for name, count, requests, constraints in pod_sets:
        result = PodSetAssignment(name, count, {}, {}, Mode.FIT)
        for resource in sorted(r for r, v in requests.items() if v > 0):
            if cq.group_of(resource) is None:
                result.mode = Mode.NO_FIT
                result.reason = "ExceedsMaxQuota"
                result.reasons.append(f"resource {resource} unavailable in ClusterQueue")
        for group in cq.groups:
            wanted = {r: requests[r] for r in group.resources if requests.get(r, 0) > 0}
            if wanted:
                _assign_group(cq, group, wanted, constraints, earlier, result)
        for fr, value in result.usage.items():
            earlier[fr] = earlier.get(fr, 0.0) + value
        out.append(result)
    return Assignment(out)


def _assign_group(
    cq: ClusterQueueView,
    group: ResourceGroup,
    wanted: dict[str, float],
    constraints: NodeConstraints,
    earlier: dict[FlavorResource, float],
    result: PodSetAssignment,
) -> None:
    best: tuple[Mode, str] | None = None
    reasons: list[str] = []
    kinds: set[str] = set()
    stop_on_borrow = cq.fungibility.get("whenCanBorrow", "MayStopSearch") == "MayStopSearch"
    stop_on_preempt = cq.fungibility.get("whenCanPreempt", "TryNextFlavor") == "MayStopSearch"
    for flavor in group.flavors:
        unmatched = cq.flavors[flavor].rejects(constraints) if flavor in cq.flavors else ""
        if unmatched:
            reasons.append(unmatched)
            kinds.add("NoMatchingFlavor")
            continue
        mode = Mode.FIT
        for resource, value in sorted(wanted.items()):
            fr = (flavor, resource)
            fr_mode, why, kind = _fits(cq, fr, earlier.get(fr, 0.0), value)
            mode = max(mode, fr_mode)
            if why:
                reasons.append(why)
                kinds.add(kind)
        if best is None or mode < best[0]:
            best = (mode, flavor)
        if mode == Mode.FIT or (mode == Mode.FIT_BORROWING and stop_on_borrow):
            break
        if mode in (Mode.PREEMPT, Mode.PREEMPT_BORROWING) and stop_on_preempt:
            break
    if best is None or best[0] == Mode.NO_FIT:
        result.mode = Mode.NO_FIT
        result.reasons.extend(reasons)
        result.reason = min(kinds, key=NO_FIT_REASONS.index)  # the least severe blocker
        return
    mode, flavor = best
    result.mode = max(result.mode, mode)
    if mode >= Mode.PREEMPT:
        result.reasons.extend(reasons)
    for resource, value in wanted.items():
        result.flavors[resource] = flavor
        result.usage[(flavor, resource)] = value


def _fits(
    cq: ClusterQueueView, fr: FlavorResource, before: float, request: float
) -> tuple[Mode, str, str]:
    """Kueue's ``fitsResourceQuota`` for one flavor-resource: the mode, the reason text and
    its kind (ExceedsMaxQuota / WaitingForQuota)."""
    flavor, resource = fr
    value = before + request
    node = cq.node
    maximum = node.available(fr, ignore_usage=True)
    if value > maximum + EPS:
        return (
            Mode.NO_FIT,
            f"insufficient quota for {resource} in flavor {flavor}, previously considered "
            f"podsets requests ({quantity(resource, before)}) + current podset request "
            f"({quantity(resource, request)}) > maximum capacity ({quantity(resource, maximum)})",
            "ExceedsMaxQuota",
        )
    nominal = node.quotas[fr].nominal if fr in node.quotas else 0.0
    borrow = node.usage.get(fr, 0.0) + value > nominal + EPS
    available = node.available(fr)
    if value <= available + EPS:
        return (Mode.FIT_BORROWING if borrow else Mode.FIT), "", ""
    why = (
        f"insufficient unused quota for {resource} in flavor {flavor}, "
        f"{quantity(resource, value - max(available, 0.0))} more needed"
    )
    bwc = mapping(cq.preemption.get("borrowWithinCohort")).get("policy", "Never") != "Never"
    if nominal >= value or bwc:
        return (Mode.PREEMPT_BORROWING if borrow else Mode.PREEMPT), why, "WaitingForQuota"
    return Mode.NO_FIT, why, "WaitingForQuota"


def fits(cq: ClusterQueueView, usage: dict[FlavorResource, float], *, borrowing: bool) -> bool:
    """Whether ``usage`` fits the ClusterQueue now (Kueue's ``workloadFits``): within what is
    available, and without borrowing within the nominal quota."""
    node = cq.node
    for fr, value in usage.items():
        if value > node.available(fr) + EPS:
            return False
        nominal = node.quotas[fr].nominal if fr in node.quotas else 0.0
        if not borrowing and node.usage.get(fr, 0.0) + value > nominal + EPS:
            return False
    return True


def reserve(node: QuotaNode, usage: dict[FlavorResource, float], sign: float = 1.0) -> None:
    """Add (or with ``sign`` -1 remove) a Workload's usage to its ClusterQueue."""
    for fr, value in usage.items():
        node.usage[fr] = node.usage.get(fr, 0.0) + sign * value
