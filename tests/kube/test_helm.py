"""The Helm chart (deploy/helm/pykai) under the real Helm (v3.22, built by scripts/peers).

``helm lint --strict``; ``helm template``: every part, object names prefixed with the release
and Helm's usual labels, values checked by values.schema.json (an unknown key fails the render,
as does removing with ``--set KEY=null`` a value the chart cannot do without), numbers, lists
and nulls from ``--set`` as Helm reads them, KAI's value names where pykai has the setting,
every object accepted by the apiserver's dry run, the same built-ins as the code, webhook rules
naming what Kubernetes 1.34 serves, probes, disruption budgets, the metrics Service and
NetworkPolicies; RBAC that is enough (each component runs with the chart's own arguments under
its own service account, a pod is scheduled and the probes answer) and no more. Then ``helm
install``, ``helm upgrade`` and ``helm uninstall`` into a control plane of their own: what
install made, the webhooks' namespaces, a second release beside the first, what an upgrade
changes and the webhook certificate it keeps (``lookup``), and what uninstall leaves: the CRDs
(Helm's rule)."""

from __future__ import annotations

import base64
import json
import os
import subprocess
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import httpx
import pytest
import yaml

from pykai.engine.config import config_from_documents
from pykai.engine.settings import SchedulerConfig
from pykai.kube import peers
from pykai.kube.api import connect
from pykai.kube.localcluster import KUEUE_CRDS, LocalCluster, free_port
from pykai.kube.nodes import create_ready_nodes
from pykai.kube.webhook import configuration, mutation
from pykai.model import builders
from pykai.model.crds import CUSTOM_RESOURCES
from pykai.model.kinds import BY_KIND
from pykai.model.meta import Obj
from pykai.model.priorityclass import builtin_priority_classes
from pykai.model.queue import default_queues
from tests.kube.conftest import (
    ROOT,
    account_kubeconfig,
    allowed,
    fresh_cluster,
    get_json,
    kubectl,
    pykai_running,
    wait_for,
)

CHART = ROOT / "deploy/helm/pykai"
CHART_VERSION = yaml.safe_load((CHART / "Chart.yaml").read_text())["version"]
RELEASE = "pykai"
NAMESPACE = "pykai-system"
COMPONENTS = {
    "scheduler": "scheduler",
    "binder": "binder",
    "podgrouper": "podgrouper",
    "controllers": "queuecontroller,podgroupcontroller",
}
FIXED_NAMES = {"PriorityClass", "Queue", "CustomResourceDefinition"}
"""Cluster-scoped kinds whose names KAI's API fixes (pods name the priority classes, queues
are named by their users): a second release turns them off (priorityClasses.create,
defaultQueues.create; the CRDs Helm installs once)."""


def helm(*args: str, kubeconfig: Path | None = None) -> subprocess.CompletedProcess[str]:
    """The real helm (scripts/peers), its cache, configuration and data in the checkout's
    .pykai/helm (never the user's), against ``kubeconfig`` if given."""
    home = ROOT / ".pykai/helm"
    env = {k: v for k, v in os.environ.items() if not k.startswith("HELM_") and k != "KUBECONFIG"}
    env |= {
        "HELM_CACHE_HOME": str(home / "cache"),
        "HELM_CONFIG_HOME": str(home / "config"),
        "HELM_DATA_HOME": str(home / "data"),
    }
    where = [f"--kubeconfig={kubeconfig}"] if kubeconfig else []
    return subprocess.run(
        [str(peers.binary("helm")), *args, *where],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
        env=env,
    )


def helm_template(*args: str, release: str = RELEASE, namespace: str = NAMESPACE) -> str:
    result = helm("template", release, str(CHART), "--namespace", namespace, *args)
    assert result.returncode == 0, result.stderr
    return result.stdout


def render(*args: str, release: str = RELEASE, namespace: str = NAMESPACE) -> list[Obj]:
    """``helm template --include-crds``'s objects."""
    text = helm_template("--include-crds", *args, release=release, namespace=namespace)
    return [doc for doc in yaml.safe_load_all(text) if doc]


def refusal(*args: str) -> str:
    """What helm says when it refuses the values (it must)."""
    result = helm("template", RELEASE, str(CHART), "--namespace", NAMESPACE, *args)
    assert result.returncode != 0, "rendered values that should have been refused"
    return result.stderr


def with_values(tmp_path: Path, values: Obj) -> list[str]:
    path = tmp_path / f"values-{len(list(tmp_path.glob('values-*')))}.yaml"
    path.write_text(yaml.safe_dump(values))
    return ["--values", str(path)]


def container(objects: list[Obj], deployment: str) -> Obj:
    spec: Obj = of_kind(objects, "Deployment")[deployment]["spec"]["template"]["spec"]
    return spec


def scheduler_config(
    objects: list[Obj], configmap: str = "pykai-scheduler-config"
) -> SchedulerConfig:
    """The configuration pykai run reads from the chart's ConfigMap."""
    text = of_kind(objects, "ConfigMap")[configmap]["data"]["config.yaml"]
    return config_from_documents([d for d in yaml.safe_load_all(text) if d], "config.yaml")


def of_kind(objects: list[Obj], kind: str) -> dict[str, Obj]:
    return {o["metadata"]["name"]: o for o in objects if o["kind"] == kind}


@pytest.fixture(scope="module")
def rendered() -> list[Obj]:
    return render()


def test_lint(tmp_path: Path) -> None:
    """``helm lint --strict`` (a warning fails it): with pykai's values, with KAI's, and with
    the webhook off. The one remark left is Chart.yaml's missing icon (INFO: pykai has none)."""
    for args in ([], with_values(tmp_path, KAI_VALUES), ["--set", "webhook.enabled=false"]):
        result = helm("lint", str(CHART), "--strict", "--namespace", NAMESPACE, *args)
        assert result.returncode == 0, result.stdout + result.stderr
        assert "1 chart(s) linted, 0 chart(s) failed" in result.stdout
        remarks = [line for line in result.stdout.splitlines() if line.startswith("[")]
        assert remarks == ["[INFO] Chart.yaml: icon is recommended"], result.stdout


def test_kubernetes_versions() -> None:
    """The chart asks for Kubernetes 1.30 or later (its webhooks' matchConditions are GA
    there); helm refuses an older cluster before rendering anything."""
    for version in ("1.30.0", "1.34.4"):
        assert helm_template("--kube-version", version)
    result = helm("template", RELEASE, str(CHART), "--kube-version", "1.29.0")
    assert result.returncode != 0
    assert "chart requires kubeVersion: >=1.30.0-0" in result.stderr


def test_renders_every_part(rendered: list[Obj]) -> None:
    deployments = of_kind(rendered, "Deployment")
    assert set(deployments) == {f"pykai-{name}" for name in [*COMPONENTS, "webhook"]}
    for name, components in COMPONENTS.items():
        args = deployments[f"pykai-{name}"]["spec"]["template"]["spec"]["containers"][0]["args"]
        assert args[:2] == ["run", f"--components={components}"]
        assert "--leader-elect" in args and f"--lease-namespace={NAMESPACE}" in args
    kueue = {yaml.safe_load(p.read_text())["metadata"]["name"] for p in KUEUE_CRDS}
    assert len(kueue) == 8  # Kueue's kinds, stand-ins for clusters without Kueue
    assert set(of_kind(rendered, "CustomResourceDefinition")) == {
        *(r.name for r in CUSTOM_RESOURCES),
        *kueue,
    }
    assert set(of_kind(rendered, "ServiceAccount")) == {
        f"pykai-{name}" for name in [*COMPONENTS, "webhook"]
    }


