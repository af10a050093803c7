"""Names shared with KAI and Kubernetes: API groups, labels, annotations, built-in classes."""

from typing import Final

SCHEDULER_NAME: Final = "kai-scheduler"

# API versions of the kinds pykai understands.
QUEUE_API: Final = "scheduling.run.ai/v2"
PODGROUP_API: Final = "scheduling.run.ai/v2alpha2"
PRIORITYCLASS_API: Final = "scheduling.k8s.io/v1"

# Resource names.
GPU_RESOURCE: Final = "nvidia.com/gpu"
CPU_RESOURCE: Final = "cpu"
MEMORY_RESOURCE: Final = "memory"

# Pod annotations and labels (KAI's names).
GPU_FRACTION_ANNOTATION: Final = "gpu-fraction"
GPU_MEMORY_ANNOTATION: Final = "gpu-memory"
GPU_FRACTION_NUM_DEVICES_ANNOTATION: Final = "gpu-fraction-num-devices"
GPU_FRACTION_CONTAINER_ANNOTATION: Final = "gpu-fraction-container-name"
POD_GROUP_ANNOTATION: Final = "pod-group-name"
GPU_GROUP_LABEL: Final = "runai-gpu-group"
GPU_PORTION_ANNOTATION: Final = "pykai.io/gpu-portion"  # set by the binder on shared-GPU pods
VISIBLE_DEVICES_ANNOTATION: Final = "pykai.io/visible-devices"
# how long a pod runs before the stand-in kubelet completes it (a duration: "90s", "2h")
DURATION_ANNOTATION: Final = "pykai.io/duration"
GPU_PORTION_ENV: Final = "GPU_PORTION"  # what KAI's binder gives a shared-GPU container
VISIBLE_DEVICES_ENV: Final = "NVIDIA_VISIBLE_DEVICES"
QUEUE_LABEL: Final = "kai.scheduler/queue"
PROJECT_LABEL: Final = "project"
PRIORITY_CLASS_LABEL: Final = "priorityClassName"
PREEMPTIBILITY_LABEL: Final = "kai.scheduler/preemptibility"
TASK_PRIORITY_LABEL: Final = "kai.scheduler/task-priority"
SUBGROUP_LABEL: Final = "kai.scheduler/subgroup-name"
NODE_POOL_LABEL: Final = "kai.scheduler/node-pool"  # the partition of a scheduling shard
RAY_NODE_TYPE_LABEL: Final = "ray.io/node-type"
KUBEFLOW_ROLE_LABEL: Final = "training.kubeflow.org/job-role"
LAST_START_ANNOTATION: Final = "kai.scheduler/last-start-timestamp"
STALE_ANNOTATION: Final = "kai.scheduler/stale-podgroup-timestamp"

# Node labels.
GPU_MEMORY_NODE_LABEL: Final = "nvidia.com/gpu.memory"
GPU_PRODUCT_NODE_LABEL: Final = "nvidia.com/gpu.product"

# Queues created by default (KAI's Helm chart).
DEFAULT_QUEUE: Final = "default-queue"
DEFAULT_PARENT_QUEUE: Final = "default-parent-queue"
DEFAULT_QUEUE_PRIORITY: Final = 100

# Priority classes shipped with KAI; a job without a known class gets DEFAULT_PRIORITY.
BUILTIN_PRIORITY_CLASSES: Final[dict[str, int]] = {
    "train": 50,
    "build-preemptible": 75,
    "build": 100,
    "inference": 125,
}
DEFAULT_PRIORITY: Final = 50
PREEMPTIBLE_BELOW_PRIORITY: Final = 100
