"""kube-controller-manager's Deployment, ReplicaSet and Job controllers, as far as scheduling
needs them: a Deployment keeps one ReplicaSet for its current template, a ReplicaSet keeps its
replicas, a Job its parallelism (capped by completions); missing pods are recreated, as the
real controllers do after an eviction."""

from __future__ import annotations

import hashlib
from functools import partial

from pykai.controllers.host import Host
from pykai.model.meta import Obj, mapping
from pykai.model.names import bounded_name
from pykai.model.owners import owner_ref
from pykai.standins.pods import create_named, pod_from_template, reconcile_pods


def reconcile_deployment(host: Host, deployment: Obj) -> None:
    """One ReplicaSet per Deployment, for its current template (older ones are deleted),
    named after the template's hash (another hash if that name is taken)."""
    template = mapping(deployment.get("spec")).get("template") or {}
    replicasets = host.owned(deployment, "ReplicaSet")
    current = next(
        (r for r in replicasets if mapping(r.get("spec")).get("template") == template), None
    )
    for old in replicasets:
        if old is not current:
            host.delete(old)
    if current is None:
        create_named(host, partial(_new_replicaset, deployment), repr(_keys_in_order(template)))


def _keys_in_order(value: object) -> object:
    """``value`` with every mapping's keys sorted (as a SQLite store gives them back): the
    template's hash does not depend on the order its keys were written in, nor on the store."""
    if isinstance(value, dict):
        return {key: _keys_in_order(value[key]) for key in sorted(value, key=str)}
    if isinstance(value, list):
        return [_keys_in_order(item) for item in value]
    return value


def _new_replicaset(deployment: Obj, token: str) -> Obj:
    """The Deployment's ReplicaSet, its name and pod-template-hash label made from ``token``."""
    spec = mapping(deployment.get("spec"))
    template = spec.get("template") or {}
    template_hash = hashlib.sha256(token.encode()).hexdigest()[:10]
    return {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {
            "name": bounded_name(f"{deployment['metadata']['name']}-{template_hash}"),
            "namespace": deployment["metadata"].get("namespace", "default"),
            "labels": {
                **((template.get("metadata") or {}).get("labels") or {}),
                "pod-template-hash": template_hash,
            },
            "ownerReferences": [owner_ref(deployment)],
        },
        "spec": {
            "replicas": int(spec.get("replicas", 1)),
            "selector": spec.get("selector"),
            "template": template,
        },
    }


def reconcile_replicaset(host: Host, replicaset: Obj) -> None:
    """A ReplicaSet's pods."""
    spec = mapping(replicaset.get("spec"))
    prototype = pod_from_template(
        spec.get("template") or {},
        f"{replicaset['metadata']['name']}-",
        replicaset,
        {"pykai.io/set": "pods"},
    )
    wanted = {"pods": (int(spec.get("replicas", 1)), prototype)}
    reconcile_pods(host, replicaset, wanted, "pykai.io/set")


def reconcile_job(host: Host, job: Obj) -> None:
    """A Job's pods: parallelism of them, no more than completions; none while suspended
    (the active ones are deleted, as kube's Job controller does). Labelled as kube labels a
    Job's pods (its generated selector: the Job's uid and name, in both spellings)."""
    spec = mapping(job.get("spec"))
    parallelism = int(spec.get("parallelism", 1))
    completions = spec.get("completions")
    count = min(parallelism, int(completions)) if completions is not None else parallelism
    if spec.get("suspend") is True:
        count = 0
    meta = job["metadata"]
    uid, name = str(meta.get("uid", "")), str(meta["name"])
    selector = {
        "batch.kubernetes.io/controller-uid": uid,
        "batch.kubernetes.io/job-name": name,
        "controller-uid": uid,
        "job-name": name,
    }
    prototype = pod_from_template(spec.get("template") or {}, f"{name}-", job, selector)
    reconcile_pods(host, job, {uid: (count, prototype)}, "batch.kubernetes.io/controller-uid")
