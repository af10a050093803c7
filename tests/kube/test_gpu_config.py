"""The GPU env ConfigMap of a shared-GPU pod. The admission webhook always names it, also
for a pod that came with a name (copied from another pod). On a real apiserver, the binder
only ever creates it: someone else's ConfigMap under the pod's name is left as it was (the
bind fails with a Warning event and the reason on the BindRequest); a binder killed after any
of its writes is replaced by a fresh one that finishes the bind with the right values; a
ConfigMap made for an earlier placement is not rewritten."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest

from pykai.controllers.faults import Isolation
from pykai.engine.decisions import Bind
from pykai.kube.api import KubeApi, connect
from pykai.kube.binder import Binder
from pykai.kube.binding import bind_request
from pykai.kube.events import EventRecorder
from pykai.kube.gpu_env import CONFIG_ANNOTATION, WRITTEN_ANNOTATION, env_patch
from pykai.kube.localcluster import LocalCluster
from pykai.kube.nodes import create_ready_nodes
from pykai.model import builders
from pykai.model.kinds import BY_KIND
from pykai.model.meta import Obj
from pykai.model.problems import ObjectProblem
from tests.kube.conftest import pykai_running, wait_for

NAMESPACE = "gpu-env"
NODE = "gpu-env-node"


def test_a_pod_that_comes_with_a_config_map_name_gets_a_fresh_one() -> None:
    """A pod copied from a bound one carries its annotation and envFrom: both are renewed,
    so the binder never reaches for the other pod's ConfigMap (nor waits on a deleted one)."""
    copied = builders.pod(
        "copy", annotations={"gpu-fraction": "0.5", CONFIG_ANNOTATION: "pykai-gpu-original"}
    )
    copied["spec"]["containers"][0]["envFrom"] = [
        {"secretRef": {"name": "credentials"}},
        {"configMapRef": {"name": "pykai-gpu-original"}},
    ]
    ops = env_patch(copied)
    name = next(
        o["value"] for o in ops if o["path"] == "/metadata/annotations/pykai.io~1gpu-config"
    )
    assert name.startswith("pykai-gpu-") and name != "pykai-gpu-original"
    envfrom = [o for o in ops if "/envFrom" in o["path"]]
    assert envfrom == [
        {
            "op": "replace",
            "path": "/spec/containers/0/envFrom/1",
            "value": {"configMapRef": {"name": name}},
        }
    ]
    by_hand = builders.pod("hand", annotations={"gpu-fraction": "0.5", CONFIG_ANNOTATION: "x"})
    ops = env_patch(by_hand)  # a name set by hand, no envFrom: a fresh name and its envFrom
    fresh = next(o["value"] for o in ops if o["path"].endswith("gpu-config"))
    assert fresh != "x"
    assert {
        "op": "add",
        "path": "/spec/containers/0/envFrom",
        "value": [{"configMapRef": {"name": fresh}}],
    } in ops


class Crash(BaseException):
    """The binder's process dies (nothing in the binder catches this)."""


class CrashingApi(KubeApi):
    """The apiserver client of a binder killed right after its ``writes``-th write went
    through: that write is its last."""

    def __init__(self, api: KubeApi, writes: int) -> None:
        super().__init__(api.http, api.credentials)
        self.left = writes

    @property
    def crashed(self) -> bool:
        return self.left <= 0

    def _wrote(self) -> None:
        self.left -= 1
        if self.crashed:
            raise Crash

    def create(self, kind, obj):  # type: ignore[no-untyped-def]
        created = super().create(kind, obj)
        self._wrote()
        return created

    def patch(self, kind, name, patch, namespace="", sub=""):  # type: ignore[no-untyped-def]
        patched = super().patch(kind, name, patch, namespace, sub)
        self._wrote()
        return patched

    def bind(self, namespace: str, name: str, node: str, uid: str = "") -> None:
        super().bind(namespace, name, node, uid)
        self._wrote()


@pytest.fixture
def api(local_cluster: LocalCluster) -> Iterator[KubeApi]:
    """The admin's client; the test's pods are gone afterwards (no scheduler of a later test
    sees them)."""
    admin = connect(local_cluster.kubeconfig)
    admin.create_if_absent(BY_KIND["Namespace"], {"metadata": {"name": NAMESPACE}})
    yield admin
    for pod in admin.list(BY_KIND["Pod"])[0]:
        if pod["metadata"]["namespace"] == NAMESPACE:
            admin.delete(BY_KIND["Pod"], pod["metadata"]["name"], NAMESPACE, 0)


def shared_pod(api: KubeApi, name: str, config: str) -> Obj:
    pod = builders.pod(
        name, namespace=NAMESPACE, annotations={"gpu-fraction": "0.5", CONFIG_ANNOTATION: config}
    )
    return api.create(BY_KIND["Pod"], pod)


def run_binder(admin: KubeApi, api: KubeApi, pod: Obj, groups: tuple[str, ...]) -> None:
    """One binder process on ``api``: it carries out the pod's BindRequest (made for
    ``groups`` on NODE if there is none) once, the groups being reserved already, then ends."""
    meta = pod["metadata"]
    request = admin.get(BY_KIND["BindRequest"], meta["name"], NAMESPACE)
    if request is None:
        decision = Bind(NAMESPACE, meta["name"], meta["uid"], NODE, groups, 0.5)
        request = admin.create(BY_KIND["BindRequest"], bind_request(decision))
    fresh = admin.get(BY_KIND["Pod"], meta["name"], NAMESPACE) or pod
    # the binder's pool ends first (its work done), then the events it recorded are written
    with ThreadPoolExecutor(2) as events, ThreadPoolExecutor(4) as pool:
        binder = Binder(api, pool, EventRecorder(admin, events))
        binder.reconcile(
            [request], {(NAMESPACE, meta["name"]): fresh}, set(groups), Isolation("binder", _fail)
        )


