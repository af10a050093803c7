"""Kueue's objects' shapes and rules: what Kueue refuses in each of its kinds (its CRDs' schema
and CEL rules and its webhooks, kubernetes-sigs/kueue ``apis/kueue/v1beta2/*_types.go`` and
``pkg/webhooks/``), checked on the v1beta2 form (model/kueue/conversion.py), and the fields that
may not change once set."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator
from pydantic import ValidationError as PydanticError

from pykai.model.errors import FieldProblem, QuantityError
from pykai.model.kueue.api import GROUP
from pykai.model.kueue.conversion import to_v1beta2
from pykai.model.meta import Obj, mapping
from pykai.model.names import dns1123_label, dns1123_subdomain, label_value, qualified_name
from pykai.model.podspec import INT32_MAX, template_problems
from pykai.model.pydantic_errors import problems_from
from pykai.model.quantity import parse_quantity

Problems = list[FieldProblem]
_STRICT = ConfigDict(strict=True, extra="forbid", populate_by_name=True)
_LOOSE = dict[str, Any]  # a field Kueue defines but pykai only stores


def _reference(value: str) -> str:
    """A Kueue object reference (flavor, cohort, ClusterQueue names): a DNS-1123 subdomain."""
    if why := dns1123_subdomain(value):
        raise ValueError(why)
    return value


def _quantity(value: object) -> object:
    """A Kubernetes quantity Kueue accepts for quota: parsable and not negative."""
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise ValueError("must be a quantity such as 2, 500m or 8Gi")
    try:
        amount = parse_quantity(value)
    except QuantityError as exc:
        raise ValueError(str(exc)) from exc
    if amount < 0:
        raise ValueError("must be greater than or equal to 0")
    return value


def _resource_name(value: str) -> str:
    if why := qualified_name(value):
        raise ValueError(why)
    return value


# ---- ResourceFlavor -----------------------------------------------------------------------------


class _Taint(BaseModel):
    model_config = _STRICT

    key: str
    value: str | None = None
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"]
    time_added: str | None = Field(None, alias="timeAdded")


class _Toleration(BaseModel):
    model_config = _STRICT

    key: str | None = None
    operator: Literal["Equal", "Exists"] | None = None
    value: str | None = None
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"] | None = None
    toleration_seconds: int | None = Field(None, alias="tolerationSeconds")


class _FlavorSpec(BaseModel):
    model_config = _STRICT

    node_labels: dict[str, str] | None = Field(None, alias="nodeLabels", max_length=8)
    node_taints: list[_Taint] | None = Field(None, alias="nodeTaints", max_length=8)
    tolerations: list[_Toleration] | None = Field(None, max_length=8)
    topology_name: str | None = Field(None, alias="topologyName")


def _flavor(obj: Obj, kind: str, name: str) -> Problems:
    spec = _typed(_FlavorSpec, obj.get("spec") or {}, kind, name, "spec")
    if isinstance(spec, list):
        return spec
    problems = [
        FieldProblem(kind, name, f"spec.nodeLabels.{key}", why)
        for key, value in (spec.node_labels or {}).items()
        for why in (qualified_name(key), label_value(value))
        if why
    ]
    seen: set[tuple[str, str]] = set()
    for i, taint in enumerate(spec.node_taints or []):
        where = f"spec.nodeTaints[{i}]"
        if why := qualified_name(taint.key):
            problems.append(FieldProblem(kind, name, f"{where}.key", why))
        if taint.value and (why := label_value(taint.value)):
            problems.append(FieldProblem(kind, name, f"{where}.value", why))
        if (taint.key, taint.effect) in seen:
            problems.append(
                FieldProblem(kind, name, where, "taints must be unique by key and effect pair")
            )
        seen.add((taint.key, taint.effect))
    for i, tol in enumerate(spec.tolerations or []):
        where = f"spec.tolerations[{i}]"
        if not tol.key and tol.operator != "Exists":
            problems.append(
                FieldProblem(
                    kind,
                    name,
                    f"{where}.operator",
                    "operator must be Exists when 'key' is empty, which means 'match all "
                    "values and all keys'",
                )
            )
        if tol.toleration_seconds is not None and tol.effect != "NoExecute":
            problems.append(
                FieldProblem(
                    kind,
                    name,
                    f"{where}.effect",
                    "effect must be 'NoExecute' when 'tolerationSeconds' is set",
                )
            )
        if tol.operator == "Exists" and tol.value:
            problems.append(
                FieldProblem(
                    kind,
                    name,
                    f"{where}.value",
                    "a value must be empty when 'operator' is 'Exists'",
                )
            )
    if spec.topology_name and not spec.node_labels:
        problems.append(
            FieldProblem(
                kind,
                name,
                "spec.nodeLabels",
                "at least one nodeLabel is required when topology is set",
            )
        )
    return problems


# ---- ClusterQueue and Cohort: resource groups ---------------------------------------------------


class _ResourceQuota(BaseModel):
    model_config = _STRICT

    name: str
    nominal_quota: str | int | float = Field(0, alias="nominalQuota")
    borrowing_limit: str | int | float | None = Field(None, alias="borrowingLimit")
    lending_limit: str | int | float | None = Field(None, alias="lendingLimit")

    _name = field_validator("name")(_resource_name)
    _amounts = field_validator("nominal_quota", "borrowing_limit", "lending_limit")(_quantity)


class _FlavorQuotas(BaseModel):
    model_config = _STRICT

    name: str
    resources: list[_ResourceQuota] = Field(min_length=1, max_length=64)

    _name = field_validator("name")(_reference)


class _ResourceGroup(BaseModel):
    model_config = _STRICT

    covered_resources: list[str] = Field(alias="coveredResources", min_length=1, max_length=64)
    flavors: list[_FlavorQuotas] = Field(min_length=1, max_length=64)

    @field_validator("covered_resources")
    @classmethod
    def _names(cls, value: list[str]) -> list[str]:
        for item in value:
            _resource_name(item)
        return value


class _FairSharing(BaseModel):
    model_config = _STRICT

    weight: str | int | float | None = None

    _weight = field_validator("weight")(_quantity)


def _group_problems(
    groups: list[_ResourceGroup], kind: str, name: str, has_parent: bool, parent_word: str
) -> Problems:
    """Kueue's ``validateResourceGroups``: a resource and a flavor in one group only, every
    flavor lists the covered resources in order, limits only with a cohort (or parent), a
    ClusterQueue's lendingLimit within its nominal quota; and the totals' caps."""
    problems: Problems = []
    seen_resources: set[str] = set()
    seen_flavors: set[str] = set()
    for i, group in enumerate(groups):
        where = f"spec.resourceGroups[{i}]"
        for j, resource in enumerate(group.covered_resources):
            if resource in seen_resources:
                problems.append(
                    FieldProblem(
                        kind,
                        name,
                        f"{where}.coveredResources[{j}]",
                        f'Duplicate value: "{resource}"',
                        "list each resource in one resource group only",
                    )
                )
            seen_resources.add(resource)
        for j, flavor in enumerate(group.flavors):
            at = f"{where}.flavors[{j}]"
            if flavor.name in seen_flavors:
                problems.append(
                    FieldProblem(
                        kind,
                        name,
                        f"{at}.name",
                        f'Duplicate value: "{flavor.name}"',
                        "a flavor belongs to one resource group only",
                    )
                )
            seen_flavors.add(flavor.name)
            if len(flavor.resources) != len(group.covered_resources):
                problems.append(
                    FieldProblem(
                        kind,
                        name,
                        f"{at}.resources",
                        "flavors must have the same number of resources as the coveredResources",
                    )
                )
            problems += _quota_problems(flavor, group.covered_resources, kind, name, at)
            problems += _limit_problems(flavor, kind, name, at, has_parent, parent_word)
    for what, total in (
        ("flavors", sum(len(g.flavors) for g in groups)),
        ("covered resources", sum(len(g.covered_resources) for g in groups)),
    ):
        if total > 256:
            problems.append(
                FieldProblem(
                    kind,
                    name,
                    "spec.resourceGroups",
                    f"total number of {what} across all resourceGroups must be ≤ 256, got {total}",
                )
            )
    return problems


def _quota_problems(
    flavor: _FlavorQuotas, covered: list[str], kind: str, name: str, at: str
) -> Problems:
    return [
        FieldProblem(
            kind,
            name,
            f"{at}.resources[{k}].name",
            f'"{quota.name}": must match the name in coveredResources ("{covered[k]}")',
            "list the flavor's resources in the order of coveredResources",
        )
        for k, quota in enumerate(flavor.resources[: len(covered)])
        if quota.name != covered[k]
    ]


def _limit_problems(
    flavor: _FlavorQuotas, kind: str, name: str, at: str, has_parent: bool, parent_word: str
) -> Problems:
    problems: Problems = []
    for k, quota in enumerate(flavor.resources):
        path = f"{at}.resources[{k}]"
        for field, value in (
            ("borrowingLimit", quota.borrowing_limit),
            ("lendingLimit", quota.lending_limit),
        ):
            if value is not None and not has_parent:
                problems.append(
                    FieldProblem(
                        kind,
                        name,
                        f"{path}.{field}",
                        f"must be nil when {parent_word} is empty",
                        f"set spec.{'cohortName' if kind == 'ClusterQueue' else 'parentName'} "
                        f"or remove {field}",
                    )
                )
        lend = quota.lending_limit
        if (
            kind == "ClusterQueue"
            and lend is not None
            and parse_quantity(lend) > parse_quantity(quota.nominal_quota)
        ):
            problems.append(
                FieldProblem(
                    kind,
                    name,
                    f"{path}.lendingLimit",
                    f"{lend}: must be less than or equal to the nominalQuota",
                )
            )
    return problems


class _BorrowWithinCohort(BaseModel):
    model_config = _STRICT

    policy: Literal["Never", "LowerPriority"] = "Never"
    max_priority_threshold: int | None = Field(
        None, alias="maxPriorityThreshold", ge=-INT32_MAX - 1, le=INT32_MAX
    )


class _Preemption(BaseModel):
    model_config = _STRICT

    within_cluster_queue: Literal["Never", "LowerPriority", "LowerOrNewerEqualPriority"] = Field(
        "Never", alias="withinClusterQueue"
    )
    reclaim_within_cohort: Literal["Never", "LowerPriority", "Any"] = Field(
        "Never", alias="reclaimWithinCohort"
    )
    borrow_within_cohort: _BorrowWithinCohort | None = Field(None, alias="borrowWithinCohort")


class _Fungibility(BaseModel):
    model_config = _STRICT

    when_can_borrow: Literal["MayStopSearch", "TryNextFlavor"] = Field(
        "MayStopSearch", alias="whenCanBorrow"
    )
    when_can_preempt: Literal["MayStopSearch", "TryNextFlavor"] = Field(
        "TryNextFlavor", alias="whenCanPreempt"
    )
    preference: Literal["BorrowingOverPreemption", "PreemptionOverBorrowing"] | None = None


class _CheckRule(BaseModel):
    model_config = _STRICT

    name: str
    on_flavors: list[str] | None = Field(None, alias="onFlavors", max_length=64)

    _name = field_validator("name")(_reference)


class _ChecksStrategy(BaseModel):
    model_config = _STRICT

    admission_checks: list[_CheckRule] | None = Field(
        None, alias="admissionChecks", min_length=1, max_length=64
    )


class _ClusterQueueSpec(BaseModel):
    model_config = _STRICT

    resource_groups: list[_ResourceGroup] | None = Field(
        None, alias="resourceGroups", max_length=16
    )
    cohort_name: str | None = Field(None, alias="cohortName")
    queueing_strategy: Literal["StrictFIFO", "BestEffortFIFO"] = Field(
        "BestEffortFIFO", alias="queueingStrategy"
    )
    namespace_selector: _LOOSE | None = Field(None, alias="namespaceSelector")
    flavor_fungibility: _Fungibility | None = Field(None, alias="flavorFungibility")
    preemption: _Preemption | None = None
    admission_checks_strategy: _ChecksStrategy | None = Field(None, alias="admissionChecksStrategy")
    stop_policy: Literal["None", "Hold", "HoldAndDrain"] = Field("None", alias="stopPolicy")
    fair_sharing: _FairSharing | None = Field(None, alias="fairSharing")
    admission_scope: _LOOSE | None = Field(None, alias="admissionScope")
    concurrent_admission_policy: _LOOSE | None = Field(None, alias="concurrentAdmissionPolicy")

    @field_validator("cohort_name")
    @classmethod
    def _cohort(cls, value: str | None) -> str | None:
        return _reference(value) if value else value


def _cluster_queue(obj: Obj, kind: str, name: str) -> Problems:
    spec = _typed(_ClusterQueueSpec, obj.get("spec") or {}, kind, name, "spec")
    if isinstance(spec, list):
        return spec
    groups = spec.resource_groups or []
    problems = _group_problems(groups, kind, name, bool(spec.cohort_name), "cohort")
    preemption = spec.preemption
    if (
        preemption is not None
        and preemption.reclaim_within_cohort == "Never"
        and preemption.borrow_within_cohort is not None
        and preemption.borrow_within_cohort.policy != "Never"
    ):
        problems.append(
            FieldProblem(
                kind,
                name,
                "spec.preemption",
                "reclaimWithinCohort=Never and borrowWithinCohort.Policy!=Never",
                "set reclaimWithinCohort to LowerPriority or Any",
            )
        )
    fungibility = spec.flavor_fungibility
    if (
        fungibility is not None
        and fungibility.preference is not None
        and (fungibility.when_can_borrow, fungibility.when_can_preempt)
        != ("TryNextFlavor", "TryNextFlavor")
    ):
        problems.append(
            FieldProblem(
                kind,
                name,
                "spec.flavorFungibility.preference",
                "preference can only be set when both whenCanBorrow and whenCanPreempt "
                "are TryNextFlavor",
            )
        )
    flavors = {f.name for g in groups for f in g.flavors}
    rules = (spec.admission_checks_strategy or _ChecksStrategy()).admission_checks or []
    for i, rule in enumerate(rules):
        for j, flavor in enumerate(rule.on_flavors or []):
            if flavor not in flavors:
                problems.append(
                    FieldProblem(
                        kind,
                        name,
                        f"spec.admissionChecksStrategy.admissionChecks[{i}].onFlavors[{j}]",
                        f'Unsupported value: "{flavor}"',
                        f"name one of the ClusterQueue's flavors: {', '.join(sorted(flavors))}",
                    )
                )
    return problems


class _CohortSpec(BaseModel):
    model_config = _STRICT

    parent_name: str | None = Field(None, alias="parentName")
    resource_groups: list[_ResourceGroup] | None = Field(
        None, alias="resourceGroups", max_length=16
    )
    fair_sharing: _FairSharing | None = Field(None, alias="fairSharing")

    @field_validator("parent_name")
    @classmethod
    def _parent(cls, value: str | None) -> str | None:
        return _reference(value) if value else value


def _cohort(obj: Obj, kind: str, name: str) -> Problems:
    spec = _typed(_CohortSpec, obj.get("spec") or {}, kind, name, "spec")
    if isinstance(spec, list):
        return spec
    problems = _group_problems(
        spec.resource_groups or [], kind, name, bool(spec.parent_name), "parent"
    )
    if spec.parent_name == name:
        problems.append(
            FieldProblem(kind, name, "spec.parentName", "a Cohort cannot be its own parent")
        )
    return problems


# ---- LocalQueue, WorkloadPriorityClass, AdmissionCheck, ProvisioningRequestConfig ---------------


class _LocalQueueSpec(BaseModel):
    model_config = _STRICT

    cluster_queue: str = Field(alias="clusterQueue")
    stop_policy: Literal["None", "Hold", "HoldAndDrain"] = Field("None", alias="stopPolicy")
    fair_sharing: _FairSharing | None = Field(None, alias="fairSharing")

    _cq = field_validator("cluster_queue")(_reference)


def _local_queue(obj: Obj, kind: str, name: str) -> Problems:
    spec = _typed(_LocalQueueSpec, obj.get("spec"), kind, name, "spec")
    return spec if isinstance(spec, list) else []


class _PriorityClass(BaseModel):
    model_config = ConfigDict(strict=True, extra="allow", populate_by_name=True)

    value: int = Field(ge=-INT32_MAX - 1, le=INT32_MAX)
    description: str | None = Field(None, max_length=2048)


def _priority_class(obj: Obj, kind: str, name: str) -> Problems:
    top = {k: v for k, v in obj.items() if k in ("value", "description")}
    found = _typed(_PriorityClass, top, kind, name, "")
    return found if isinstance(found, list) else []


class _CheckParameters(BaseModel):
    model_config = _STRICT

    api_group: str = Field(alias="apiGroup", min_length=1, max_length=253)
    kind: str = Field(min_length=1, max_length=63, pattern=r"^(?i)[a-z]([-a-z0-9]*[a-z0-9])?$")
    name: str = Field(min_length=1, max_length=63, pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


class _AdmissionCheckSpec(BaseModel):
    model_config = _STRICT

    controller_name: str = Field(alias="controllerName", min_length=1, max_length=253)
    parameters: _CheckParameters | None = None
    retry_delay_minutes: int | None = Field(None, alias="retryDelayMinutes")


def _admission_check(obj: Obj, kind: str, name: str) -> Problems:
    spec = _typed(_AdmissionCheckSpec, obj.get("spec"), kind, name, "spec")
    return spec if isinstance(spec, list) else []


class _RetryStrategy(BaseModel):
    model_config = _STRICT

    backoff_limit_count: int | None = Field(None, alias="backoffLimitCount", ge=0, le=INT32_MAX)
    backoff_base_seconds: int | None = Field(None, alias="backoffBaseSeconds", ge=0, le=INT32_MAX)
    backoff_max_seconds: int | None = Field(None, alias="backoffMaxSeconds", ge=0, le=INT32_MAX)


class _ProvisioningSpec(BaseModel):
    model_config = _STRICT

    provisioning_class_name: str = Field(alias="provisioningClassName")
    parameters: dict[str, str] | None = Field(None, max_length=100)
    managed_resources: list[str] | None = Field(None, alias="managedResources", max_length=100)
    retry_strategy: _RetryStrategy | None = Field(None, alias="retryStrategy")
    pod_set_updates: _LOOSE | None = Field(None, alias="podSetUpdates")
    pod_set_merge_policy: (
        Literal["IdenticalPodTemplates", "IdenticalWorkloadSchedulingRequirements"] | None
    ) = Field(None, alias="podSetMergePolicy")

    _class = field_validator("provisioning_class_name")(_reference)

    @field_validator("managed_resources")
    @classmethod
    def _names(cls, value: list[str] | None) -> list[str] | None:
        for item in value or []:
            _resource_name(item)
        return value


def _provisioning_config(obj: Obj, kind: str, name: str) -> Problems:
    spec = _typed(_ProvisioningSpec, obj.get("spec"), kind, name, "spec")
    return spec if isinstance(spec, list) else []


# ---- Workload -----------------------------------------------------------------------------------


class _PodSet(BaseModel):
    model_config = _STRICT

    name: str = "main"
    count: int = Field(1, ge=0, le=INT32_MAX)
    min_count: int | None = Field(None, alias="minCount", ge=0, le=INT32_MAX)
    template: dict[str, Any]
    topology_request: _LOOSE | None = Field(None, alias="topologyRequest")

    @field_validator("name")
    @classmethod
    def _label(cls, value: str) -> str:
        if why := dns1123_label(value):
            raise ValueError(why)
        return value


class _PriorityClassRef(BaseModel):
    model_config = _STRICT

    group: Literal["kueue.x-k8s.io", "scheduling.k8s.io"]
    kind: Literal["WorkloadPriorityClass", "PriorityClass"]
    name: str = Field(min_length=1)

    _name = field_validator("name")(_reference)


class _WorkloadSpec(BaseModel):
    model_config = _STRICT

    pod_sets: list[_PodSet] = Field(alias="podSets", min_length=1, max_length=18)
    queue_name: str | None = Field(None, alias="queueName")
    priority_class_ref: _PriorityClassRef | None = Field(None, alias="priorityClassRef")
    priority: int | None = Field(None, ge=-INT32_MAX - 1, le=INT32_MAX)
    active: bool = True
    maximum_execution_time_seconds: int | None = Field(
        None, alias="maximumExecutionTimeSeconds", ge=1, le=INT32_MAX
    )
    preemption_gates: list[_LOOSE] | None = Field(None, alias="preemptionGates", max_length=8)


def _workload(obj: Obj, kind: str, name: str) -> Problems:
    spec = _typed(_WorkloadSpec, obj.get("spec"), kind, name, "spec")
    if isinstance(spec, list):
        return spec
    problems: Problems = []
    if spec.priority_class_ref is not None:
        ref = spec.priority_class_ref
        if (ref.group == GROUP) != (ref.kind == "WorkloadPriorityClass"):
            problems.append(
                FieldProblem(
                    kind,
                    name,
                    "spec.priorityClassRef.kind",
                    f"only the {'WorkloadPriorityClass' if ref.group == GROUP else 'PriorityClass'}"
                    f" kind is allowed for the {ref.group} group",
                )
            )
        if spec.priority is None:
            problems.append(
                FieldProblem(
                    kind,
                    name,
                    "spec.priority",
                    "priority should not be nil when priorityClassRef is set",
                )
            )
    names: set[str] = set()
    for i, pod_set in enumerate(spec.pod_sets):
        where = f"spec.podSets[{i}]"
        if pod_set.name in names:
            problems.append(
                FieldProblem(kind, name, f"{where}.name", f'"{pod_set.name}" is used twice')
            )
        names.add(pod_set.name)
        problems += template_problems(pod_set.template, kind, name, f"{where}.template")
    if sum(1 for p in spec.pod_sets if p.min_count is not None) > 1:
        problems.append(
            FieldProblem(kind, name, "spec.podSets", "at most one podSet can use minCount")
        )
    return problems


# ---- the checks --------------------------------------------------------------------------


def _typed(model: type[BaseModel], spec: object, kind: str, name: str, path: str) -> Any:
    """``spec`` validated by ``model``, or the problems found (a list)."""
    if not isinstance(spec, dict):
        return [FieldProblem(kind, name, path, "is required (a map)")]
    try:
        return model.model_validate(spec)
    except PydanticError as exc:
        return [
            FieldProblem(p.kind, p.name, p.field.lstrip("."), p.message, p.fix)
            for p in problems_from(exc, kind, name, path)
        ]


_CHECKS: dict[str, Callable[[Obj, str, str], Problems]] = {
    "ResourceFlavor": _flavor,
    "ClusterQueue": _cluster_queue,
    "Cohort": _cohort,
    "LocalQueue": _local_queue,
    "Workload": _workload,
    "WorkloadPriorityClass": _priority_class,
    "AdmissionCheck": _admission_check,
    "ProvisioningRequestConfig": _provisioning_config,
}


def kueue_problems(obj: Obj) -> Problems:
    """What Kueue refuses in one of its objects (v1beta1 is read as its v1beta2 form)."""
    kind = str(obj.get("kind"))
    converted = to_v1beta2(obj)
    return _CHECKS[kind](converted, kind, str(obj["metadata"]["name"]))


_IMMUTABLE = {
    "LocalQueue": ("clusterQueue",),
    "AdmissionCheck": ("controllerName",),
}


def immutable_problems(obj: Obj, stored: Obj | None) -> Iterator[FieldProblem]:
    """Kueue's fields that may not change once set (``self == oldSelf``)."""
    if stored is None:
        return
    kind = str(obj.get("kind"))
    new, old = mapping(obj.get("spec")), mapping(stored.get("spec"))
    for field in _IMMUTABLE.get(kind, ()):
        if field in old and new.get(field) != old.get(field):
            yield FieldProblem(
                kind,
                str(obj["metadata"]["name"]),
                f"spec.{field}",
                f"field is immutable (it is {old[field]!r})",
                "delete the object and create it again to change it",
            )
