"""A kind the apiserver does not serve (its CRD is not installed): the informer says so once, at
WARNING, naming the kind, its group/version and what to install, keeps asking quietly, and picks
the kind up once its CRD is installed. The local cluster has no Kubeflow, so PyTorchJob (which
the pod-grouper reads as an owner) is the missing kind; a stand-in CRD is installed mid-test and
removed after."""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Iterator

import httpx
import pytest

from pykai.kube.api import ApiError, KubeApi, connect
from pykai.kube.informer import Change, Informer
from pykai.kube.localcluster import LocalCluster
from pykai.model.kinds import BY_KIND
from pykai.model.meta import Obj
from tests.kube.conftest import pykai_running, wait_for

CRD_NAME = "pytorchjobs.kubeflow.org"
ANY_OBJECT = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
CRD: Obj = {  # schema-less: the informer only needs the kind served
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": CRD_NAME},
    "spec": {
        "group": "kubeflow.org",
        "names": {"kind": "PyTorchJob", "plural": "pytorchjobs", "singular": "pytorchjob"},
        "scope": "Namespaced",
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "schema": {"openAPIV3Schema": ANY_OBJECT},
            }
        ],
    },
}
WARNED = "the apiserver serves no PyTorchJob (kubeflow.org/v1, 404 on pytorchjobs)"
SERVED = "PyTorchJob (kubeflow.org/v1) is served now"


def job(name: str) -> Obj:
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"pytorchReplicaSpecs": {}},
    }


@pytest.fixture
def without_kubeflow(local_cluster: LocalCluster) -> Iterator[KubeApi]:
    """The shared cluster without the PyTorchJob CRD, before and after the test."""
    api = connect(local_cluster.kubeconfig)
    crds = BY_KIND["CustomResourceDefinition"]
    assert api.get(crds, CRD_NAME) is None, "the local cluster is meant to have no Kubeflow"
    try:
        yield api
    finally:
        api.delete(crds, CRD_NAME)
        assert wait_for(lambda: api.get(crds, CRD_NAME) is None, 60)


def install_crd(api: KubeApi) -> None:
    """Create the CRD and wait until the apiserver serves its kind."""
    api.create(BY_KIND["CustomResourceDefinition"], CRD)

    def served() -> bool:
        try:
            api.list(BY_KIND["PyTorchJob"])
        except ApiError:  # 404 until the CRD is established
            return False
        return True

    assert wait_for(served, 60)


def test_the_informer_says_once_and_picks_the_kind_up_once_installed(
    without_kubeflow: KubeApi, caplog: pytest.LogCaptureFixture
) -> None:
    api = without_kubeflow
    kind = BY_KIND["PyTorchJob"]
    answers: list[int] = []  # the status of each list the informer asked for

    def seen(response: httpx.Response) -> None:
        url = response.request.url
        if url.path == api.path(kind) and "watch" not in url.params:
            answers.append(response.status_code)

    api.http.event_hooks["response"].append(seen)
    caplog.set_level(logging.INFO, logger="pykai.informer")
    changes: queue.Queue[Change] = queue.Queue()
    stop = threading.Event()
    informer = Informer(api, kind, changes, stop)
    informer.start()
    names: set[str] = set()

    def arrived(name: str) -> bool:
        while not changes.empty():
            change = changes.get()
            for obj in (*change.objects, *([change.obj] if change.obj else [])):
                names.add(obj["metadata"]["name"])
        return name in names

    try:
        assert wait_for(lambda: answers.count(404) >= 4, 60), answers  # asked again and again
        warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
        assert len(warnings) == 1, warnings  # said once
        assert WARNED in warnings[0] and "Kubeflow's training operator" in warnings[0]

        install_crd(api)
        api.create(kind, job("late-arrival"))
        assert wait_for(lambda: arrived("late-arrival"), 60), answers  # picked up
    finally:
        stop.set()
        informer.join(10)
    messages = [r.getMessage() for r in caplog.records]
    assert sum(WARNED in m for m in messages) == 1
    assert any(SERVED in m for m in messages), messages


def test_pykai_run_says_once_which_kind_is_missing_and_what_to_install(
    local_cluster: LocalCluster, without_kubeflow: KubeApi
) -> None:
    api = without_kubeflow
    with pykai_running(local_cluster, "--components=podgrouper") as process:
        assert wait_for(lambda: WARNED in process.logged(), 60), process.logged()[-3000:]
        assert process.wait_cycles(10)  # seconds of asking again meanwhile
        lines = [line for line in process.logged().splitlines() if WARNED in line]
        assert len(lines) == 1, lines
        assert " WARNING pykai.informer " in lines[0] and "Kubeflow's training operator" in lines[0]

        install_crd(api)
        api.create(BY_KIND["PyTorchJob"], job("run-late-arrival"))
        assert wait_for(lambda: SERVED in process.logged(), 60), process.logged()[-3000:]
        assert sum(WARNED in line for line in process.logged().splitlines()) == 1