def names(objects: list[Obj]) -> set[tuple[str, str, str]]:
    """(kind, namespace, name) of each object (namespace "" when cluster-scoped)."""
    return {(o["kind"], o["metadata"].get("namespace", ""), o["metadata"]["name"]) for o in objects}


def references(objects: list[Obj]) -> set[tuple[str, str, str]]:
    """What the objects name of one another: service accounts, ConfigMaps, Secrets (the
    webhook's flag and Role), Roles and ClusterRoles of bindings, the webhooks' Service."""
    wanted = set()
    for o in objects:
        namespace = o["metadata"].get("namespace", "")
        if o["kind"] == "Deployment":
            pod = o["spec"]["template"]["spec"]
            wanted.add(("ServiceAccount", namespace, pod["serviceAccountName"]))
            for volume in pod.get("volumes", []):
                if "configMap" in volume:
                    wanted.add(("ConfigMap", namespace, volume["configMap"]["name"]))
            for arg in pod["containers"][0]["args"]:
                if arg.startswith("--tls-secret="):
                    secret_namespace, _, secret = arg.partition("=")[2].partition("/")
                    wanted.add(("Secret", secret_namespace, secret))
        elif o["kind"] in ("RoleBinding", "ClusterRoleBinding"):
            ref = o["roleRef"]
            wanted.add((ref["kind"], namespace if ref["kind"] == "Role" else "", ref["name"]))
            for subject in o["subjects"]:
                wanted.add(("ServiceAccount", subject["namespace"], subject["name"]))
        elif o["kind"] == "Role":
            for rule in o["rules"]:
                for name in rule.get("resourceNames", []):
                    wanted.add(("Secret", namespace, name))
        elif o["kind"].endswith("WebhookConfiguration"):
            for hook in o["webhooks"]:
                service = hook["clientConfig"]["service"]
                wanted.add(("Service", service["namespace"], service["name"]))
    return wanted


def selected(objects: list[Obj], selector: dict[str, str], namespace: str) -> set[str]:
    """The Deployments of ``namespace`` whose pods ``selector`` (matchLabels) selects."""
    return {
        d["metadata"]["name"]
        for d in objects
        if d["kind"] == "Deployment"
        and d["metadata"]["namespace"] == namespace
        and selector.items() <= d["spec"]["template"]["metadata"]["labels"].items()
    }


def test_names_and_labels(rendered: list[Obj]) -> None:
    """Helm's usual labels on every object and pod; every name the release's (a release named
    pykai keeps pykai-scheduler, pykai-validation, ...; another is prefixed with its name, and a
    release name of Helm's maximum, 53 characters, still gives names of at most 63); what the
    objects name of one another is there, selectors select their own Deployment's pods; two
    releases in two namespaces share no cluster-scoped name but KAI's fixed ones."""
    labels = {"helm.sh/chart": f"pykai-{CHART_VERSION}", "app.kubernetes.io/managed-by": "Helm"}
    templated = [o for o in rendered if o["kind"] != "CustomResourceDefinition"]  # crds/: as is
    for o in templated:
        assert labels.items() <= o["metadata"]["labels"].items(), o["metadata"]["name"]
    for d in of_kind(rendered, "Deployment").values():
        assert labels.items() <= d["spec"]["template"]["metadata"]["labels"].items()
    assert {n for k, _, n in names(templated) if k not in FIXED_NAMES and k != "Namespace"} == {
        "pykai",
        "pykai-metrics",
        "pykai-scheduler-config",
        "pykai-validation",
        "pykai-mutation",
        "pykai-webhook-tls",
        "pykai-binder-reservations",
        *(f"pykai-{n}" for n in [*COMPONENTS, "webhook"]),
        *(f"pykai-{n}-lease" for n in COMPONENTS),
    }

    def consistent(objects: list[Obj], namespace: str) -> None:
        assert references(objects) <= names(objects)
        for d in of_kind(objects, "Deployment").values():
            assert selected(objects, d["spec"]["selector"]["matchLabels"], namespace) == {
                d["metadata"]["name"]
            }
        for pdb in of_kind(objects, "PodDisruptionBudget").values():
            chosen = selected(objects, pdb["spec"]["selector"]["matchLabels"], namespace)
            assert chosen == {pdb["metadata"]["name"]}
        service = of_kind(objects, "Service")
        webhook = next(n for n in service if n.endswith("-webhook"))
        assert selected(objects, service[webhook]["spec"]["selector"], namespace) == {webhook}

    consistent(rendered, NAMESPACE)
    second = "team-b"
    off = ["--set", "priorityClasses.create=false", "--set", "defaultQueues.create=false"]
    other = [
        o
        for o in render(*off, release=second, namespace=second)
        if o["kind"] != "CustomResourceDefinition"
    ]
    consistent(other, second)
    for o in other:
        name = o["metadata"]["name"]
        if o["kind"] not in FIXED_NAMES and name != "pykai-resv":  # the binder's: one per cluster
            assert name.startswith("team-b-pykai"), (o["kind"], name)
    cluster_scoped = {(k, n) for k, ns, n in names(templated) if not ns}
    other_cluster_scoped = {(k, n) for k, ns, n in names(other) if not ns}
    assert cluster_scoped & other_cluster_scoped == {("Namespace", "pykai-resv")}

    longest = "r" * 53
    long_objects = render(release=longest, namespace="long")
    consistent(long_objects, "long")
    long_names = [
        (o["kind"], o["metadata"].get("namespace", ""), o["metadata"]["name"])
        for o in long_objects
        if o["kind"] not in FIXED_NAMES
    ]
    assert max(len(name) for _, _, name in long_names) == 63
    assert len(set(long_names)) == len(long_names)
    named = render("--set", "fullnameOverride=kai", release="x")
    assert "kai-scheduler" in of_kind(named, "Deployment")


def test_values_reach_the_scheduler_configuration(rendered: list[Obj]) -> None:
    def placement(objects: list[Obj]) -> tuple[str, str]:
        config = scheduler_config(objects)
        return config.placement.gpu, config.placement.cpu

    assert placement(rendered) == ("binpack", "binpack")
    spread = render("--set", "schedulerConfig.placementStrategy.gpu=spread")
    assert placement(spread) == ("spread", "binpack")
    # every registered policy, with its typical pods (values.yaml and docs/placement.md offer them)
    fgd = render(
        "--set", "schedulerConfig.placementStrategy.gpu=fgd",
        "--set", "schedulerConfig.placementStrategy.typicalPods.window=200",
    )  # fmt: skip
    assert placement(fgd) == ("fgd", "binpack")
    assert scheduler_config(fgd).placement.typical_pods.window == 200
    assert "must be one of 'binpack', 'spread', 'random'" in refusal(
        "--set", "schedulerConfig.placementStrategy.gpu=tetris"
    )


