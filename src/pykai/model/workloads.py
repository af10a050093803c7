"""The workload kinds pykai runs or groups: Deployment, ReplicaSet, Job, CronJob (apps/batch),
RayCluster, RayJob, RayService (KubeRay) and PyTorchJob (Kubeflow). Their fields are typed and
bounded as the apiserver, KubeRay's CRDs and Kubeflow's validation have them; every pod template
is checked as the pods made from it will be; ``pods_wanted`` says how many pods a workload makes,
so the embedded cluster can refuse one that would make more than it can hold."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic import ValidationError as PydanticError

from pykai.model.cron import cron_problem, time_zone_problem
from pykai.model.errors import FieldProblem
from pykai.model.meta import Obj
from pykai.model.podspec import INT32_MAX, NonNegativeInt32, template_problems
from pykai.model.pydantic_errors import problems_from

MAX_EMBEDDED_PODS = 5000
"""Pods one workload may make on the embedded cluster: the scale pykai's benchmarks run at
(5,000 pods), made in seconds; ``replicas: 10000000`` would hold the cluster file for hours."""

_ALLOW = ConfigDict(strict=True, extra="allow", populate_by_name=True)


class _Selector(BaseModel):
    model_config = _ALLOW

    match_labels: dict[str, str] | None = Field(None, alias="matchLabels")
    match_expressions: list[dict[str, Any]] | None = Field(None, alias="matchExpressions")


class _SetSpec(BaseModel):
    """spec of a Deployment or ReplicaSet (apps/v1)."""

    model_config = _ALLOW

    replicas: NonNegativeInt32 | None = None
    selector: _Selector
    template: dict[str, Any]
    min_ready_seconds: NonNegativeInt32 | None = Field(None, alias="minReadySeconds")
    revision_history_limit: NonNegativeInt32 | None = Field(None, alias="revisionHistoryLimit")
    paused: bool | None = None


class _JobSpec(BaseModel):
    """spec of a Job (batch/v1), also a CronJob's jobTemplate.spec."""

    model_config = _ALLOW

    parallelism: NonNegativeInt32 | None = None
    completions: NonNegativeInt32 | None = None
    backoff_limit: NonNegativeInt32 | None = Field(None, alias="backoffLimit")
    active_deadline_seconds: int | None = Field(None, alias="activeDeadlineSeconds", ge=1)
    ttl_seconds_after_finished: NonNegativeInt32 | None = Field(
        None, alias="ttlSecondsAfterFinished"
    )
    manual_selector: bool | None = Field(None, alias="manualSelector")
    selector: _Selector | None = None
    template: dict[str, Any]
    suspend: bool | None = None  # Kueue creates the jobs it manages suspended
    completion_mode: Literal["NonIndexed", "Indexed"] | None = Field(None, alias="completionMode")


class _JobTemplate(BaseModel):
    model_config = _ALLOW

    metadata: dict[str, Any] | None = None
    spec: dict[str, Any]


class _CronJobSpec(BaseModel):
    """spec of a CronJob (batch/v1)."""

    model_config = _ALLOW

    schedule: str
    time_zone: str | None = Field(None, alias="timeZone")
    job_template: _JobTemplate = Field(alias="jobTemplate")
    concurrency_policy: Literal["Allow", "Forbid", "Replace"] | None = Field(
        None, alias="concurrencyPolicy"
    )
    suspend: bool | None = None
    starting_deadline_seconds: int | None = Field(None, alias="startingDeadlineSeconds", ge=0)
    successful_jobs_history_limit: NonNegativeInt32 | None = Field(
        None, alias="successfulJobsHistoryLimit"
    )
    failed_jobs_history_limit: NonNegativeInt32 | None = Field(None, alias="failedJobsHistoryLimit")


class _HeadGroup(BaseModel):
    model_config = _ALLOW

    template: dict[str, Any]
    ray_start_params: dict[str, str] | None = Field(None, alias="rayStartParams")
    service_type: str | None = Field(None, alias="serviceType")


class _WorkerGroup(BaseModel):
    model_config = _ALLOW

    group_name: str = Field(alias="groupName", min_length=1)
    replicas: NonNegativeInt32 | None = None
    min_replicas: NonNegativeInt32 | None = Field(None, alias="minReplicas")
    max_replicas: NonNegativeInt32 | None = Field(None, alias="maxReplicas")
    num_of_hosts: int | None = Field(None, alias="numOfHosts", ge=1, le=INT32_MAX)
    suspend: bool | None = None
    template: dict[str, Any]
    ray_start_params: dict[str, str] | None = Field(None, alias="rayStartParams")


