"""Kueue's API group (``kueue.x-k8s.io``): its versions and the labels Kueue reads on jobs (its
kinds are in the table of model/kinds.py: ``KUEUE_KINDS``)."""

from __future__ import annotations

GROUP = "kueue.x-k8s.io"
V1BETA2 = f"{GROUP}/v1beta2"
V1BETA1 = f"{GROUP}/v1beta1"
QUEUE_NAME_LABEL = "kueue.x-k8s.io/queue-name"
PRIORITY_CLASS_LABEL = "kueue.x-k8s.io/priority-class"
ADMITTED_QUEUE = "kueue.x-k8s.io/admitted"
"""The queue of the PodGroup of a Kueue-managed job's pods: no KAI Queue can have this name
(a slash), so KAI's queues never govern them (see engine/kueue/place.py)."""
