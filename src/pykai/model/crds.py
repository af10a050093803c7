"""The CustomResourceDefinitions of KAI's kinds, generated from pykai's models: the kinds table
(group, version, plural, scope, short names) and the pydantic models of each kind's spec and
status, whose fields, types, patterns and descriptions become the OpenAPI schema (what the
apiserver validates and ``kubectl explain`` shows). ``pykai crds`` writes them to
deploy/helm/pykai/crds/; a test keeps those files equal to what this module makes.

The schemas are KAI's (same groups, versions, fields, printer columns and quantity patterns),
with pykai's own limits where pykai refuses more (e.g. a queue's priority is an int32) and
printer columns that make ``kubectl get podgroups`` useful."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import yaml
from pydantic import BaseModel

from pykai.model.bindrequest import BindRequestSpec, BindRequestStatus
from pykai.model.kinds import BY_KIND, KindSpec
from pykai.model.meta import Obj
from pykai.model.podgroup import PodGroupSpec, PodGroupStatus
from pykai.model.queue import QueueSpec, QueueStatus
from pykai.model.shard import SchedulingShardSpec, SchedulingShardStatus


@dataclass(frozen=True)
class PrinterColumn:
    """A column of ``kubectl get``."""

    name: str
    type: str
    json_path: str

    def definition(self) -> Obj:
        """As a CRD's additionalPrinterColumns entry."""
        return {"jsonPath": self.json_path, "name": self.name, "type": self.type}


@dataclass(frozen=True)
class CustomResource:
    """One kind pykai defines: where it lives, what it is, its spec and status models."""

    kind: KindSpec
    description: str
    spec: type[BaseModel]
    status: type[BaseModel]
    columns: tuple[PrinterColumn, ...] = ()

    @property
    def name(self) -> str:
        """The CRD's name, ``plural.group``."""
        return f"{self.kind.plural}.{self.kind.group}"

    @property
    def file_name(self) -> str:
        """Where the Helm chart keeps it: ``group_plural.yaml``."""
        return f"{self.kind.group}_{self.kind.plural}.yaml"


CUSTOM_RESOURCES = (
    CustomResource(
        BY_KIND["Queue"],
        "A queue: a share of the cluster's resources (quota, limit, over-quota weight) for the "
        "jobs of a team, in a tree of queues.",
        QueueSpec,
        QueueStatus,
        (  # KAI's columns, as KAI declares them (priority as a string)
            PrinterColumn("Priority", "string", ".spec.priority"),
            PrinterColumn("Parent", "string", ".spec.parentQueue"),
            PrinterColumn("Children", "string", ".status.childQueues"),
            PrinterColumn("DisplayName", "string", ".spec.displayName"),
        ),
    ),
    CustomResource(
        BY_KIND["PodGroup"],
        "A PodGroup: a gang of pods the scheduler places all together or not at all, in a "
        "queue, with a priority.",
        PodGroupSpec,
        PodGroupStatus,
        (  # none in KAI's CRD; pykai's, as `pykai get podgroups` shows them
            PrinterColumn("Queue", "string", ".spec.queue"),
            PrinterColumn("Min-Member", "integer", ".spec.minMember"),
            PrinterColumn("Priority", "string", ".spec.priorityClassName"),
            PrinterColumn("Phase", "string", ".status.phase"),
            PrinterColumn("Age", "date", ".metadata.creationTimestamp"),
        ),
    ),
    CustomResource(
        BY_KIND["BindRequest"],
        "A BindRequest: the scheduler asks the binder to bind a pod whose bind takes more than "
        "one write (a shared GPU).",
        BindRequestSpec,
        BindRequestStatus,
    ),
    CustomResource(
        BY_KIND["SchedulingShard"],
        "A SchedulingShard: the scheduler's settings (placement strategy, actions, minimum "
        "runtimes, flags) for a partition of the cluster.",
        SchedulingShardSpec,
        SchedulingShardStatus,
    ),
)

_ENVELOPE = {
    "apiVersion": {
        "description": "The versioned schema of this representation of an object.",
        "type": "string",
    },
    "kind": {"description": "The REST resource this object represents.", "type": "string"},
    "metadata": {"type": "object"},
}


def openapi(model: type[BaseModel]) -> Obj:
    """A model's JSON schema as a structural OpenAPI v3 schema: references inlined, no titles
    or defaults (the apiserver would apply them), null alternatives dropped, free-form maps
    kept as written, descriptions on one line, properties in name order."""
    schema = model.model_json_schema(by_alias=True)
    return _structural(schema, schema.get("$defs", {}))


def _structural(node: Obj, defs: dict[str, Obj]) -> Obj:
    node = dict(node)
    reference = node.pop("$ref", None)
    if reference is not None:  # the field's own keys (its description) win over the model's
        node = {**_structural(defs[reference.rsplit("/", 1)[-1]], defs), **node}
    choices = node.pop("anyOf", None)
    if choices is not None:
        kept = [c for c in choices if c != {"type": "null"}]
        if len(kept) == 1:
            node = {**_structural(kept[0], defs), **node}
        else:
            node["anyOf"] = kept
    out: Obj = {}
    for key, value in node.items():
        if key in ("title", "default", "$defs"):
            continue
        if key == "description":
            out[key] = " ".join(str(value).split())
        elif key == "properties":
            out[key] = {name: _structural(value[name], defs) for name in sorted(value)}
        elif key == "items":
            out[key] = _structural(value, defs)
        elif key == "additionalProperties":
            if value is True:
                out["x-kubernetes-preserve-unknown-fields"] = True
            elif isinstance(value, dict):
                out[key] = _structural(value, defs)
            # False: a structural schema may not say it; the apiserver prunes unknown fields
        else:
            out[key] = value
    return out


def definition(resource: CustomResource) -> Obj:
    """The CustomResourceDefinition of one kind."""
    kind = resource.kind
    schema = {
        "description": resource.description,
        "properties": {
            **_ENVELOPE,
            "spec": openapi(resource.spec),
            "status": openapi(resource.status),
        },
        "type": "object",
    }
    version: Obj = {"name": kind.version}
    if resource.columns:
        version["additionalPrinterColumns"] = [c.definition() for c in resource.columns]
    version |= {
        "schema": {"openAPIV3Schema": schema},
        "served": True,
        "storage": True,
        "subresources": {"status": {}},
    }
    names: Obj = {
        "kind": kind.kind,
        "listKind": f"{kind.kind}List",
        "plural": kind.plural,
        "singular": kind.kind.lower(),
    }
    if kind.short:
        names["shortNames"] = list(kind.short)
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": resource.name},
        "spec": {
            "group": kind.group,
            "names": names,
            "scope": "Namespaced" if kind.namespaced else "Cluster",
            "versions": [version],
        },
    }


def render(resource: CustomResource) -> str:
    """The CRD as the YAML file the Helm chart ships."""
    header = (
        f"# {resource.kind.kind} ({resource.kind.api_version}), schema-compatible with KAI "
        "Scheduler's.\n# Generated by `pykai crds` from src/pykai/model/: do not edit.\n"
    )
    body: Any = yaml.safe_dump(definition(resource), sort_keys=True, width=100)
    return header + str(body)