def _fail(_: Obj, problem: ObjectProblem) -> None:
    raise AssertionError(problem.message)


def config_data(api: KubeApi, name: str) -> dict[str, str]:
    return dict((api.get(BY_KIND["ConfigMap"], name, NAMESPACE) or {}).get("data") or {})


def request_status(api: KubeApi, name: str) -> Obj:
    return dict((api.get(BY_KIND["BindRequest"], name, NAMESPACE) or {}).get("status") or {})


def warnings_on(api: KubeApi, pod: str) -> list[str]:
    return [
        str(e.get("message"))
        for e in api.list(BY_KIND["Event"])[0]
        if e["metadata"]["namespace"] == NAMESPACE
        and e["involvedObject"]["name"] == pod
        and e.get("type") == "Warning"
    ]


def test_a_binder_killed_after_any_write_is_finished_by_the_next(api: KubeApi) -> None:
    crashes = 0
    for writes in range(1, 10):
        pod = shared_pod(api, f"crash-{writes}", f"crash-{writes}-env")
        crashing = CrashingApi(api, writes)
        run_binder(api, crashing, pod, ("g-crash",))
        if not crashing.crashed:
            break  # the bind took fewer writes: every crash point was covered
        crashes += 1
        run_binder(api, api, pod, ("g-crash",))  # the restarted binder
        bound = api.get(BY_KIND["Pod"], pod["metadata"]["name"], NAMESPACE) or {}
        assert bound["spec"].get("nodeName") == NODE, f"not bound after a crash at write {writes}"
        assert config_data(api, f"crash-{writes}-env") == {
            "GPU_PORTION": "0.50",
            "NVIDIA_VISIBLE_DEVICES": "g-crash",
        }
        assert request_status(api, pod["metadata"]["name"])["phase"] == "Succeeded"
        assert not warnings_on(api, pod["metadata"]["name"])
    assert crashes == 4  # after the pod's patch, the ConfigMap, the bind, the status


def test_a_config_map_of_an_earlier_placement_is_not_rewritten(api: KubeApi) -> None:
    pod = shared_pod(api, "moved", "moved-env")
    crashing = CrashingApi(api, 2)  # killed once the pod's patch and the ConfigMap were written
    run_binder(api, crashing, pod, ("g-first",))
    assert crashing.crashed
    assert config_data(api, "moved-env")["NVIDIA_VISIBLE_DEVICES"] == "g-first"
    # the scheduler gave up on that request and placed the pod on another GPU
    api.delete(BY_KIND["BindRequest"], "moved", NAMESPACE)
    run_binder(api, api, pod, ("g-second",))
    assert config_data(api, "moved-env")["NVIDIA_VISIBLE_DEVICES"] == "g-first"
    assert "earlier placement" in request_status(api, "moved")["reason"]
    assert not (api.get(BY_KIND["Pod"], "moved", NAMESPACE) or {})["spec"].get("nodeName")
    assert wait_for(lambda: any("earlier placement" in m for m in warnings_on(api, "moved")))


def test_someone_elses_config_map_is_never_written(
    local_cluster: LocalCluster, api: KubeApi
) -> None:
    """A pod whose gpu-config annotation names an existing ConfigMap (set by hand, no webhook
    to renew it): pykai's binder leaves that ConfigMap alone and says why the pod waits."""
    theirs = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "team-settings", "namespace": NAMESPACE},
        "data": {"DATABASE_URL": "postgres://db"},
    }
    before = api.create(BY_KIND["ConfigMap"], theirs)
    api.create_if_absent(BY_KIND["Queue"], builders.queue("env-taken"))
    node = builders.node("env-taken-node", gpus=1, labels={"pool": "env-taken"})
    create_ready_nodes(connect(local_cluster.kubeconfig), [node], 0.0)
    pod = builders.pod(
        "takes-theirs",
        namespace=NAMESPACE,
        labels={"kai.scheduler/queue": "env-taken"},
        annotations={"gpu-fraction": "0.5", CONFIG_ANNOTATION: "team-settings"},
    )
    pod["spec"]["nodeSelector"] = {"pool": "env-taken"}
    api.create(BY_KIND["Pod"], pod)
    with pykai_running(local_cluster, "--components=podgrouper,scheduler,binder"):
        assert wait_for(
            lambda: "team-settings" in str(request_status(api, "takes-theirs").get("reason")),
            timeout=60,
        )
        assert wait_for(
            lambda: any("not created by pykai" in m for m in warnings_on(api, "takes-theirs"))
        )
    after = api.get(BY_KIND["ConfigMap"], "team-settings", NAMESPACE) or {}
    assert after["data"] == {"DATABASE_URL": "postgres://db"}
    assert after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]
    stored = api.get(BY_KIND["Pod"], "takes-theirs", NAMESPACE) or {}
    assert not stored["spec"].get("nodeName")
    assert WRITTEN_ANNOTATION not in stored["metadata"]["annotations"]  # its record taken back
