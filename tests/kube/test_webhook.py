"""The admission webhook: the review itself (no network), then `pykai webhook` registered with
a real kube-apiserver v1.34, driven by kubectl v1.34: invalid Queues, PodGroups and GPU-sharing
annotations are refused with messages naming object and field, and nothing is stored."""

from __future__ import annotations

import base64
import json
import socket
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import yaml

from pykai.kube.api import connect
from pykai.kube.localcluster import LocalCluster
from pykai.kube.nodes import create_ready_nodes
from pykai.kube.webhook import generate_tls, mutate, review
from pykai.model import builders
from pykai.model.kinds import BY_KIND
from pykai.model.meta import Obj
from tests.kube.conftest import (
    ROOT,
    kubectl,
    pykai_cli,
    pykai_running,
    wait_for,
    webhook_running,
)

BAD_QUEUE = builders.queue("bad-queue", gpu=(-2, -1, 1))


def admission(obj: Obj, operation: str = "CREATE", version: str = "v1") -> Obj:
    return {
        "apiVersion": f"admission.k8s.io/{version}",
        "kind": "AdmissionReview",
        "request": {
            "uid": "u-1",
            "kind": {"group": "", "version": "v1", "kind": obj["kind"]},
            "operation": operation,
            "name": obj["metadata"]["name"],
            "object": obj if operation != "DELETE" else None,
        },
    }


def stored(objects: dict[str, list[Obj]]):  # type: ignore[no-untyped-def]
    return lambda kind: objects.get(kind, [])


def test_review_refuses_an_invalid_queue_naming_the_field() -> None:
    answer = review(admission(BAD_QUEUE), stored({}))
    response = answer["response"]
    assert answer["apiVersion"] == "admission.k8s.io/v1" and response["uid"] == "u-1"
    assert not response["allowed"] and response["status"]["code"] == 422
    assert "bad-queue" in response["status"]["message"]
    assert "spec.resources.gpu.quota" in response["status"]["message"]


def test_review_checks_the_tree_against_stored_queues() -> None:
    child = builders.queue("child", parent="dept")
    assert not review(admission(child), stored({}))["response"]["allowed"]
    parent = builders.queue("dept")
    assert review(admission(child), stored({"Queue": [parent]}))["response"]["allowed"]


def test_review_of_pods_and_podgroups() -> None:
    shared = builders.pod("p", annotations={"gpu-fraction": "1.5"})
    answer = review(admission(shared, version="v1beta1"), stored({}))
    assert answer["apiVersion"] == "admission.k8s.io/v1beta1"
    assert not answer["response"]["allowed"]
    assert "gpu-fraction" in answer["response"]["status"]["message"]
    both = builders.pod("q", gpus=1, annotations={"gpu-fraction": "0.5"})
    assert not review(admission(both), stored({}))["response"]["allowed"]
    assert review(admission(builders.pod("ok", gpus=1)), stored({}))["response"]["allowed"]
    group = builders.podgroup("g", queue="q", min_member=0)
    message = review(admission(group), stored({}))["response"]["status"]["message"]
    assert "minMember" in message


def test_gpu_sharing_can_be_switched_off() -> None:
    shared = builders.pod("p", annotations={"gpu-fraction": "0.5"})
    assert review(admission(shared), stored({}))["response"]["allowed"]
    answer = review(admission(shared), stored({}), gpu_sharing=False)["response"]
    assert not answer["allowed"] and "GPU sharing is disabled" in answer["status"]["message"]
    whole = builders.pod("w", gpus=1)
    assert review(admission(whole), stored({}), gpu_sharing=False)["response"]["allowed"]


def test_a_broken_stored_queue_does_not_block_unrelated_writes() -> None:
    orphan = builders.queue("orphan", parent="gone")  # stored before the webhook existed
    garbage = builders.queue("garbage", gpu=(-5, -1, 1))
    fresh = builders.queue("fresh")
    assert review(admission(fresh), stored({"Queue": [orphan, garbage]}))["response"]["allowed"]
    again = builders.queue("orphan", parent="still-gone")
    assert not review(admission(again), stored({"Queue": [orphan]}))["response"]["allowed"]


def test_mutation_gives_shared_gpu_pods_their_env_config_map() -> None:
    shared = builders.pod("s", annotations={"gpu-fraction": "0.5"})
    response = mutate(admission(shared))["response"]
    assert response["allowed"] and response["patchType"] == "JSONPatch"
    ops = json.loads(base64.b64decode(response["patch"]))
    name = next(o["value"] for o in ops if o["path"].endswith("pykai.io~1gpu-config"))
    assert name.startswith("pykai-gpu-")
    assert {
        "op": "add",
        "path": "/spec/containers/0/envFrom",
        "value": [{"configMapRef": {"name": name}}],
    } in ops
    shared["spec"]["containers"][0]["envFrom"] = [{"secretRef": {"name": "x"}}]
    ops = json.loads(base64.b64decode(mutate(admission(shared))["response"]["patch"]))
    assert any(o["path"] == "/spec/containers/0/envFrom/-" for o in ops)
    plain = mutate(admission(builders.pod("w", gpus=1)))["response"]
    assert plain["allowed"] and "patch" not in plain