class _RayClusterSpec(BaseModel):
    """spec of a RayCluster (ray.io/v1), also a RayJob's rayClusterSpec and a RayService's
    rayClusterConfig."""

    model_config = _ALLOW

    head_group_spec: _HeadGroup = Field(alias="headGroupSpec")
    worker_group_specs: list[_WorkerGroup] | None = Field(None, alias="workerGroupSpecs")
    ray_version: str | None = Field(None, alias="rayVersion")
    enable_in_tree_autoscaling: bool | None = Field(None, alias="enableInTreeAutoscaling")
    suspend: bool | None = None


class _RayJobSpec(BaseModel):
    model_config = _ALLOW

    entrypoint: str | None = None
    submission_mode: Literal["K8sJobMode", "HTTPMode", "InteractiveMode"] | None = Field(
        None, alias="submissionMode"
    )
    ray_cluster_spec: dict[str, Any] = Field(alias="rayClusterSpec")
    shutdown_after_job_finishes: bool | None = Field(None, alias="shutdownAfterJobFinishes")
    ttl_seconds_after_finished: NonNegativeInt32 | None = Field(
        None, alias="ttlSecondsAfterFinished"
    )
    suspend: bool | None = None


class _RayServiceSpec(BaseModel):
    model_config = _ALLOW

    ray_cluster_config: dict[str, Any] = Field(alias="rayClusterConfig")
    serve_config_v2: str | None = Field(None, alias="serveConfigV2")


class _ReplicaSpec(BaseModel):
    model_config = _ALLOW

    replicas: NonNegativeInt32 | None = None
    template: dict[str, Any]
    restart_policy: Literal["Always", "OnFailure", "Never", "ExitCode"] | None = Field(
        None, alias="restartPolicy"
    )


class _ElasticPolicy(BaseModel):
    model_config = _ALLOW

    min_replicas: int | None = Field(None, alias="minReplicas", ge=1, le=INT32_MAX)
    max_replicas: int | None = Field(None, alias="maxReplicas", ge=1, le=INT32_MAX)


class _SchedulingPolicy(BaseModel):
    model_config = _ALLOW

    min_available: int | None = Field(None, alias="minAvailable", ge=1, le=INT32_MAX)
    queue: str | None = None
    priority_class: str | None = Field(None, alias="priorityClass")


class _RunPolicy(BaseModel):
    model_config = _ALLOW

    scheduling_policy: _SchedulingPolicy | None = Field(None, alias="schedulingPolicy")
    backoff_limit: NonNegativeInt32 | None = Field(None, alias="backoffLimit")


class _PyTorchJobSpec(BaseModel):
    model_config = _ALLOW

    pytorch_replica_specs: dict[Literal["Master", "Worker"], _ReplicaSpec] = Field(
        alias="pytorchReplicaSpecs", min_length=1
    )
    elastic_policy: _ElasticPolicy | None = Field(None, alias="elasticPolicy")
    run_policy: _RunPolicy | None = Field(None, alias="runPolicy")


# ---- the checks, one per kind ------------------------------------------------------------------

Problems = list[FieldProblem]


def _typed(model: type[BaseModel], spec: object, kind: str, name: str, path: str) -> Any:
    """``spec`` validated by ``model``, or the problems found (a list)."""
    if not isinstance(spec, dict):
        return [FieldProblem(kind, name, path, "is required (a map)")]
    try:
        return model.model_validate(spec)
    except PydanticError as exc:
        return problems_from(exc, kind, name, path)


def _replica_set(obj: Obj, kind: str, name: str) -> Problems:
    spec = _typed(_SetSpec, obj.get("spec"), kind, name, "spec")
    if isinstance(spec, list):
        return spec
    problems = template_problems(spec.template, kind, name, "spec.template", ("Always",))
    wanted = spec.selector.match_labels or {}
    if not wanted and not spec.selector.match_expressions:
        problems.append(
            FieldProblem(
                kind, name, "spec.selector", "must not be empty", "select the pods' labels"
            )
        )
    labels = (spec.template.get("metadata") or {}).get("labels") or {}
    if isinstance(labels, dict) and any(labels.get(k) != v for k, v in wanted.items()):
        problems.append(
            FieldProblem(
                kind,
                name,
                "spec.template.metadata.labels",
                "do not match spec.selector.matchLabels",
                "give the template every label the selector names",
            )
        )
    return problems


def _job_spec(spec_obj: object, kind: str, name: str, path: str) -> Problems:
    spec = _typed(_JobSpec, spec_obj, kind, name, path)
    if isinstance(spec, list):
        return spec
    return template_problems(
        spec.template, kind, name, f"{path}.template", ("OnFailure", "Never")
    ) + _required_restart_policy(spec.template, kind, name, f"{path}.template")


