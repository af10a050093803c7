"""The webhook configurations pykai registers (which kinds and operations go to which path,
with which failure policy), and their registration."""

from __future__ import annotations

import base64

from pykai.kube.api import KubeApi
from pykai.kube.webhook.server import MUTATE_PATH, PATH
from pykai.model.kinds import BY_KIND, KUEUE_KINDS
from pykai.model.kueue.api import QUEUE_NAME_LABEL
from pykai.model.kueue.jobs import MANAGED_KINDS
from pykai.model.meta import Obj
from pykai.model.workloads import CHECKS as WORKLOAD_KINDS

KUEUE_CONFIG_KINDS = tuple(k for k in KUEUE_KINDS if k != "Workload")
"""Kueue's objects written by people (refused while the webhook is down, as Kueue's own
webhooks do); Workloads are written by controllers and fail open like the workloads."""
CONFIGURATION_NAME = "pykai-validation"
MUTATION_NAME = "pykai-mutation"


def _webhook(
    name: str, client_config: Obj, kinds: tuple[str, ...], operations: list[str], policy: str
) -> Obj:
    """One webhook of a configuration: a rule per kind (its group, preferred version and
    plural from the table of kinds)."""
    return {
        "name": f"{name}.pykai.io",
        "clientConfig": client_config,
        "rules": [
            {
                "apiGroups": [BY_KIND[kind].group],
                "apiVersions": list(BY_KIND[kind].versions),
                "operations": operations,
                "resources": [BY_KIND[kind].plural],
                "scope": "*",
            }
            for kind in kinds
        ],
        "failurePolicy": policy,
        "sideEffects": "None",
        "admissionReviewVersions": ["v1", "v1beta1"],
        "timeoutSeconds": 5,
    }


def configuration(client_config: Obj) -> Obj:
    """The ValidatingWebhookConfiguration for a clientConfig (``url`` or ``service``, with
    ``caBundle``): every kind the review checks."""
    writes = ["CREATE", "UPDATE"]
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": CONFIGURATION_NAME},
        "webhooks": [
            _webhook("queues", client_config, ("Queue",), [*writes, "DELETE"], "Fail"),
            _webhook("schedulingshards", client_config, ("SchedulingShard",), writes, "Fail"),
            _webhook("podgroups", client_config, ("PodGroup",), writes, "Ignore"),
            _webhook("pods", client_config, ("Pod",), ["CREATE"], "Ignore"),
            _webhook("workloads", client_config, tuple(WORKLOAD_KINDS), writes, "Ignore"),
            _webhook("kueue", client_config, KUEUE_CONFIG_KINDS, writes, "Fail"),
            _webhook("kueue-workloads", client_config, ("Workload",), writes, "Ignore"),
        ],
    }


def mutation(client_config: Obj) -> Obj:
    """The MutatingWebhookConfiguration: pods on CREATE (GPU-sharing ones get their env's
    ConfigMap; fails open), and jobs labelled with a Kueue queue on CREATE (made suspended;
    fails closed as Kueue's webhook does, for those jobs only: a job that started unsuspended
    would run before its Workload is admitted)."""
    gpu_env = _webhook("gpu-env", client_config, ("Pod",), ["CREATE"], "Ignore")
    jobs = _webhook("kueue-jobs", client_config, MANAGED_KINDS, ["CREATE"], "Fail")
    labelled = {"matchExpressions": [{"key": QUEUE_NAME_LABEL, "operator": "Exists"}]}
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "MutatingWebhookConfiguration",
        "metadata": {"name": MUTATION_NAME},
        "webhooks": [
            {**gpu_env, "reinvocationPolicy": "Never"},
            {**jobs, "objectSelector": labelled, "reinvocationPolicy": "Never"},
        ],
    }


def register(api: KubeApi, base_url: str, ca: bytes) -> None:
    """Create or replace both webhook configurations, served at ``base_url``
    (``https://host:port``)."""
    bundle = base64.b64encode(ca).decode()
    for kind, name, body in (
        (
            "ValidatingWebhookConfiguration",
            CONFIGURATION_NAME,
            configuration({"url": base_url + PATH, "caBundle": bundle}),
        ),
        (
            "MutatingWebhookConfiguration",
            MUTATION_NAME,
            mutation({"url": base_url + MUTATE_PATH, "caBundle": bundle}),
        ),
    ):
        api.delete(BY_KIND[kind], name)
        api.create(BY_KIND[kind], body)


def unregister(api: KubeApi) -> None:
    """Remove both webhook configurations."""
    api.delete(BY_KIND["ValidatingWebhookConfiguration"], CONFIGURATION_NAME)
    api.delete(BY_KIND["MutatingWebhookConfiguration"], MUTATION_NAME)
