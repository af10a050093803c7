"""Object names within Kubernetes' limits.

Names pykai makes from other names (a PodGroup from its owner's name and UID, a ReplicaSet from
its Deployment's, a RayCluster from its RayJob's) can grow past what the apiserver accepts.
Such a name keeps a readable prefix and ends with a digest of the whole name, so two long names
stay distinct and the same input always gives the same name.
"""

from __future__ import annotations

import hashlib

MAX_NAME = 253  # a DNS-1123 subdomain: most object names
MAX_LABEL = 63  # a DNS-1123 label, and label values
_DIGEST = 10


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