def _required_restart_policy(template: dict[str, Any], kind: str, name: str, path: str) -> Problems:
    """A Job's pods must say how they restart (Kubernetes has no default for Jobs)."""
    spec = template.get("spec")
    if isinstance(spec, dict) and "restartPolicy" not in spec:
        return [
            FieldProblem(
                kind,
                name,
                f"{path}.spec.restartPolicy",
                "is required for a Job's pods",
                "write restartPolicy: Never (or OnFailure)",
            )
        ]
    return []


def _job(obj: Obj, kind: str, name: str) -> Problems:
    return _job_spec(obj.get("spec"), kind, name, "spec")


def _cron_job(obj: Obj, kind: str, name: str) -> Problems:
    spec = _typed(_CronJobSpec, obj.get("spec"), kind, name, "spec")
    if isinstance(spec, list):
        return spec
    problems = []
    if why := cron_problem(spec.schedule):
        problems.append(
            FieldProblem(kind, name, "spec.schedule", why, 'write five fields, e.g. "*/5 * * * *"')
        )
    if spec.time_zone is not None and "TZ" in spec.schedule:  # (kept in one stored before)
        problems.append(
            FieldProblem(
                kind,
                name,
                "spec.schedule",
                "cannot use both timeZone field and TZ or CRON_TZ in schedule",
                "drop the time zone from the schedule",
            )
        )
    if spec.time_zone is not None and (why := time_zone_problem(spec.time_zone)):
        problems.append(
            FieldProblem(kind, name, "spec.timeZone", why, "name an IANA zone, e.g. Europe/Berlin")
        )
    return problems + _job_spec(spec.job_template.spec, kind, name, "spec.jobTemplate.spec")


def _ray_cluster_spec(spec_obj: object, kind: str, name: str, path: str) -> Problems:
    spec = _typed(_RayClusterSpec, spec_obj, kind, name, path)
    if isinstance(spec, list):
        return spec
    problems = template_problems(
        spec.head_group_spec.template, kind, name, f"{path}.headGroupSpec.template"
    )
    seen: set[str] = set()
    for i, group in enumerate(spec.worker_group_specs or []):
        where = f"{path}.workerGroupSpecs[{i}]"
        problems += template_problems(group.template, kind, name, f"{where}.template")
        if group.group_name in seen:
            problems.append(
                FieldProblem(
                    kind, name, f"{where}.groupName", f'"{group.group_name}" is used twice'
                )
            )
        seen.add(group.group_name)
        low, high = group.min_replicas, group.max_replicas
        if low is not None and high is not None and low > high:
            problems.append(
                FieldProblem(
                    kind,
                    name,
                    f"{where}.minReplicas",
                    f"{low} is more than maxReplicas {high}",
                    "lower minReplicas or raise maxReplicas",
                )
            )
    return problems


def _ray_cluster(obj: Obj, kind: str, name: str) -> Problems:
    return _ray_cluster_spec(obj.get("spec"), kind, name, "spec")


def _ray_job(obj: Obj, kind: str, name: str) -> Problems:
    spec = _typed(_RayJobSpec, obj.get("spec"), kind, name, "spec")
    if isinstance(spec, list):
        return spec
    return _ray_cluster_spec(spec.ray_cluster_spec, kind, name, "spec.rayClusterSpec")


def _ray_service(obj: Obj, kind: str, name: str) -> Problems:
    spec = _typed(_RayServiceSpec, obj.get("spec"), kind, name, "spec")
    if isinstance(spec, list):
        return spec
    return _ray_cluster_spec(spec.ray_cluster_config, kind, name, "spec.rayClusterConfig")


def _pytorch_job(obj: Obj, kind: str, name: str) -> Problems:
    spec = _typed(_PyTorchJobSpec, obj.get("spec"), kind, name, "spec")
    if isinstance(spec, list):
        return spec
    problems: Problems = []
    for role, replica in spec.pytorch_replica_specs.items():
        where = f"spec.pytorchReplicaSpecs.{role}"
        problems += template_problems(replica.template, kind, name, f"{where}.template")
        if role == "Master" and replica.replicas not in (None, 1):
            problems.append(
                FieldProblem(kind, name, f"{where}.replicas", "must be 1: a job has one master")
            )
        containers = (replica.template.get("spec") or {}).get("containers") or []
        if not any(isinstance(ct, dict) and ct.get("name") == "pytorch" for ct in containers):
            problems.append(
                FieldProblem(
                    kind,
                    name,
                    f"{where}.template.spec.containers",
                    "has no container named pytorch",
                    "name the training container pytorch, as Kubeflow requires",
                )
            )
    return problems


CHECKS: dict[str, Callable[[Obj, str, str], Problems]] = {
    "Deployment": _replica_set,
    "ReplicaSet": _replica_set,
    "Job": _job,
    "CronJob": _cron_job,
    "RayCluster": _ray_cluster,
    "RayJob": _ray_job,
    "RayService": _ray_service,
    "PyTorchJob": _pytorch_job,
}