def test_one_more_scheduler_per_shard(rendered: list[Obj], tmp_path: Path) -> None:
    """KAI's operator runs one scheduler per SchedulingShard; the chart does from ``shards``:
    a Deployment each, under the scheduler's account, reading its own configuration (the
    scheduler's, then the shard's fields); the default scheduler keeps the unlabelled
    partition."""
    values = {
        "shards": {
            "pool-a": {"partitionLabelValue": "a", "placementStrategy": {"gpu": "spread"}},
            "pool-b": {"partitionLabelValue": "b"},
        }
    }
    objects = render(*with_values(tmp_path, values))
    deployments = of_kind(objects, "Deployment")
    assert {"pykai-scheduler-pool-a", "pykai-scheduler-pool-b"} <= set(deployments)
    assert not any("pool" in name for name in of_kind(rendered, "Deployment"))
    for shard, value, gpu in (("pool-a", "a", "spread"), ("pool-b", "b", "binpack")):
        spec = container(objects, f"pykai-scheduler-{shard}")
        assert spec["serviceAccountName"] == "pykai-scheduler"
        assert "--components=scheduler" in spec["containers"][0]["args"]
        volume = spec["volumes"][0]["configMap"]["name"]
        assert volume == f"pykai-scheduler-config-{shard}"
        config = scheduler_config(objects, volume)
        assert (config.partition_label_value, config.placement.gpu) == (value, gpu)
    # the default scheduler is KAI's default shard: what carries no node-pool label
    assert (
        "--partition-label-value=" in container(objects, "pykai-scheduler")["containers"][0]["args"]
    )
    for deployment in ("pykai-binder", "pykai-podgrouper", "pykai-controllers"):
        args = container(objects, deployment)["containers"][0]["args"]
        assert not any(a.startswith("--partition") for a in args), (deployment, args)
    assert "pykai-scheduler-pool-a" not in of_kind(objects, "ServiceAccount")
    # a shard must name its partition (else it would schedule the default scheduler's)
    assert "partitionLabelValue" in refusal(
        *with_values(tmp_path, {"shards": {"pool-c": {"placementStrategy": {"gpu": "spread"}}}})
    )


def test_switches(rendered: list[Obj]) -> None:
    off = render("--set", "webhook.enabled=false", "--set", "priorityClasses.create=false")
    assert "pykai-webhook" not in of_kind(off, "Deployment")
    assert not of_kind(off, "ValidatingWebhookConfiguration") and not of_kind(off, "PriorityClass")
    assert not of_kind(off, "MutatingWebhookConfiguration")
    no_sharing = render("--set", "gpuSharing.enabled=false")
    args = of_kind(no_sharing, "Deployment")["pykai-webhook"]["spec"]["template"]["spec"]
    assert "--no-gpu-sharing" in args["containers"][0]["args"]
    assert "pykai-resv" not in of_kind(no_sharing, "Namespace")


def test_unknown_values_are_refused(tmp_path: Path) -> None:
    """values.schema.json, as helm checks it: a misspelt key, a KAI value pykai has no setting
    for, and a KAI value pykai has only at KAI's default, each fail the render, named (helm's
    words: "at '/binder': additional properties 'replicaz' not allowed"); KAI's defaults of
    the latter are accepted."""
    assert "at '': additional properties 'schedulr' not allowed" in refusal(
        "--set", "schedulr.replicas=3"
    )
    assert "at '/binder': additional properties 'replicaz' not allowed" in refusal(
        "--set", "binder.replicaz=3"
    )
    kai_only = refusal("--set", "operator.replicaCount=2", "--set", "scheduler.goMemLimit=6Gi")
    assert "additional properties 'operator' not allowed" in kai_only
    assert "at '/scheduler': additional properties 'goMemLimit' not allowed" in kai_only
    assert "at '/global/fipsMode': value must be 'off'" in refusal("--set", "global.fipsMode=on")
    assert "at '/scheduler/placementStrategy'" in refusal(
        "--set", "scheduler.placementStrategy=spreed"
    )
    flags = with_values(tmp_path, {"scheduler": {"args": {"v": "3"}}})  # no such flag in pykai
    assert "at '/scheduler/args': additional properties 'v' not allowed" in refusal(*flags)
    assert "at '/logFormat'" in refusal("--set", "logFormat=xml")
    defaults = {"global": {"fipsMode": "off", "clusterAutoscaling": False}, "openshift": False}
    defaults["prometheus"] = {"enabled": False}
    assert render(*with_values(tmp_path, defaults))


def test_numbers_lists_and_nulls_from_set() -> None:
    """``--set`` as Helm reads it: ``1`` is an integer (where the schema wants a string, helm
    refuses it; --set-string gives the string), ``{a,b}`` a list, ``null`` removes pykai's
    default. Numbers that pass
    through the chart's settings (``fromYaml``: Helm gives float64) are written as integers,
    never 1e+06. A value the chart cannot do without may not be removed."""
    more = render(
        "--set",
        "controllers.replicas=1",
        "--set",
        "binder.replicas=2",
        "--set",
        "scheduler.replicas=1000000",
        "--set",
        "scheduler.podDisruptionBudget.maxUnavailable=0",
        "--set",
        "binder.podDisruptionBudget.maxUnavailable=50%",
        "--set",
        "metrics.port=9100",
    )
    deployments = of_kind(more, "Deployment")
    one = deployments["pykai-controllers"]["spec"]["replicas"]
    assert one == 1 and one is not True
    assert deployments["pykai-binder"]["spec"]["replicas"] == 2
    assert deployments["pykai-scheduler"]["spec"]["replicas"] == 1000000
    budgets = {
        n: b["spec"]["maxUnavailable"] for n, b in of_kind(more, "PodDisruptionBudget").items()
    }
    assert budgets == {"pykai-scheduler": 0, "pykai-binder": "50%"}
    ports = container(more, "pykai-binder")["containers"][0]["ports"]
    assert ports == [{"name": "metrics", "containerPort": 9100, "protocol": "TCP"}]

    assert "at '/image/tag': got number, want string" in refusal("--set", "image.tag=2")
    tagged = container(render("--set-string", "image.tag=2"), "pykai-binder")
    assert tagged["containers"][0]["image"] == "ghcr.io/pykai/pykai:2"

    listed = render("--set", "schedulerConfig.actions={allocate,reclaim}")
    assert scheduler_config(listed).actions == ["allocate", "reclaim"]

    removed = render(
        "--set",
        "securityContext=null",
        "--set",
        "binder.resources=null",
        "--set",
        "scheduler.podDisruptionBudget=null",
        "--set",
        "webhook.tls=null",
    )
    binder = container(removed, "pykai-binder")["containers"][0]
    assert binder["securityContext"] == {} and binder["resources"] is None
    assert not of_kind(removed, "PodDisruptionBudget")
    assert of_kind(removed, "Secret")["pykai-webhook-tls"]["data"]["tls.crt"]  # generated
    assert "at '/image': missing property 'repository'" in refusal("--set", "image.repository=null")
    assert "at '/webhook': missing property 'port'" in refusal("--set", "webhook.port=null")


def test_the_schema_knows_every_scheduler_setting() -> None:
    schema = json.loads((CHART / "values.schema.json").read_text())
    known = set(schema["properties"]["schedulerConfig"]["properties"])
    assert known == {f.alias or name for name, f in SchedulerConfig.model_fields.items()}