def test_mutation_creates_kueue_managed_jobs_suspended() -> None:
    """Kueue's defaulting webhook: a job naming a LocalQueue starts suspended; one without the
    label, or controlled by a job of a managed kind, is left as it is."""
    labels = {"kueue.x-k8s.io/queue-name": "user-queue"}
    job: Obj = {"apiVersion": "ray.io/v1", "kind": "RayJob",
                "metadata": {"name": "j", "namespace": "default", "labels": labels},
                "spec": {"entrypoint": "python x.py", "suspend": False}}  # fmt: skip
    response = mutate(admission(job))["response"]
    assert json.loads(base64.b64decode(response["patch"])) == [
        {"op": "add", "path": "/spec/suspend", "value": True}
    ]
    bare = {key: value for key, value in job.items() if key != "spec"} | {"kind": "Job"}
    ops = json.loads(base64.b64decode(mutate(admission(bare))["response"]["patch"]))
    assert ops == [{"op": "add", "path": "/spec", "value": {"suspend": True}}]
    unlabelled = {**job, "metadata": {"name": "j", "namespace": "default"}}
    owner = {"kind": "RayJob", "name": "o", "controller": True}
    owned = {
        **job,
        "kind": "RayCluster",
        "metadata": {**job["metadata"], "ownerReferences": [owner]},
    }
    already = {**job, "spec": {"suspend": True}}
    for untouched in (unlabelled, owned, already):
        assert "patch" not in mutate(admission(untouched))["response"]
    served = {
        **owned,
        "metadata": {**owned["metadata"], "ownerReferences": [{**owner, "kind": "RayService"}]},
    }
    assert "patch" in mutate(admission(served))["response"]  # Kueue manages it, not its owner


def test_review_refuses_deleting_a_queue_in_use() -> None:
    used = {"Queue": [builders.queue("dept"), builders.queue("team", parent="dept")]}
    answer = review(admission(builders.queue("dept"), "DELETE"), stored(used))
    assert not answer["response"]["allowed"]
    assert 'queue "team"' in answer["response"]["status"]["message"]
    alone = admission(builders.queue("team"), "DELETE")
    assert review(alone, stored(used))["response"]["allowed"]


def test_malformed_reviews_are_answered_not_crashed_on() -> None:
    assert review({"kind": "nonsense"}, stored({}))["response"]["status"]["code"] == 400
    broken = admission(BAD_QUEUE)
    broken["request"]["kind"] = None
    assert review(broken, stored({}))["response"]["status"]["code"] == 400


# ---- against the real apiserver --------------------------------------------------------------


@pytest.fixture
def webhook(local_cluster: LocalCluster) -> Iterator[str]:
    """`pykai webhook --register` with a generated certificate; its address."""
    with webhook_running(local_cluster) as address:
        yield address


def apply_file(cluster: LocalCluster, objects: list[Obj], path: Path) -> str:
    path.write_text(yaml.safe_dump_all(objects))
    return kubectl(cluster, "apply", "-f", str(path), check=False)


def test_kubectl_is_refused_invalid_queues_and_annotations(
    local_cluster: LocalCluster, webhook: str, tmp_path: Path
) -> None:
    out = apply_file(local_cluster, [BAD_QUEUE], tmp_path / "bad.yaml")
    assert 'admission webhook "queues.pykai.io" denied the request' in out
    assert "bad-queue" in out and "spec.resources.gpu.quota" in out
    assert "bad-queue" not in kubectl(local_cluster, "get", "queues")  # nothing stored

    orphan = builders.queue("orphan-team", parent="no-such-department")
    out = apply_file(local_cluster, [orphan], tmp_path / "orphan.yaml")
    assert "denied the request" in out and "no-such-department" in out

    kubectl(local_cluster, "apply", "-f", str(ROOT / "examples/queues-department-1-team-a.yaml"))
    out = kubectl(local_cluster, "delete", "queue", "department-1", check=False)
    assert "denied the request" in out and 'queue "team-a"' in out

    pod = builders.pod("too-much", annotations={"gpu-fraction": "1.5"})
    out = apply_file(local_cluster, [pod], tmp_path / "pod.yaml")
    assert 'admission webhook "pods.pykai.io" denied the request' in out
    assert "gpu-fraction" in out
    fine = builders.pod("half-ok", annotations={"gpu-fraction": "0.5"})
    assert "created" in apply_file(local_cluster, [fine], tmp_path / "fine.yaml")
    kubectl(local_cluster, "delete", "pod", "half-ok", "--wait=false")


def cronjob(name: str, annotations: dict[str, str], **spec: object) -> Obj:
    """A batch/v1 CronJob (the version a v1.34 apiserver serves) running one pod a night."""
    pod = builders.pod(name, annotations=annotations)
    metadata = {key: pod["metadata"].get(key) or {} for key in ("labels", "annotations")}
    template = {"metadata": metadata, "spec": {**pod["spec"], "restartPolicy": "Never"}}
    job = {"spec": {"template": template}}
    return {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"schedule": "0 3 * * *", "jobTemplate": job, **spec},
    }