def workload_problems(obj: Obj) -> Problems:
    """What is refused in a workload of a kind listed in CHECKS (others: nothing)."""
    kind = str(obj.get("kind"))
    check = CHECKS.get(kind)
    return check(obj, kind, str(obj["metadata"]["name"])) if check else []


def new_workload_problems(obj: Obj) -> Problems:
    """What the apiserver refuses in a new workload (an object stored before keeps it, and may
    be updated): a CronJob whose schedule names its time zone (``TZ=`` or ``CRON_TZ=``), which
    a v1.34 apiserver wants in ``spec.timeZone``."""
    spec = obj.get("spec")
    if obj.get("kind") != "CronJob" or not isinstance(spec, dict):
        return []
    schedule = spec.get("schedule")
    if not isinstance(schedule, str) or "TZ" not in schedule:
        return []
    return [
        FieldProblem(
            "CronJob",
            str(obj["metadata"]["name"]),
            "spec.schedule",
            "cannot use TZ or CRON_TZ in schedule, use timeZone field instead",
            "move the time zone to spec.timeZone",
        )
    ]


# ---- what a (valid) workload makes: pod templates, pods ----------------------------------------


def _ray_templates(spec: object, path: str) -> list[tuple[str, Obj]]:
    if not isinstance(spec, dict):
        return []
    found = [(f"{path}.headGroupSpec.template", (spec.get("headGroupSpec") or {}).get("template"))]
    for i, group in enumerate(spec.get("workerGroupSpecs") or []):
        found.append((f"{path}.workerGroupSpecs[{i}].template", (group or {}).get("template")))
    return [(where, t) for where, t in found if isinstance(t, dict)]


def pod_templates(obj: Obj) -> list[tuple[str, Obj]]:
    """(path, template) of every pod template in a workload; none for other kinds."""
    kind, spec = obj.get("kind"), obj.get("spec") or {}
    found: list[tuple[str, object]] = []
    if kind in ("Deployment", "ReplicaSet", "Job"):
        found = [("spec.template", spec.get("template"))]
    elif kind == "CronJob":
        job = (spec.get("jobTemplate") or {}).get("spec") or {}
        found = [("spec.jobTemplate.spec.template", job.get("template"))]
    elif kind == "RayCluster":
        return _ray_templates(spec, "spec")
    elif kind == "RayJob":
        return _ray_templates(spec.get("rayClusterSpec"), "spec.rayClusterSpec")
    elif kind == "RayService":
        return _ray_templates(spec.get("rayClusterConfig"), "spec.rayClusterConfig")
    elif kind == "PyTorchJob":
        found = [
            (f"spec.pytorchReplicaSpecs.{role}.template", (replica or {}).get("template"))
            for role, replica in (spec.get("pytorchReplicaSpecs") or {}).items()
        ]
    return [(where, t) for where, t in found if isinstance(t, dict)]


def _count(value: object, default: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def _ray_pods(spec: object) -> int:
    if not isinstance(spec, dict):
        return 0
    pods = 1
    for group in spec.get("workerGroupSpecs") or []:
        if isinstance(group, dict) and not group.get("suspend"):
            pods += _count(group.get("replicas"), 1) * _count(group.get("numOfHosts"), 1)
    return pods


def _job_pods(spec: object) -> int:
    if not isinstance(spec, dict):
        return 0
    parallelism = _count(spec.get("parallelism"), 1)
    completions = spec.get("completions")
    return min(parallelism, _count(completions, parallelism))


def pods_wanted(obj: Obj) -> tuple[str, int]:
    """(the field that sets it, how many pods) a workload makes at once; ("", 0) for other
    kinds."""
    kind, spec = obj.get("kind"), obj.get("spec") or {}
    if kind in ("Deployment", "ReplicaSet"):
        return "spec.replicas", _count(spec.get("replicas"), 1)
    if kind == "Job":
        return "spec.parallelism", _job_pods(spec)
    if kind == "CronJob":
        job = (spec.get("jobTemplate") or {}).get("spec")
        return "spec.jobTemplate.spec.parallelism", _job_pods(job)
    if kind == "RayCluster":
        return "spec.workerGroupSpecs", _ray_pods(spec)
    if kind == "RayJob":
        return "spec.rayClusterSpec.workerGroupSpecs", _ray_pods(spec.get("rayClusterSpec"))
    if kind == "RayService":
        return "spec.rayClusterConfig.workerGroupSpecs", _ray_pods(spec.get("rayClusterConfig"))
    if kind == "PyTorchJob":
        replicas = (spec.get("pytorchReplicaSpecs") or {}).values()
        return "spec.pytorchReplicaSpecs", sum(
            _count(r.get("replicas"), 1) for r in replicas if isinstance(r, dict)
        )
    return "", 0