KAI_VALUES: Obj = {  # KAI's value names (its chart's values.yaml), as a KAI user writes them
    "global": {
        "registry": "registry.example.com/mirror",
        "tag": "v9",
        "gpuSharing": False,
        "jsonLog": True,
        "nodeSelector": {"role": "control"},
        "securityContext": {"runAsUser": 1000},
        "priorityClassName": "system-cluster-critical",
        "leaderElection": True,
    },
    "scheduler": {
        "placementStrategy": "spread",
        "args": {"default-staleness-grace-period": "90s"},
        "actions": {"consolidation": {"enabled": False}},
        "ports": {"metricsPort": 9090},
    },
    "binder": {"resources": {"requests": {"cpu": "1"}}, "ports": {"metricsPort": 9091}},
    "podgrouper": {"enabled": False},
    "queuecontroller": {"enabled": False},
    "admission": {"ports": {"webhookPort": 9444}},
    "defaultPriorityClasses": {"enabled": False},
    "defaultQueue": {
        "parentName": "top",
        "childName": "team",
        "childResources": {"gpu": {"quota": 4, "limit": -1, "overQuotaWeight": 2}},
    },
}


def test_kai_value_names(local_cluster: LocalCluster, tmp_path: Path) -> None:
    """KAI's values where pykai has the setting (deploy/helm/pykai/README.md lists them); the
    objects they make are accepted by the apiserver."""
    objects = render(*with_values(tmp_path, KAI_VALUES))
    scheduler = container(objects, "pykai-scheduler")
    main = scheduler["containers"][0]
    assert main["image"] == "registry.example.com/mirror/pykai:v9"
    assert {"--log-format=json", "--metrics-address=0.0.0.0:9090"} <= set(main["args"])
    assert scheduler["nodeSelector"] == {"role": "control"}
    assert scheduler["priorityClassName"] == "system-cluster-critical"
    assert main["securityContext"]["runAsUser"] == 1000  # merged over pykai's
    assert main["securityContext"]["readOnlyRootFilesystem"] is True
    config = scheduler_config(objects)
    assert (config.placement.gpu, config.placement.cpu) == ("spread", "spread")
    assert "consolidation" not in config.actions and config.stale_gang_grace_period == 90
    controllers = container(objects, "pykai-controllers")["containers"][0]["args"]
    assert "--components=podgroupcontroller" in controllers
    binder = container(objects, "pykai-binder")["containers"][0]
    limits, requests = {"memory": "1Gi"}, {"cpu": "1", "memory": "256Mi"}  # merged, as helm does
    assert binder["resources"] == {"limits": limits, "requests": requests}
    assert "--metrics-address=0.0.0.0:9091" in binder["args"]
    assert "pykai-podgrouper" not in of_kind(objects, "Deployment")
    webhook = container(objects, "pykai-webhook")["containers"][0]["args"]
    assert {"--address=0.0.0.0:9444", "--no-gpu-sharing"} <= set(webhook)
    assert not of_kind(objects, "PriorityClass")
    queues = {name: q["spec"] for name, q in of_kind(objects, "Queue").items()}
    assert set(queues) == {"top", "team"} and queues["team"]["parentQueue"] == "top"
    unlimited = {"quota": 0, "limit": -1, "overQuotaWeight": 1}
    assert queues["team"]["resources"] == {
        "gpu": {"quota": 4, "limit": -1, "overQuotaWeight": 2},
        "cpu": unlimited,
        "memory": unlimited,
    }
    for namespace in (NAMESPACE, "pykai-resv"):
        kubectl(local_cluster, "create", "namespace", namespace, check=False)
    (tmp_path / "kai.yaml").write_text(yaml.safe_dump_all(objects))
    out = kubectl(local_cluster, "apply", "--dry-run=server", "-f", str(tmp_path / "kai.yaml"))
    assert out.count("(server dry run)") == len(objects)

    off = ["--set", "queuecontroller.enabled=false", "--set", "podgroupcontroller.enabled=false"]
    without = render(*off)
    assert "pykai-controllers" not in of_kind(without, "Deployment")
    assert "pykai-controllers" not in of_kind(without, "ServiceAccount")
    assert "pykai-controllers" not in of_kind(without, "ClusterRole")