def test_kubectl_is_refused_a_bad_batch_v1_cronjob(
    local_cluster: LocalCluster, webhook: str, tmp_path: Path
) -> None:
    """The webhook's CronJob rule is for batch/v1, so it fires on a v1.34 apiserver (a rule for
    batch/v1beta1, which v1.34 does not serve, never did): pykai's message reaches kubectl."""
    bad = cronjob("nightly-too-much", {"gpu-fraction": "1.5"}, timeZone="Europe/Berlin")
    out = apply_file(local_cluster, [bad], tmp_path / "cron.yaml")
    assert 'admission webhook "workloads.pykai.io" denied the request' in out, out
    assert 'CronJob "nightly-too-much"' in out
    assert "spec.jobTemplate.spec.template.metadata.annotations[gpu-fraction]" in out
    assert "nightly-too-much" not in kubectl(local_cluster, "get", "cronjobs")  # nothing stored

    fine = cronjob("nightly-half", {"gpu-fraction": "0.5"}, timeZone="Europe/Berlin")
    out = apply_file(local_cluster, [fine], tmp_path / "fine.yaml")
    assert "cronjob.batch/nightly-half created" in out, out
    kubectl(local_cluster, "delete", "cronjob", "nightly-half", "--wait=false")


def test_a_stalled_client_does_not_block_the_webhook(webhook: str) -> None:
    host, port = webhook.split(":")
    with socket.create_connection((host, int(port))):  # connects, never says a word
        answer = httpx.get(f"https://{webhook}/healthz", verify=False, timeout=5)
        assert answer.status_code == 200


def test_shared_pods_get_their_gpu_env_on_a_real_cluster(
    local_cluster: LocalCluster, webhook: str, tmp_path: Path
) -> None:
    """The mutating webhook adds the envFrom at creation; the binder writes the ConfigMap
    (GPU_PORTION, NVIDIA_VISIBLE_DEVICES) before the bind."""
    api = connect(local_cluster.kubeconfig)
    node = builders.node("env-node", gpus=1, labels={"pool": "env"})
    create_ready_nodes(connect(local_cluster.kubeconfig), [node], 0.0)
    pod = builders.pod(
        "env-half", annotations={"gpu-fraction": "0.5"}, labels={"kai.scheduler/queue": "env-q"}
    )
    pod["spec"]["nodeSelector"] = {"pool": "env"}
    assert "created" in apply_file(
        local_cluster, [builders.queue("env-q"), pod], tmp_path / "p.yaml"
    )
    stored = api.get(BY_KIND["Pod"], "env-half", "default") or {}
    name = stored["metadata"]["annotations"]["pykai.io/gpu-config"]
    assert stored["spec"]["containers"][0]["envFrom"] == [{"configMapRef": {"name": name}}]
    with pykai_running(local_cluster, "--components=podgrouper,scheduler,binder"):
        assert wait_for(lambda: api.get(BY_KIND["ConfigMap"], name, "default") is not None)
        data = (api.get(BY_KIND["ConfigMap"], name, "default") or {})["data"]
        assert data["GPU_PORTION"] == "0.50" and data["NVIDIA_VISIBLE_DEVICES"]
        assert wait_for(
            lambda: (api.get(BY_KIND["Pod"], "env-half", "default") or {})["spec"].get("nodeName")
        )
        bound = api.get(BY_KIND["Pod"], "env-half", "default") or {}
        assert data["NVIDIA_VISIBLE_DEVICES"] == bound["metadata"]["labels"]["runai-gpu-group"]


def test_tls_from_a_secret(local_cluster: LocalCluster, tmp_path: Path) -> None:
    tls = generate_tls(["127.0.0.1"])
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "kubernetes.io/tls",
        "metadata": {"name": "pykai-webhook-tls", "namespace": "default"},
        "data": {
            key: base64.b64encode(value).decode()
            for key, value in (("tls.crt", tls.cert), ("tls.key", tls.key), ("ca.crt", tls.ca))
        },
    }
    api = connect(local_cluster.kubeconfig)
    api.delete(BY_KIND["Secret"], "pykai-webhook-tls", "default")
    api.create(BY_KIND["Secret"], secret)
    with webhook_running(local_cluster, "--tls-secret=default/pykai-webhook-tls") as address:
        served = httpx.get(f"https://{address}/healthz", verify=False)
        assert served.status_code == 200
        out = apply_file(local_cluster, [BAD_QUEUE], tmp_path / "bad.yaml")
        assert "denied the request" in out  # the apiserver trusted the Secret's CA


def test_a_missing_secret_is_a_clear_error(local_cluster: LocalCluster) -> None:
    result = pykai_cli(
        "webhook", f"--kubeconfig={local_cluster.kubeconfig}", "--tls-secret=default/nope"
    )
    assert result.returncode != 0
    assert "Secret default/nope does not exist" in result.stderr
