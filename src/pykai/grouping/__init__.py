"""The pod-grouper: a pod's top owner decides its PodGroup (queue, gang size, priority)."""