def test_probes_disruption_budgets_and_the_metrics_service(
    rendered: list[Obj], tmp_path: Path
) -> None:
    service = of_kind(rendered, "Service")["pykai-metrics"]
    assert service["spec"]["ports"] == [
        {"name": "metrics", "port": 8080, "targetPort": "metrics", "protocol": "TCP"}
    ]
    deployments = of_kind(rendered, "Deployment")

    def selects(selector: dict[str, str], deployment: str) -> bool:
        labels = deployments[deployment]["spec"]["template"]["metadata"]["labels"]
        return bool(selector.items() <= labels.items())

    for name in COMPONENTS:
        main = container(rendered, f"pykai-{name}")["containers"][0]
        port = {p["name"]: p["containerPort"] for p in main["ports"]}["metrics"]
        assert f"--metrics-address=0.0.0.0:{port}" in main["args"]
        assert main["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "metrics"}
        assert main["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "metrics"}
        assert selects(service["spec"]["selector"], f"pykai-{name}")
    assert not selects(service["spec"]["selector"], "pykai-webhook")  # serves no /metrics
    webhook = container(rendered, "pykai-webhook")["containers"][0]
    assert webhook["livenessProbe"]["httpGet"]["path"] == "/healthz"

    budgets = of_kind(rendered, "PodDisruptionBudget")
    assert set(budgets) == {"pykai-scheduler"}  # the only component with two replicas
    assert budgets["pykai-scheduler"]["apiVersion"] == "policy/v1"  # v1beta1: gone since 1.25
    assert budgets["pykai-scheduler"]["spec"]["maxUnavailable"] == 1
    assert selects(budgets["pykai-scheduler"]["spec"]["selector"]["matchLabels"], "pykai-scheduler")
    more = render(
        "--set", "binder.replicas=2", "--set", "scheduler.podDisruptionBudget.enabled=false"
    )
    assert set(of_kind(more, "PodDisruptionBudget")) == {"pykai-binder"}

    assert not of_kind(rendered, "ServiceMonitor")
    monitoring = {"serviceMonitor": {"enabled": True, "labels": {"release": "prometheus"}}}
    monitored = render(*with_values(tmp_path, {"metrics": monitoring}))
    monitor = of_kind(monitored, "ServiceMonitor")["pykai"]
    assert monitor["metadata"]["labels"]["release"] == "prometheus"
    wanted = monitor["spec"]["selector"]["matchLabels"].items()
    assert wanted <= service["metadata"]["labels"].items()
    assert monitor["spec"]["endpoints"][0]["port"] == "metrics"
    assert monitor["spec"]["namespaceSelector"] == {"matchNames": [NAMESPACE]}


def test_the_webhook_has_a_writable_tmp_on_its_read_only_root(rendered: list[Obj]) -> None:
    """It loads its certificate from files in a temporary directory (kube/webhook.py)."""
    spec = container(rendered, "pykai-webhook")
    main = spec["containers"][0]
    assert main["securityContext"]["readOnlyRootFilesystem"] is True
    mounts = {m["mountPath"]: m["name"] for m in main["volumeMounts"]}
    volumes = {v["name"]: v for v in spec["volumes"]}
    assert volumes[mounts["/tmp"]]["emptyDir"]["medium"] == "Memory"


def test_same_built_ins_as_the_code(rendered: list[Obj]) -> None:
    classes = {n: o["value"] for n, o in of_kind(rendered, "PriorityClass").items()}
    assert classes == {o["metadata"]["name"]: o["value"] for o in builtin_priority_classes()}
    queues = {n: o["spec"] for n, o in of_kind(rendered, "Queue").items()}
    assert queues == {o["metadata"]["name"]: o["spec"] for o in default_queues()}
    hooks = of_kind(rendered, "ValidatingWebhookConfiguration")["pykai-validation"]["webhooks"]
    secret = of_kind(rendered, "Secret")["pykai-webhook-tls"]["data"]
    bundle = hooks[0]["clientConfig"]["caBundle"]
    assert base64.b64decode(secret["ca.crt"]) == base64.b64decode(bundle)


def rule_versions(objects: list[Obj]) -> set[tuple[str, str, str]]:
    """(group, version, resource) of every rule of the webhook configurations."""
    return {
        (group, version, resource)
        for kind in ("ValidatingWebhookConfiguration", "MutatingWebhookConfiguration")
        for configuration_ in of_kind(objects, kind).values()
        for hook in configuration_["webhooks"]
        for rule in hook["rules"]
        for group in rule["apiGroups"]
        for version in rule["apiVersions"]
        for resource in rule["resources"]
    }


def test_webhook_rules_name_what_kubernetes_serves(
    local_cluster: LocalCluster, rendered: list[Obj]
) -> None:
    """Each rule names a version the v1.34 apiserver serves its resource at (a rule for a
    version no longer served, such as batch/v1beta1 CronJobs, removed in 1.25, matches no
    request); groups the cluster does not serve at all (Kubeflow's, absent here) excepted."""
    groups = json.loads(kubectl(local_cluster, "get", "--raw", "/apis"))["groups"]
    served_groups = {g["name"] for g in groups} | {""}
    rules = rule_versions(rendered)
    assert ("batch", "v1", "cronjobs") in rules
    for group, version, resource in sorted(rules):
        if group not in served_groups:
            continue
        path = f"/api/{version}" if group == "" else f"/apis/{group}/{version}"
        found = kubectl(local_cluster, "get", "--raw", path, check=False)
        assert found.startswith("{"), f"{group}/{version} is not served: {found[:200]}"
        assert resource in {r["name"] for r in json.loads(found)["resources"]}, (group, version)


@pytest.mark.xfail(
    BY_KIND["CronJob"].versions != ("v1",),
    reason="pykai.model.kinds still gives CronJob batch/v1beta1 (so the code's webhook rule "
    "does); the chart says batch/v1, as Kubernetes 1.34 serves it, and the kinds table moves "
    "to batch/v1 on another branch",
    strict=True,
)
def test_same_webhook_rules_as_the_code(rendered: list[Obj]) -> None:
    chart = of_kind(rendered, "ValidatingWebhookConfiguration")["pykai-validation"]["webhooks"]
    code = configuration({})["webhooks"]
    fields: tuple[str, ...] = ("name", "rules", "failurePolicy", "sideEffects")
    fields += ("admissionReviewVersions",)
    assert [{f: w[f] for f in fields} for w in chart] == [{f: w[f] for f in fields} for w in code]
    mutating = of_kind(rendered, "MutatingWebhookConfiguration")["pykai-mutation"]["webhooks"]
    code_mutating = mutation({})["webhooks"]
    fields += ("reinvocationPolicy",)
    assert [{f: w[f] for f in fields} for w in mutating] == [
        {f: w[f] for f in fields} for w in code_mutating
    ]


def webhook_tls(objects: list[Obj]) -> tuple[Obj, str]:
    """The webhook's TLS Secret data and the checksum its pods were started with."""
    secret = of_kind(objects, "Secret")["pykai-webhook-tls"]["data"]
    pod = of_kind(objects, "Deployment")["pykai-webhook"]["spec"]["template"]["metadata"]
    return secret, pod["annotations"]["checksum/tls"]


def test_each_template_makes_a_new_webhook_certificate(rendered: list[Obj]) -> None:
    """Where ``lookup`` finds nothing (``helm template``), every render makes a new certificate
    and CA, and the webhook's pods roll onto them (the checksum on their template); ``helm
    upgrade`` keeps them (test_upgrade_changes_what_the_values_say_and_keeps_the_certificate)."""
    first, first_checksum = webhook_tls(rendered)
    second, second_checksum = webhook_tls(render())
    assert second["tls.crt"] != first["tls.crt"] and second["ca.crt"] != first["ca.crt"]
    assert second_checksum != first_checksum


def test_network_policies_let_in_only_the_webhook_and_metrics_ports(
    local_cluster: LocalCluster, rendered: list[Obj], tmp_path: Path
) -> None:
    policies = of_kind(rendered, "NetworkPolicy")
    assert set(policies) == {"pykai", "pykai-webhook", "pykai-metrics"}
    pods = {
        name: d["spec"]["template"]["metadata"]["labels"]
        for name, d in of_kind(rendered, "Deployment").items()
    }
    closed, webhook = policies["pykai"]["spec"], policies["pykai-webhook"]["spec"]
    assert closed["policyTypes"] == ["Ingress"] and not closed.get("ingress")

    def selected(policy: Obj) -> set[str]:
        wanted = policy["podSelector"]["matchLabels"].items()
        return {name for name, labels in pods.items() if wanted <= labels.items()}

    assert selected(closed) == set(pods)  # every pykai pod
    assert selected(webhook) == {"pykai-webhook"}
    port = container(rendered, "pykai-webhook")["containers"][0]["ports"][0]["containerPort"]
    assert webhook["ingress"] == [{"ports": [{"protocol": "TCP", "port": port}]}]
    metrics = policies["pykai-metrics"]["spec"]
    assert selected(metrics) == {f"pykai-{name}" for name in COMPONENTS}
    ports = {
        p["containerPort"]
        for name in COMPONENTS
        for p in container(rendered, f"pykai-{name}")["containers"][0]["ports"]
    }
    assert metrics["ingress"] == [{"ports": [{"protocol": "TCP", "port": p} for p in ports]}]

    values = tmp_path / "values.yaml"
    apiserver = [{"ipBlock": {"cidr": "10.0.0.10/32"}}]
    tools = [{"from": [{"namespaceSelector": {"matchLabels": {"name": "tools"}}}]}]
    prometheus = [{"namespaceSelector": {"matchLabels": {"name": "monitoring"}}}]
    values.write_text(
        yaml.safe_dump(
            {
                "networkPolicy": {
                    "webhookFrom": apiserver,
                    "extraIngress": tools,
                    "metricsFrom": prometheus,
                }
            }
        )
    )
    custom = of_kind(render("--values", str(values)), "NetworkPolicy")
    assert custom["pykai-webhook"]["spec"]["ingress"][0]["from"] == apiserver
    assert custom["pykai-metrics"]["spec"]["ingress"][0]["from"] == prometheus
    assert custom["pykai"]["spec"]["ingress"] == tools
    kubectl(local_cluster, "create", "namespace", NAMESPACE, check=False)
    (tmp_path / "policies.yaml").write_text(yaml.safe_dump_all(list(custom.values())))
    out = kubectl(local_cluster, "apply", "--dry-run=server", "-f", str(tmp_path / "policies.yaml"))
    assert out.count("(server dry run)") == 3
    assert not of_kind(render("--set", "networkPolicy.enabled=false"), "NetworkPolicy")
    no_webhook = render("--set", "webhook.enabled=false")
    assert set(of_kind(no_webhook, "NetworkPolicy")) == {"pykai", "pykai-metrics"}


def test_the_apiserver_accepts_every_object(
    local_cluster: LocalCluster, rendered: list[Obj], tmp_path: Path
) -> None:
    for namespace in (NAMESPACE, "pykai-resv"):  # a dry run creates no namespace
        kubectl(local_cluster, "create", "namespace", namespace, check=False)
    (tmp_path / "chart.yaml").write_text(yaml.safe_dump_all(rendered))
    out = kubectl(local_cluster, "apply", "--dry-run=server", "-f", str(tmp_path / "chart.yaml"))
    assert out.count("(server dry run)") == len(rendered)


# ---- RBAC, for real ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def rbac(local_cluster: LocalCluster, rendered: list[Obj]) -> Iterator[dict[str, Path]]:
    """The chart's service accounts and RBAC applied; a kubeconfig per component."""
    kubectl(local_cluster, "create", "namespace", NAMESPACE, check=False)
    kinds = {
        "ServiceAccount",
        "ClusterRole",
        "ClusterRoleBinding",
        "Role",
        "RoleBinding",
        "Namespace",
        "Secret",
    }
    objects = [o for o in rendered if o["kind"] in kinds]
    path = local_cluster.directory / "chart-rbac.yaml"
    path.write_text(yaml.safe_dump_all(objects))
    kubectl(local_cluster, "apply", "-f", str(path))
    # RBAC reaches the authorizer a moment after the apply; a component refused at start exits
    assert wait_for(lambda: can(local_cluster, "pykai-webhook", "list", "queues.scheduling.run.ai"))
    directory = local_cluster.directory
    configs = {
        name: account_kubeconfig(
            local_cluster, NAMESPACE, f"pykai-{name}", directory / f"kubeconfig-{name}"
        )
        for name in [*COMPONENTS, "webhook"]
    }
    yield configs
    kubectl(local_cluster, "delete", "-f", str(path), "--wait=false", check=False)


def can(cluster: LocalCluster, account: str, *args: str) -> bool:
    return allowed(cluster, NAMESPACE, account, *args)


def test_each_component_may_do_no_more_than_it_needs(
    local_cluster: LocalCluster, rbac: dict[str, Path]
) -> None:
    assert can(local_cluster, "pykai-scheduler", "create", "pods", "--subresource=binding")
    assert can(local_cluster, "pykai-scheduler", "delete", "pods")
    assert not can(local_cluster, "pykai-scheduler", "create", "pods")
    assert not can(local_cluster, "pykai-podgrouper", "delete", "pods")
    assert not can(local_cluster, "pykai-podgrouper", "create", "pods", "--subresource=binding")
    assert not can(local_cluster, "pykai-controllers", "create", "pods", "--subresource=binding")
    assert not can(local_cluster, "pykai-controllers", "patch", "queues.scheduling.run.ai")
    assert can(
        local_cluster,
        "pykai-controllers",
        "patch",
        "queues.scheduling.run.ai",
        "--subresource=status",
    )
    assert can(local_cluster, "pykai-binder", "create", "configmaps")  # the GPU env, no more
    for verb in ("get", "patch", "update", "delete"):
        assert not can(local_cluster, "pykai-binder", verb, "configmaps")
    assert can(local_cluster, "pykai-binder", "create", "pods", "-n", "pykai-resv")
    assert not can(local_cluster, "pykai-binder", "create", "pods", "-n", "default")
    assert not can(local_cluster, "pykai-webhook", "list", "secrets", "-n", NAMESPACE)
    assert can(local_cluster, "pykai-webhook", "get", "secrets/pykai-webhook-tls", "-n", NAMESPACE)
    assert not can(local_cluster, "pykai-webhook", "get", "secrets/other", "-n", NAMESPACE)
    for account in [f"pykai-{name}" for name in [*COMPONENTS, "webhook"]]:
        assert not can(local_cluster, account, "get", "secrets", "-n", "default")


def chart_arguments(rendered: list[Obj], name: str, directory: Path) -> tuple[list[str], int]:
    """A component's ``pykai run`` arguments as its Deployment gives them, with the ConfigMap's
    file in ``directory`` and a free loopback port to serve metrics on; that port."""
    args = container(rendered, f"pykai-{name}")["containers"][0]["args"]
    assert args[0] == "run"
    config = directory / "config.yaml"
    config.write_text(
        of_kind(rendered, "ConfigMap")["pykai-scheduler-config"]["data"]["config.yaml"]
    )
    port = free_port()
    local = {
        "--scheduler-config": f"--scheduler-config={config}",
        "--metrics-address": f"--metrics-address=127.0.0.1:{port}",
    }
    replaced = [local.get(arg.partition("=")[0], arg) for arg in args[1:]]
    assert len(set(replaced) - set(args)) == len(local)
    return replaced, port


def test_components_run_under_their_own_accounts(
    local_cluster: LocalCluster, rendered: list[Obj], rbac: dict[str, Path], tmp_path: Path
) -> None:
    """Enough, not only little: the four components, with the chart's arguments and each with
    its own token, schedule a whole-GPU pod and a shared-GPU pod (BindRequest, reservation pod)
    end to end, and answer their probes."""
    api = connect(local_cluster.kubeconfig)
    node = builders.node("helm-node", gpus=2, labels={"pool": "helm"})
    create_ready_nodes(connect(local_cluster.kubeconfig), [node], 0.0)
    api.create(BY_KIND["Queue"], builders.queue("helm-q"))
    for name, extra, gpus in (
        ("helm-whole", {}, 1),
        ("helm-half", {"gpu-fraction": "0.5"}, 0),
    ):
        pod = builders.pod(
            name, gpus=gpus, annotations=extra, labels={"kai.scheduler/queue": "helm-q"}
        )
        pod["spec"]["nodeSelector"] = {"pool": "helm"}
        api.create(BY_KIND["Pod"], pod)
    with ExitStack() as stack:
        ports = {}
        for name in COMPONENTS:
            args, ports[name] = chart_arguments(rendered, name, tmp_path)
            stack.enter_context(pykai_running(local_cluster, *args, kubeconfig=rbac[name]))

        def node_of(name: str) -> str:
            pod = api.get(BY_KIND["Pod"], name, "default") or {}
            return str((pod.get("spec") or {}).get("nodeName") or "")

        assert wait_for(
            lambda: node_of("helm-whole") == node_of("helm-half") == "helm-node", timeout=40
        )
        assert wait_for(
            lambda: "allocated" in ((api.get(BY_KIND["Queue"], "helm-q") or {}).get("status") or {})
        )
        reservations = [
            p for p in api.list(BY_KIND["Pod"])[0] if p["metadata"]["namespace"] == "pykai-resv"
        ]
        assert any(p["spec"]["nodeName"] == "helm-node" for p in reservations)
        for name, port in ports.items():
            main = container(rendered, f"pykai-{name}")["containers"][0]
            for probe in ("livenessProbe", "readinessProbe"):
                path = main[probe]["httpGet"]["path"]
                assert httpx.get(f"http://127.0.0.1:{port}{path}").status_code == 200


# ---- helm install, upgrade and uninstall, for real --------------------------------------------


@pytest.fixture(scope="module")
def helm_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    """A control plane of its own: a release's webhook configurations send every Queue write
    to a webhook that runs nowhere here, which must not reach the other tests' cluster."""
    with fresh_cluster(tmp_path_factory.mktemp("helm-cluster")) as cluster:
        yield cluster


def helm_on(cluster: LocalCluster, *args: str) -> subprocess.CompletedProcess[str]:
    return helm(*args, kubeconfig=cluster.kubeconfig)


def manifest(cluster: LocalCluster, release: str, namespace: str) -> list[Obj]:
    """The objects of the release's current revision (``helm get manifest``)."""
    result = helm_on(cluster, "get", "manifest", release, "--namespace", namespace)
    assert result.returncode == 0, result.stderr
    return [doc for doc in yaml.safe_load_all(result.stdout) if doc]


def live(cluster: LocalCluster, objects: list[Obj], path: Path) -> list[Obj]:
    """Those of ``objects`` the cluster has, as it has them."""
    path.write_text(yaml.safe_dump_all(objects))
    out = kubectl(cluster, "get", "-f", str(path), "--ignore-not-found", "-o", "json")
    if not out.strip():
        return []
    found: Obj = json.loads(out)
    items: list[Obj] = found["items"] if found.get("kind") == "List" else [found]
    return items


CHART_PRIORITY_CLASSES = ["build", "build-preemptible", "inference", "train"]


def test_install_refuses_objects_it_did_not_make(helm_cluster: LocalCluster) -> None:
    """The local cluster made KAI's priority classes itself, as a cluster with KAI has them:
    Helm refuses to take over objects another made, and installs nothing of the release."""
    result = helm_on(
        helm_cluster, "install", RELEASE, str(CHART), "--namespace", NAMESPACE, "--create-namespace"
    )
    assert result.returncode != 0
    assert "exists and cannot be imported into the current release" in result.stderr
    assert any(f'PriorityClass "{name}"' in result.stderr for name in CHART_PRIORITY_CLASSES)
    assert "release: not found" in helm_on(helm_cluster, "status", RELEASE, "-n", NAMESPACE).stderr
    out = kubectl(helm_cluster, "get", "deployments", "-A", "-o", "name")
    assert "pykai" not in out


@pytest.fixture(scope="module")
def installed(helm_cluster: LocalCluster) -> str:
    """Release pykai installed with pykai's values (``helm install``'s output), in a cluster
    without KAI's priority classes and default queues (the chart makes them) and without the
    SchedulingShard CRD (Helm installs it from the chart's crds/)."""
    kubectl(helm_cluster, "delete", "priorityclass", *CHART_PRIORITY_CLASSES)
    kubectl(helm_cluster, "delete", "queue", "default-queue")
    kubectl(helm_cluster, "delete", "queue", "default-parent-queue")
    kubectl(helm_cluster, "delete", "crd", "schedulingshards.kai.scheduler")
    result = helm_on(
        helm_cluster, "install", RELEASE, str(CHART), "--namespace", NAMESPACE, "--create-namespace"
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_install_makes_what_the_chart_renders(
    helm_cluster: LocalCluster, installed: str, rendered: list[Obj], tmp_path: Path
) -> None:
    """The release is what ``helm template`` renders but the CRDs (Helm installs crds/ apart,
    before the rest, and never as part of a release); every object is in the cluster with
    Helm's labels and ownership; the Deployments' pods are made, each under its own account;
    install prints the chart's NOTES."""
    assert "STATUS: deployed" in installed
    assert "pykai-scheduler: pykai run --components=scheduler (2 replica(s))" in installed
    assert "Requests in kube-system and pykai-system never go to it" in installed
    objects = manifest(helm_cluster, RELEASE, NAMESPACE)
    assert names(objects) == names([o for o in rendered if o["kind"] != "CustomResourceDefinition"])
    found = live(helm_cluster, objects, tmp_path / "release.yaml")
    assert names(found) == names(objects)
    for o in found:
        labels, annotations = o["metadata"]["labels"], o["metadata"]["annotations"]
        assert labels["helm.sh/chart"] == f"pykai-{CHART_VERSION}"
        assert labels["app.kubernetes.io/managed-by"] == "Helm"
        assert annotations["meta.helm.sh/release-name"] == RELEASE
        assert annotations["meta.helm.sh/release-namespace"] == NAMESPACE
    crds = {c["metadata"]["name"] for c in get_json(helm_cluster, "crds")["items"]}
    assert "schedulingshards.kai.scheduler" in crds

    deployments = {d["metadata"]["name"]: d for d in of_kind(found, "Deployment").values()}
    wanted = {name: d["spec"]["replicas"] for name, d in deployments.items()}
    assert wanted == {f"pykai-{n}": 2 if n == "scheduler" else 1 for n in [*COMPONENTS, "webhook"]}

    def pods() -> dict[str, str]:
        listed = get_json(helm_cluster, "pods", "-n", NAMESPACE)["items"]
        return {p["metadata"]["name"]: p["spec"]["serviceAccountName"] for p in listed}

    assert wait_for(lambda: len(pods()) == sum(wanted.values()), timeout=60), pods()
    for pod, account in pods().items():
        assert pod.startswith(f"{account}-")  # pykai-binder-<hash>-<id> runs as pykai-binder


def test_the_webhooks_skip_kube_system_and_the_release_namespace(
    helm_cluster: LocalCluster, installed: str, tmp_path: Path
) -> None:
    """No webhook runs here (no pod runs), so each call fails: the apiserver refuses what a
    fail-closed webhook should review (a job labelled with a Kueue queue; any Queue write),
    and lets through what the namespaceSelector skips (kube-system, the release's namespace)
    and what the Queue webhook's matchConditions skip: creating and deleting the queues that
    carry this release's Helm annotations (updating them is reviewed)."""
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "labelled", "labels": {"kueue.x-k8s.io/queue-name": "lq"}},
        "spec": {
            "template": {
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [{"name": "main", "image": "busybox"}],
                }
            }
        },
    }
    path = tmp_path / "job.yaml"
    path.write_text(yaml.safe_dump(job))

    def create(namespace: str) -> str:
        args = ("create", "--dry-run=server", "-n", namespace, "-f", str(path))
        return kubectl(helm_cluster, *args, check=False)

    assert 'failed calling webhook "kueue-jobs.pykai.io"' in create("default")
    for namespace in ("kube-system", NAMESPACE):
        assert "job.batch/labelled created (server dry run)" in create(namespace)

    queue = tmp_path / "queue.yaml"
    queue.write_text(yaml.safe_dump(builders.queue("users-queue")))
    made = kubectl(helm_cluster, "create", "--dry-run=server", "-f", str(queue), check=False)
    assert 'failed calling webhook "queues.pykai.io"' in made
    label = ["--type=merge", "-p", '{"metadata": {"labels": {"team": "a"}}}']
    updated = kubectl(
        helm_cluster, "patch", "queue", "default-queue", *label, "--dry-run=server", check=False
    )
    assert 'failed calling webhook "queues.pykai.io"' in updated
    deleted = kubectl(helm_cluster, "delete", "queue", "default-queue", "--dry-run=server")
    assert "deleted (server dry run)" in deleted


