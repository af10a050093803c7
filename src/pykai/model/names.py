"""Object names within Kubernetes' limits.

Kubernetes' rules for names, label keys and values, and annotation keys (apimachinery's
validation functions: IsDNS1123Subdomain, IsDNS1123Label, IsDNS1035Label, IsQualifiedName,
IsValidLabelValue, ValidateAnnotations), and the metadata checks of an object built on them.

Names pykai makes from other names (a PodGroup from its owner's name and UID, a ReplicaSet from
its Deployment's, a RayCluster from its RayJob's) can grow past what the apiserver accepts.
Such a name keeps a readable prefix and ends with a digest of the whole name, so two long names
stay distinct and the same input always gives the same name.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from typing import Any

from pykai.model.errors import FieldProblem
from pykai.model.kinds import KindSpec, NameRule
from pykai.model.meta import parse_time

_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_LABEL = re.compile(rf"^{_LABEL}$")
_DNS1123_SUBDOMAIN = re.compile(rf"^{_LABEL}(\.{_LABEL})*$")
_DNS1035_LABEL = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
_QUALIFIED_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
MAX_NAME = 253  # a DNS-1123 subdomain: most object names
MAX_LABEL = 63  # a DNS-1123 label, and label values
_DIGEST = 10
ANNOTATIONS_MAX = 256 * 1024  # bytes of keys and values together (TotalAnnotationSizeLimitB)


def dns1123_label(value: str) -> str:
    """Why ``value`` is not an RFC 1123 label (namespace names, container names), or ""."""
    if len(value) > MAX_LABEL:
        return f"must be no more than {MAX_LABEL} characters"
    if not _DNS1123_LABEL.match(value):
        return (
            "must consist of lower case alphanumeric characters or '-', and must start and end "
            "with an alphanumeric character (e.g. 'my-name' or '123-abc')"
        )
    return ""


def dns1123_subdomain(value: str) -> str:
    """Why ``value`` is not an RFC 1123 subdomain (most object names), or ""."""
    if len(value) > MAX_NAME:
        return f"must be no more than {MAX_NAME} characters"
    if not _DNS1123_SUBDOMAIN.match(value):
        return (
            "must consist of lower case alphanumeric characters, '-' or '.', and must start "
            "and end with an alphanumeric character (e.g. 'example.com')"
        )
    return ""


def dns1035_label(value: str) -> str:
    """Why ``value`` is not an RFC 1035 label (Service names), or ""."""
    if len(value) > MAX_LABEL:
        return f"must be no more than {MAX_LABEL} characters"
    if not _DNS1035_LABEL.match(value):
        return (
            "must consist of lower case alphanumeric characters or '-', start with a letter "
            "and end with an alphanumeric character (e.g. 'my-name')"
        )
    return ""


def path_segment(value: str) -> str:
    """Why ``value`` cannot be a path segment name (RBAC objects), or ""."""
    if value in (".", ".."):
        return f"may not be {value!r}"
    if "/" in value or "%" in value:
        return "may not contain '/' or '%'"
    return ""


_NAME_RULES: dict[NameRule, Callable[[str], str]] = {
    "subdomain": dns1123_subdomain,
    "label": dns1123_label,
    "dns1035": dns1035_label,
    "path": path_segment,
}


def qualified_name(key: str) -> str:
    """Why ``key`` is not a label or annotation key (``[prefix/]name``), or ""."""
    prefix, slash, name = key.rpartition("/")
    if slash and not prefix:
        return "prefix part must be non-empty"
    if prefix and (why := dns1123_subdomain(prefix)):
        return f"prefix part {why}"
    if not name:
        return "name part must be non-empty"
    if len(name) > MAX_LABEL:
        return f"name part must be no more than {MAX_LABEL} characters"
    if not _QUALIFIED_NAME.match(name):
        return (
            "name part must consist of alphanumeric characters, '-', '_' or '.', and must "
            "start and end with an alphanumeric character (e.g. 'MyName' or 'my.name')"
        )
    return ""


def label_value(value: str) -> str:
    """Why ``value`` is not a label value, or ""."""
    if len(value) > MAX_LABEL:
        return f"must be no more than {MAX_LABEL} characters"
    if not _LABEL_VALUE.match(value):
        return (
            "must be empty or consist of alphanumeric characters, '-', '_' or '.', and must "
            "start and end with an alphanumeric character"
        )
    return ""


Problem = Callable[..., None]  # records (field, message[, fix]) under the metadata path


def metadata_problems(
    obj: dict[str, Any], spec: KindSpec | None, kind: str, name: str, prefix: str = "metadata"
) -> list[FieldProblem]:
    """What Kubernetes refuses in an object's metadata (or a pod template's, ``prefix``
    naming where it is; a template needs no name): the name by the kind's rule, the
    namespace, labels, annotations, owner references and creationTimestamp."""
    meta = obj.get("metadata")
    problems: list[FieldProblem] = []

    def problem(field: str, message: str, fix: str = "") -> None:
        problems.append(FieldProblem(kind, name, f"{prefix}.{field}", message, fix))

    if meta is None:
        meta = {}
    if not isinstance(meta, dict):
        return [FieldProblem(kind, name, prefix, "must be a map", "write metadata: {name: ...}")]
    if spec is not None:
        _check_name(meta.get("name"), spec, problem)
        namespace = meta.get("namespace")
        if namespace is not None and spec.namespaced:
            why = dns1123_label(namespace) if isinstance(namespace, str) else "must be a string"
            if why:
                problem("namespace", why, "use a lower-case DNS label such as team-a")
    _check_labels(meta.get("labels"), problem)
    _check_annotations(meta.get("annotations"), problem)
    _check_owners(meta.get("ownerReferences"), problem)
    stamp = meta.get("creationTimestamp")
    if stamp is not None:
        try:
            parse_time(stamp)
        except (ValueError, TypeError, OverflowError):
            problem("creationTimestamp", f"{stamp!r} is not an RFC 3339 time", "remove it")
    return problems


def _check_name(value: object, spec: KindSpec, problem: Problem) -> None:
    if not isinstance(value, str):
        problem("name", "must be a string", "quote it")
        return
    why = _NAME_RULES[spec.names](value)
    if not why and spec.max_name and len(value) > spec.max_name:
        why = f"must be no more than {spec.max_name} characters for a {spec.kind}"
    if why:
        problem("name", why, "use a lower-case name such as my-object")


def _check_labels(labels: object, problem: Problem) -> None:
    if labels is None:
        return
    if not isinstance(labels, dict):
        problem("labels", "must be a map of strings", "write labels as key: value lines")
        return
    for key, value in labels.items():
        if why := qualified_name(str(key)):
            problem(f"labels[{key}]", f"key {why}")
        if not isinstance(value, str):
            problem(f"labels[{key}]", f"must be a string, got {value!r}", "quote the value")
        elif why := label_value(value):
            problem(f"labels[{key}]", why)


def _check_annotations(annotations: object, problem: Problem) -> None:
    if annotations is None:
        return
    if not isinstance(annotations, dict):
        problem("annotations", "must be a map of strings", "write annotations as key: value")
        return
    size = 0
    for key, value in annotations.items():
        if why := qualified_name(str(key).lower()):
            problem(f"annotations[{key}]", f"key {why}")
        if not isinstance(value, str):
            problem(f"annotations[{key}]", f"must be a string, got {value!r}", "quote the value")
        size += len(str(key).encode()) + len(str(value).encode())
    if size > ANNOTATIONS_MAX:
        problem("annotations", f"may not be more than {ANNOTATIONS_MAX} bytes, got {size}")


def _check_owners(owners: object, problem: Problem) -> None:
    if owners is None:
        return
    if not isinstance(owners, list):
        problem("ownerReferences", "must be a list")
        return
    for i, owner in enumerate(owners):
        if not isinstance(owner, dict):
            problem(f"ownerReferences[{i}]", "must be a map")
            continue
        for field in ("apiVersion", "kind", "name", "uid"):
            if not isinstance(owner.get(field), str) or not owner[field]:
                problem(f"ownerReferences[{i}].{field}", "is required (a string)")


def bounded_name(name: str, limit: int = MAX_NAME) -> str:
    """``name`` if it fits in ``limit`` characters; else a prefix of it, a dash and a digest
    of the whole name, ending in an alphanumeric character as DNS-1123 requires."""
    if len(name) <= limit:
        return name
    digest = hashlib.sha256(name.encode()).hexdigest()[:_DIGEST]
    return f"{name[: limit - _DIGEST - 1].rstrip('-.')}-{digest}"


_GENERATED_BASE = MAX_LABEL - 5  # the apiserver's generateName: base cut to 58, 5 random


def generated_name(base: str, random_part: str) -> str:
    """A name made as the apiserver makes one from ``generateName``: the base cut to 58
    characters, then the random part (5 characters)."""
    return base[:_GENERATED_BASE] + random_part
