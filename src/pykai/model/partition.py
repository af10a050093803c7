"""KAI's scheduling-shard partitions: which nodes, queues, PodGroups and BindRequests one
scheduler sees. As KAI's scheduler (conf/scheduler_conf.go ``SchedulingNodePoolParams``), an
object belongs to the partition whose value its node-pool label holds; with no value, the
partition holds the objects that carry no node-pool label at all (the default shard). With no
label key, one scheduler sees everything. Pods are never filtered: a pod counts on whichever
node holds it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from pykai.model.constants import NODE_POOL_LABEL

PARTITIONED_KINDS = ("Node", "Queue", "PodGroup", "BindRequest")
"""The kinds a partition's scheduler lists through its label selector."""
DEFAULT_POOL = "default"
"""The node pool's name where objects carry no node-pool label (KAI's condition field)."""


@dataclass(frozen=True, slots=True)
class Partition:
    """One scheduler's share of the cluster: the node-pool label ``key`` and its ``value``."""

    key: str = NODE_POOL_LABEL
    value: str = ""

    def selector(self) -> str:
        """The apiserver's labelSelector for the partitioned kinds ("" selects everything)."""
        if not self.key:
            return ""
        return f"{self.key}={self.value}" if self.value else f"!{self.key}"


def pool_of(labels: Mapping[str, object] | None, key: str = NODE_POOL_LABEL) -> str:
    """The node pool an object's labels name (KAI's GetNodePoolNameFromLabels)."""
    value = (labels or {}).get(key)
    return value if isinstance(value, str) and value else DEFAULT_POOL