def test_a_second_release_beside_the_first(
    helm_cluster: LocalCluster, installed: str, tmp_path: Path
) -> None:
    """Another release in another namespace, without the objects whose names KAI fixes
    (priority classes, default queues): its cluster-scoped objects carry its own name, so both
    stand; the reservation namespace stays the first release's (the second only adds its Role
    there); uninstalling the second leaves the first whole."""
    second, namespace = "second", "team-b"
    off = ["--set", "priorityClasses.create=false", "--set", "defaultQueues.create=false"]
    result = helm_on(
        helm_cluster, "install", second, str(CHART), "-n", namespace, "--create-namespace", *off
    )
    assert result.returncode == 0, result.stderr
    objects = manifest(helm_cluster, second, namespace)
    assert not of_kind(objects, "Namespace")  # pykai-resv is the first release's

    def cluster_scoped(kind: str) -> set[str]:
        listed = get_json(helm_cluster, kind, "-l", "app.kubernetes.io/managed-by=Helm")
        return {o["metadata"]["name"] for o in listed["items"]}

    assert {"pykai-scheduler", "second-pykai-scheduler"} <= cluster_scoped("clusterroles")
    assert {"pykai-webhook", "second-pykai-webhook"} <= cluster_scoped("clusterrolebindings")
    assert cluster_scoped("validatingwebhookconfigurations") == {
        "pykai-validation",
        "second-pykai-validation",
    }
    assert cluster_scoped("mutatingwebhookconfigurations") == {
        "pykai-mutation",
        "second-pykai-mutation",
    }
    roles = {
        r["metadata"]["name"] for r in get_json(helm_cluster, "roles", "-n", "pykai-resv")["items"]
    }
    assert roles == {"pykai-binder-reservations", "second-pykai-binder-reservations"}

    first = manifest(helm_cluster, RELEASE, NAMESPACE)
    result = helm_on(helm_cluster, "uninstall", second, "-n", namespace)
    assert result.returncode == 0, result.stderr
    assert wait_for(lambda: not live(helm_cluster, objects, tmp_path / "second.yaml"), timeout=60)
    assert names(live(helm_cluster, first, tmp_path / "first.yaml")) == names(first)


