"""The pod-grouper: a pod's top owner decides its PodGroup (queue, gang size, priority).

Importing the package registers the groupers of every owner family.
"""

from pykai.grouping import apps, kubeflow, ray

__all__ = ["apps", "kubeflow", "ray"]
