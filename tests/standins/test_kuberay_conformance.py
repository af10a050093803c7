"""The KubeRay emulator against the real operator: each case of kuberay_conformance.py applied to
an embedded cluster, normalised as the record was, and compared with what the real KubeRay
operator made of the same manifests (tests/data/kuberay/, recorded by
scripts/record-kuberay-pods; where the embedded cluster departs from it on purpose,
``expected_on_embedded`` says how and why)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from pykai.embedded.cluster import EmbeddedCluster
from pykai.kube import peers
from pykai.model import builders
from pykai.model.meta import Obj
from tests.standins.kuberay_conformance import (
    CASES,
    COLLECTED,
    KUBERAY_MODULE,
    NOT_EMULATED,
    RANDOM_ALPHABET,
    Case,
    Observed,
    differences,
    expected_on_embedded,
    observe,
    read_record,
    settled,
    suspended,
    suspended_object,
)

ROUNDS = 400  # rounds one step of a case may take (the virtual clock moves when nothing else does)
IDLE_STEP = 5.0  # seconds the clock moves when a round changed nothing (grace periods run out)
GENERATED = RANDOM_ALPHABET[:5]  # the suffix a generateName gets here (the API server's: random)


def _setup(case: Case) -> list[Obj]:
    """Room for every case: four large GPU nodes, KAI queues for the labels the manifests use
    (and the default one), and for Kueue's queue labels a LocalQueue with ample quota, so
    Kueue admits at once (the records were made without Kueue; the guides' own quotas are the
    guides' tests' business)."""
    objects: list[Obj] = [
        builders.node(f"node-{i}", gpus=8, cpu="64", memory="512Gi") for i in range(4)
    ]
    labels = [o["metadata"].get("labels") or {} for o in case.objects()]
    kai_queues = {
        "default-queue",
        *(q["kai.scheduler/queue"] for q in labels if "kai.scheduler/queue" in q),
    }
    objects += [builders.queue(name) for name in sorted(kai_queues)]
    local_queues = {
        q["kueue.x-k8s.io/queue-name"] for q in labels if "kueue.x-k8s.io/queue-name" in q
    }
    if local_queues:
        objects += [
            {
                "apiVersion": "kueue.x-k8s.io/v1beta1",
                "kind": "ResourceFlavor",
                "metadata": {"name": "default-flavor"},
            },
            {
                "apiVersion": "kueue.x-k8s.io/v1beta1",
                "kind": "ClusterQueue",
                "metadata": {"name": "conformance"},
                "spec": {
                    "namespaceSelector": {},
                    "resourceGroups": [
                        {
                            "coveredResources": ["cpu", "memory", "nvidia.com/gpu"],
                            "flavors": [
                                {
                                    "name": "default-flavor",
                                    "resources": [
                                        {"name": "cpu", "nominalQuota": 256},
                                        {"name": "memory", "nominalQuota": "2Ti"},
                                        {"name": "nvidia.com/gpu", "nominalQuota": 32},
                                    ],
                                }
                            ],
                        }
                    ],
                },
            },
        ]
        objects += [
            {
                "apiVersion": "kueue.x-k8s.io/v1beta1",
                "kind": "LocalQueue",
                "metadata": {"name": name, "namespace": case.namespace},
                "spec": {"clusterQueue": "conformance"},
            }
            for name in sorted(local_queues)
        ]
    return objects


def _named(objects: list[Obj]) -> list[Obj]:
    """The manifests' objects, those with a ``generateName`` given the name it would make."""
    for obj in objects:
        meta = obj["metadata"]
        if "generateName" in meta and "name" not in meta:
            meta["name"] = meta.pop("generateName") + GENERATED
    return objects


def _drive(
    cluster: EmbeddedCluster,
    done: Callable[[], bool],
    what: str,
    watched: Callable[[], Obj | None] = lambda: None,
) -> list[Obj]:
    """Rounds one at a time until ``done``; when a round changes nothing, the clock moves on.
    The versions ``watched`` gave after each round (as a watch would see them, but for
    versions made and replaced within one round)."""
    versions: list[Obj] = []
    for _ in range(ROUNDS):
        if done():
            return versions
        writes = cluster.writes
        cluster.schedule(1)
        if cluster.writes == writes:
            cluster.advance(IDLE_STEP, max_cycles=0)
        version = watched()
        if version is not None and (not versions or versions[-1] != version):
            versions.append(version)
    raise AssertionError(f"{what}: not within {ROUNDS} rounds")


def run_embedded(case: Case) -> Observed:
    """What the embedded cluster makes of the case, collected as the recorder collects."""
    cluster = EmbeddedCluster.open(None)
    cluster.apply(_setup(case))
    manifests = _named(case.objects())
    cluster.apply(manifests)

    def collect() -> list[Obj]:
        return [o for kind in COLLECTED for o in cluster.list(kind, case.namespace)]

    _drive(cluster, lambda: settled(case, collect()), f"{case.name}: settled")
    observed = Observed(settled=collect())
    if not case.suspend:
        return observed
    top = suspended_object(case, observed.settled)
    assert top is not None
    manifest = next(o for o in manifests if o["kind"] == top["kind"])

    def watched() -> Obj | None:
        return cluster.get(top["kind"], top["metadata"]["name"], case.namespace)

    for on, done in ((True, suspended), (False, settled)):
        cluster.apply([{**manifest, "spec": {**manifest["spec"], "suspend": on}}], max_cycles=0)
        first = watched()
        steps = _drive(
            cluster, lambda done=done: done(case, collect()), f"{case.name}: {on}", watched
        )  # type: ignore[misc]
        versions = [v for v in [first, *steps] if v is not None]
        if on:
            observed.suspending, observed.suspended = versions, collect()
        else:
            observed.resuming, observed.resumed = versions, collect()
    return observed


def test_the_records_are_of_the_pinned_kuberay() -> None:
    """A KubeRay upgrade in tools/peers without new records fails here too (and the live test
    fails on what changed): run scripts/record-kuberay-pods."""
    pinned = peers.version(KUBERAY_MODULE)
    for case in CASES:
        assert read_record(case)["kuberay"] == pinned, (
            f"{case.path}: run scripts/record-kuberay-pods"
        )


@pytest.mark.parametrize(
    "case", [c for c in CASES if c.name not in NOT_EMULATED], ids=lambda c: c.name
)
def test_the_emulator_makes_what_the_real_operator_made(case: Case) -> None:
    expected = expected_on_embedded(case, read_record(case))
    assert expected is not None
    found = observe(case, run_embedded(case))
    assert found == expected, "\n".join(differences(expected, found))


@pytest.mark.parametrize("case", [c for c in CASES if c.name in NOT_EMULATED], ids=lambda c: c.name)
def test_what_the_embedded_cluster_does_not_emulate_is_what_the_operator_does(case: Case) -> None:
    """The departure's premise, read from the record: under kai-scheduler the operator left the
    RayJob Initializing with no RayCluster and no pod (the embedded cluster runs it instead;
    its RayJob cases compare that with the operator without a batch scheduler)."""
    settled_record = read_record(case)["observed"]["settled"]
    assert settled_record["pods"] == []
    assert [o["kind"] for o in settled_record["objects"]] == ["RayJob"]
    assert settled_record["objects"][0]["status"]["jobDeploymentStatus"] == "Initializing"