def release_tls(cluster: LocalCluster) -> tuple[Obj, set[str], str]:
    """The webhook's Secret data, the caBundles of both configurations, and the checksum on the
    webhook's pod template, as the cluster has them."""
    secret = get_json(cluster, "secret", "pykai-webhook-tls", "-n", NAMESPACE)["data"]
    bundles = {
        hook["clientConfig"]["caBundle"]
        for kind, name in (
            ("validatingwebhookconfiguration", "pykai-validation"),
            ("mutatingwebhookconfiguration", "pykai-mutation"),
        )
        for hook in get_json(cluster, kind, name)["webhooks"]
    }
    webhook = get_json(cluster, "deployment", "pykai-webhook", "-n", NAMESPACE)
    return secret, bundles, webhook["spec"]["template"]["metadata"]["annotations"]["checksum/tls"]


def test_upgrade_changes_what_the_values_say_and_keeps_the_certificate(
    helm_cluster: LocalCluster, installed: str, tmp_path: Path
) -> None:
    """``helm upgrade`` to KAI's value names: what they say is what the cluster then has
    (placement in the scheduler's ConfigMap, the image, no pod-grouper, no priority classes,
    the queues renamed, GPU sharing off: no reservation namespace); the webhook's CA and
    certificate are the ones install made (``lookup`` reads the Secret back), so both
    configurations' caBundle still trusts what the webhook serves and its pods do not roll."""
    secret, bundles, checksum = release_tls(helm_cluster)
    assert bundles == {secret["ca.crt"]}
    result = helm_on(
        helm_cluster,
        "upgrade",
        RELEASE,
        str(CHART),
        "-n",
        NAMESPACE,
        *with_values(tmp_path, KAI_VALUES),
    )
    assert result.returncode == 0, result.stderr
    assert release_tls(helm_cluster) == (secret, bundles, checksum)

    config = get_json(helm_cluster, "configmap", "pykai-scheduler-config", "-n", NAMESPACE)
    placement = scheduler_config([config]).placement
    assert (placement.gpu, placement.cpu) == ("spread", "spread")
    deployments = {
        d["metadata"]["name"]: d["spec"]["template"]["spec"]["containers"][0]
        for d in get_json(helm_cluster, "deployments", "-n", NAMESPACE)["items"]
    }
    assert set(deployments) == {
        f"pykai-{n}" for n in ("scheduler", "binder", "controllers", "webhook")
    }
    assert deployments["pykai-scheduler"]["image"] == "registry.example.com/mirror/pykai:v9"
    assert "--components=podgroupcontroller" in deployments["pykai-controllers"]["args"]
    assert {"--no-gpu-sharing", "--address=0.0.0.0:9444"} <= set(
        deployments["pykai-webhook"]["args"]
    )
    for kind in ("serviceaccount", "clusterrole", "clusterrolebinding"):
        gone = kubectl(helm_cluster, "get", kind, "pykai-podgrouper", "-n", NAMESPACE, check=False)
        assert "NotFound" in gone, (kind, gone)
    assert not get_json(helm_cluster, "priorityclasses", "-l", "app.kubernetes.io/managed-by=Helm")[
        "items"
    ]
    queues = {q["metadata"]["name"]: q["spec"] for q in get_json(helm_cluster, "queues")["items"]}
    assert set(queues) == {"top", "team"} and queues["team"]["parentQueue"] == "top"
    assert queues["team"]["resources"]["gpu"] == {"quota": 4, "limit": -1, "overQuotaWeight": 2}
    assert wait_for(
        lambda: "NotFound" in kubectl(helm_cluster, "get", "namespace", "pykai-resv", check=False),
        timeout=60,
    )
    history = json.loads(
        helm_on(helm_cluster, "history", RELEASE, "-n", NAMESPACE, "-o", "json").stdout
    )
    assert [(h["revision"], h["status"]) for h in history] == [(1, "superseded"), (2, "deployed")]


