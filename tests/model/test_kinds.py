"""The table of kinds against what a Kubernetes v1.34 apiserver serves."""

from __future__ import annotations

from pykai.model.kinds import BY_KIND, KIND_SPECS, REMOVED, provider

# `kubectl api-resources` on a v1.34.4 LocalCluster: the built-in kinds of the table, at the
# only version that apiserver serves them in
SERVED_BY_1_34 = {
    "CronJob": "batch/v1",
    "Job": "batch/v1",
    "PodDisruptionBudget": "policy/v1",
    "PriorityClass": "scheduling.k8s.io/v1",
    "Deployment": "apps/v1",
    "Lease": "coordination.k8s.io/v1",
    "Ingress": "networking.k8s.io/v1",
    "StorageClass": "storage.k8s.io/v1",
    "Endpoints": "v1",
}


def test_built_in_kinds_have_the_versions_1_34_serves_and_no_other() -> None:
    for kind, api_version in SERVED_BY_1_34.items():
        assert BY_KIND[kind].api_versions == (api_version,), kind


def test_removed_versions_are_known_kinds_in_versions_the_table_refuses() -> None:
    assert REMOVED[("CronJob", "batch/v1beta1")] == "v1.25"
    assert REMOVED[("PodDisruptionBudget", "policy/v1beta1")] == "v1.25"
    assert REMOVED[("PriorityClass", "scheduling.k8s.io/v1beta1")] == "v1.22"
    for kind, api_version in REMOVED:
        assert api_version not in BY_KIND[kind].api_versions


def test_every_custom_kind_says_what_to_install() -> None:
    for spec in KIND_SPECS:
        if "." in spec.group and not spec.group.endswith(".k8s.io"):
            assert "apiserver that serves" not in provider(spec), spec.kind
    assert "training operator" in provider(BY_KIND["PyTorchJob"])
    assert "KubeRay" in provider(BY_KIND["RayCluster"])
    assert "Kueue" in provider(BY_KIND["ClusterQueue"])
