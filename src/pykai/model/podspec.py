"""The shape of a pod spec as Kubernetes decodes and validates it: types at every level pykai
or the kubelet reads (strict: ``"8000"`` is no port, ``8080`` is no env value), containers with
names and images, enumerations, int32 ranges. Quantities are checked by the pod view
(model/pod.py), which reads them."""

from __future__ import annotations

from dataclasses import replace
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator
from pydantic import ValidationError as PydanticError

from pykai.model.errors import FieldProblem, ValidationError
from pykai.model.meta import Obj
from pykai.model.names import dns1123_label, metadata_problems
from pykai.model.pod import parse_pod
from pykai.model.pydantic_errors import problems_from

INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
Int32 = Annotated[int, Field(ge=INT32_MIN, le=INT32_MAX)]
NonNegativeInt32 = Annotated[int, Field(ge=0, le=INT32_MAX)]
_STRICT = ConfigDict(strict=True, extra="allow", populate_by_name=True)


class _EnvVar(BaseModel):
    model_config = _STRICT

    name: str
    value: str | None = None
    value_from: dict[str, Any] | None = Field(None, alias="valueFrom")


class _Port(BaseModel):
    model_config = _STRICT

    container_port: int = Field(alias="containerPort", ge=1, le=65535)
    host_port: int | None = Field(None, alias="hostPort", ge=0, le=65535)
    protocol: Literal["TCP", "UDP", "SCTP"] | None = None
    name: str | None = None


class _Resources(BaseModel):
    model_config = _STRICT

    requests: dict[str, Any] | None = None
    limits: dict[str, Any] | None = None


class _Container(BaseModel):
    model_config = _STRICT

    name: str
    image: str = Field(min_length=1)
    command: list[str] | None = None
    args: list[str] | None = None
    env: list[_EnvVar] | None = None
    env_from: list[dict[str, Any]] | None = Field(None, alias="envFrom")
    ports: list[_Port] | None = None
    resources: _Resources | None = None
    image_pull_policy: Literal["Always", "IfNotPresent", "Never"] | None = Field(
        None, alias="imagePullPolicy"
    )
    volume_mounts: list[dict[str, Any]] | None = Field(None, alias="volumeMounts")

    @field_validator("name")
    @classmethod
    def _dns_label(cls, value: str) -> str:
        if why := dns1123_label(value):
            raise ValueError(why)
        return value


class _Toleration(BaseModel):
    model_config = _STRICT

    key: str | None = None
    operator: Literal["Exists", "Equal"] | None = None
    value: str | None = None
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute", ""] | None = None
    toleration_seconds: int | None = Field(None, alias="tolerationSeconds")


class _Gate(BaseModel):
    model_config = _STRICT

    name: str = Field(min_length=1)


class PodSpecShape(BaseModel):
    """The typed part of a pod spec (fields not listed are kept as they are)."""

    model_config = _STRICT

    containers: list[_Container] = Field(min_length=1)
    init_containers: list[_Container] | None = Field(None, alias="initContainers")
    node_selector: dict[str, str] | None = Field(None, alias="nodeSelector")
    node_name: str | None = Field(None, alias="nodeName")
    scheduler_name: str | None = Field(None, alias="schedulerName")
    priority_class_name: str | None = Field(None, alias="priorityClassName")
    priority: Int32 | None = None
    restart_policy: Literal["Always", "OnFailure", "Never"] | None = Field(
        None, alias="restartPolicy"
    )
    tolerations: list[_Toleration] | None = None
    affinity: dict[str, Any] | None = None
    scheduling_gates: list[_Gate] | None = Field(None, alias="schedulingGates")
    volumes: list[dict[str, Any]] | None = None
    service_account_name: str | None = Field(None, alias="serviceAccountName")
    termination_grace_period_seconds: int | None = Field(
        None, alias="terminationGracePeriodSeconds", ge=0
    )


def pod_problems(pod: Obj) -> list[FieldProblem]:
    """What Kubernetes and KAI refuse in a pod's spec: its shape, then what the pod view
    (model/pod.py) refuses (quantities, GPU requests and annotations, node constraints)."""
    name = str((pod.get("metadata") or {}).get("name") or "")
    return _spec_and_view(pod.get("metadata") or {}, pod.get("spec"), "Pod", name, "")


def template_problems(
    template: object,
    kind: str,
    name: str,
    path: str,
    restart_policies: tuple[str, ...] = (),
) -> list[FieldProblem]:
    """What is refused in a pod template at ``path`` of a workload (``spec.template``),
    checked as the pods made from it will be; ``restart_policies``, if given, are the only
    restartPolicy values the workload allows (the first is its default)."""
    if not isinstance(template, dict):
        return [FieldProblem(kind, name, path, "is required (a pod template: metadata and spec)")]
    problems = metadata_problems(template, None, kind, name, f"{path}.metadata")
    spec = template.get("spec")
    if problems:  # the view would report the same metadata again
        problems += pod_spec_problems(spec, kind, name, f"{path}.spec")
    else:
        problems = _spec_and_view(template.get("metadata") or {}, spec, kind, name, f"{path}.")
    if restart_policies and isinstance(spec, dict):
        policy = spec.get("restartPolicy", restart_policies[0])
        if policy not in restart_policies:
            problems.append(
                FieldProblem(
                    kind,
                    name,
                    f"{path}.spec.restartPolicy",
                    f"must be {' or '.join(restart_policies)} for a {kind}, got {policy!r}",
                )
            )
    return problems


def _spec_and_view(
    metadata: object, spec: object, kind: str, name: str, prefix: str
) -> list[FieldProblem]:
    """Shape problems of a pod spec (under ``prefix``); when there are none, the view's."""
    problems = pod_spec_problems(spec, kind, name, f"{prefix}spec")
    if problems or not isinstance(metadata, dict):
        return problems
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {**metadata, "name": name}, "spec": spec}
    try:
        parse_pod(pod)
    except ValidationError as exc:
        return [replace(p, kind=kind, name=name, field=f"{prefix}{p.field}") for p in exc.problems]
    return []


def pod_spec_problems(spec: object, kind: str, name: str, path: str) -> list[FieldProblem]:
    """What Kubernetes refuses in the shape of a pod spec found at ``path`` of an object."""
    if not isinstance(spec, dict):
        return [FieldProblem(kind, name, path, "is required (a map with containers)")]
    try:
        shape = PodSpecShape.model_validate(spec)
    except PydanticError as exc:
        return problems_from(exc, kind, name, path)
    problems = []
    seen: set[str] = set()
    for group, containers in (
        ("containers", shape.containers),
        ("initContainers", shape.init_containers or []),
    ):
        for i, container in enumerate(containers):
            if container.name in seen:
                problems.append(
                    FieldProblem(
                        kind,
                        name,
                        f"{path}.{group}[{i}].name",
                        f'duplicate container name "{container.name}"',
                        "give every container its own name",
                    )
                )
            seen.add(container.name)
    return problems