def test_uninstall_removes_everything_but_the_crds(
    helm_cluster: LocalCluster, installed: str, tmp_path: Path
) -> None:
    """``helm uninstall``: every object of the release goes (its default queues too, though
    their webhook's Service goes first), the CRDs stay (Helm never deletes crds/, including the
    one it installed), as does the namespace ``--create-namespace`` made; no release is left."""
    objects = manifest(helm_cluster, RELEASE, NAMESPACE)
    result = helm_on(helm_cluster, "uninstall", RELEASE, "-n", NAMESPACE)
    assert result.returncode == 0, result.stderr
    assert f'release "{RELEASE}" uninstalled' in result.stdout
    path = tmp_path / "release.yaml"
    assert wait_for(lambda: not live(helm_cluster, objects, path), timeout=60), names(
        live(helm_cluster, objects, path)
    )
    crds = {c["metadata"]["name"] for c in get_json(helm_cluster, "crds")["items"]}
    chart_crds = {
        c["metadata"]["name"] for c in render() if c["kind"] == "CustomResourceDefinition"
    }
    assert chart_crds <= crds and "schedulingshards.kai.scheduler" in crds
    assert get_json(helm_cluster, "namespace", NAMESPACE)["status"]["phase"] == "Active"
    assert json.loads(helm_on(helm_cluster, "list", "-A", "-o", "json").stdout) == []
    stored = get_json(helm_cluster, "secrets", "-n", NAMESPACE, "-l", "owner=helm")["items"]
    assert not stored  # Helm's record of the release
