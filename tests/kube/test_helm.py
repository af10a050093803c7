"""The Helm chart (deploy/helm/pykai): rendered by scripts/helm-template (helm itself when
installed), values checked by values.schema.json (an unknown key fails the render), KAI's value
names where pykai has the setting, every object accepted by the real apiserver's dry-run, values
reaching the scheduler configuration, the same built-ins as the code, probes, disruption
budgets and the metrics Service, and RBAC that is enough — each component runs with the chart's
own arguments under its own service account, a pod is scheduled and the probes answer — and no
more."""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import httpx
import pytest
import yaml

from pykai.engine.config import SchedulerConfig, config_from_documents
from pykai.kube.api import KINDS, connect
from pykai.kube.localcluster import KUEUE_CRDS, LocalCluster, free_port
from pykai.kube.nodes import create_ready_nodes
from pykai.kube.webhook import configuration, mutation
from pykai.model import builders
from pykai.model.crds import CUSTOM_RESOURCES
from pykai.model.meta import Obj
from pykai.model.priorityclass import builtin_priority_classes
from pykai.model.queue import default_queues
from tests.kube.conftest import (
    ROOT,
    account_kubeconfig,
    allowed,
    kubectl,
    pykai_running,
    wait_for,
)

CHART = ROOT / "deploy/helm/pykai"
NAMESPACE = "pykai-system"
COMPONENTS = {
    "scheduler": "scheduler",
    "binder": "binder",
    "podgrouper": "podgrouper",
    "controllers": "queuecontroller,podgroupcontroller",
}

pytestmark = pytest.mark.skipif(
    shutil.which("helm") is None and shutil.which("go") is None,
    reason="neither helm nor Go (for scripts/helm-template) is installed",
)


def helm_template(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(ROOT / "scripts/helm-template"), str(CHART), "--namespace", NAMESPACE, *args],
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )


def render(*args: str) -> list[Obj]:
    result = helm_template(*args)
    assert result.returncode == 0, result.stderr
    return [doc for doc in yaml.safe_load_all(result.stdout) if doc]


def refusal(*args: str) -> str:
    """What the renderer says when it refuses the values (it must)."""
    result = helm_template(*args)
    assert result.returncode != 0, "rendered values that should have been refused"
    return result.stderr


def with_values(tmp_path: Path, values: Obj) -> list[str]:
    path = tmp_path / f"values-{len(list(tmp_path.glob('values-*')))}.yaml"
    path.write_text(yaml.safe_dump(values))
    return ["--values", str(path)]


def container(objects: list[Obj], deployment: str) -> Obj:
    spec: Obj = of_kind(objects, "Deployment")[deployment]["spec"]["template"]["spec"]
    return spec


def scheduler_config(objects: list[Obj]) -> SchedulerConfig:
    """The configuration pykai run reads from the chart's ConfigMap."""
    text = of_kind(objects, "ConfigMap")["pykai-scheduler-config"]["data"]["config.yaml"]
    return config_from_documents([d for d in yaml.safe_load_all(text) if d], "config.yaml")


def of_kind(objects: list[Obj], kind: str) -> dict[str, Obj]:
    return {o["metadata"]["name"]: o for o in objects if o["kind"] == kind}


@pytest.fixture(scope="module")
def rendered() -> list[Obj]:
    return render()


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


def test_values_reach_the_scheduler_configuration(rendered: list[Obj]) -> None:
    def placement(objects: list[Obj]) -> tuple[str, str]:
        config = scheduler_config(objects)
        return config.placement.gpu, config.placement.cpu

    assert placement(rendered) == ("binpack", "binpack")
    spread = render("--set", "schedulerConfig.placementStrategy.gpu=spread")
    assert placement(spread) == ("spread", "binpack")


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
    """values.schema.json (checked by helm and by the stand-in): a misspelt key, a KAI value
    pykai has no setting for, and a KAI value pykai has only at KAI's default, each fail the
    render, named; KAI's defaults of the latter are accepted."""
    assert "Additional property schedulr is not allowed" in refusal("--set", "schedulr.replicas=3")
    assert "Additional property replicaz is not allowed" in refusal("--set", "binder.replicaz=3")
    kai_only = refusal("--set", "operator.replicaCount=2", "--set", "scheduler.goMemLimit=6Gi")
    assert "property operator is not" in kai_only and "property goMemLimit is not" in kai_only
    assert "global.fipsMode" in refusal("--set", "global.fipsMode=on")
    assert "scheduler.placementStrategy" in refusal("--set", "scheduler.placementStrategy=spreed")
    flags = with_values(tmp_path, {"scheduler": {"args": {"v": "3"}}})  # no such flag in pykai
    assert "Additional property v is not allowed" in refusal(*flags)
    assert "logFormat" in refusal("--set", "logFormat=xml")
    defaults = {"global": {"fipsMode": "off", "clusterAutoscaling": False}, "openshift": False}
    defaults["prometheus"] = {"enabled": False}
    assert render(*with_values(tmp_path, defaults))


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


def test_same_built_ins_and_webhook_rules_as_the_code(rendered: list[Obj]) -> None:
    classes = {n: o["value"] for n, o in of_kind(rendered, "PriorityClass").items()}
    assert classes == {o["metadata"]["name"]: o["value"] for o in builtin_priority_classes()}
    queues = {n: o["spec"] for n, o in of_kind(rendered, "Queue").items()}
    assert queues == {o["metadata"]["name"]: o["spec"] for o in default_queues()}
    chart = of_kind(rendered, "ValidatingWebhookConfiguration")["pykai-validation"]["webhooks"]
    code = configuration({})["webhooks"]
    fields = ("name", "rules", "failurePolicy", "sideEffects", "admissionReviewVersions")
    assert [{f: w[f] for f in fields} for w in chart] == [{f: w[f] for f in fields} for w in code]
    mutating = of_kind(rendered, "MutatingWebhookConfiguration")["pykai-mutation"]["webhooks"]
    code_mutating = mutation({})["webhooks"]
    fields += ("reinvocationPolicy",)
    assert [{f: w[f] for f in fields} for w in mutating] == [
        {f: w[f] for f in fields} for w in code_mutating
    ]
    secret = of_kind(rendered, "Secret")["pykai-webhook-tls"]["data"]
    bundle = chart[0]["clientConfig"]["caBundle"]
    assert base64.b64decode(secret["ca.crt"]) == base64.b64decode(bundle)


def webhook_tls(objects: list[Obj]) -> tuple[Obj, str]:
    """The webhook's TLS Secret data and the checksum its pods were started with."""
    secret = of_kind(objects, "Secret")["pykai-webhook-tls"]["data"]
    pod = of_kind(objects, "Deployment")["pykai-webhook"]["spec"]["template"]["metadata"]
    return secret, pod["annotations"]["checksum/tls"]


def test_the_webhook_never_serves_a_certificate_the_apiserver_does_not_trust(
    rendered: list[Obj], tmp_path: Path
) -> None:
    """Where nothing is found in the cluster (``helm template``), every render makes a new
    certificate and CA, and the webhook's pods roll onto them; ``helm upgrade`` finds the
    Secret and keeps all of it (no roll, the same CA in both configurations)."""
    first, first_checksum = webhook_tls(rendered)
    second, second_checksum = webhook_tls(render())
    assert second["tls.crt"] != first["tls.crt"] and second["ca.crt"] != first["ca.crt"]
    assert second_checksum != first_checksum
    if shutil.which("helm"):
        pytest.skip("lookup finds objects only with the stand-in's --lookup-objects")
    stored = tmp_path / "cluster.yaml"
    stored.write_text(yaml.safe_dump(of_kind(rendered, "Secret")["pykai-webhook-tls"]))
    upgraded = render("--lookup-objects", str(stored))
    kept, kept_checksum = webhook_tls(upgraded)
    assert kept == first and kept_checksum == first_checksum
    for kind in ("ValidatingWebhookConfiguration", "MutatingWebhookConfiguration"):
        for hook in next(iter(of_kind(upgraded, kind).values()))["webhooks"]:
            assert hook["clientConfig"]["caBundle"] == first["ca.crt"]


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
    api.create(KINDS["Queue"], builders.queue("helm-q"))
    for name, extra, gpus in (
        ("helm-whole", {}, 1),
        ("helm-half", {"gpu-fraction": "0.5"}, 0),
    ):
        pod = builders.pod(
            name, gpus=gpus, annotations=extra, labels={"kai.scheduler/queue": "helm-q"}
        )
        pod["spec"]["nodeSelector"] = {"pool": "helm"}
        api.create(KINDS["Pod"], pod)
    with ExitStack() as stack:
        ports = {}
        for name in COMPONENTS:
            args, ports[name] = chart_arguments(rendered, name, tmp_path)
            stack.enter_context(pykai_running(local_cluster, *args, kubeconfig=rbac[name]))

        def node_of(name: str) -> str:
            pod = api.get(KINDS["Pod"], name, "default") or {}
            return str((pod.get("spec") or {}).get("nodeName") or "")

        assert wait_for(
            lambda: node_of("helm-whole") == node_of("helm-half") == "helm-node", timeout=40
        )
        assert wait_for(
            lambda: "allocated" in ((api.get(KINDS["Queue"], "helm-q") or {}).get("status") or {})
        )
        reservations = [
            p for p in api.list(KINDS["Pod"])[0] if p["metadata"]["namespace"] == "pykai-resv"
        ]
        assert any(p["spec"]["nodeName"] == "helm-node" for p in reservations)
        for name, port in ports.items():
            main = container(rendered, f"pykai-{name}")["containers"][0]
            for probe in ("livenessProbe", "readinessProbe"):
                path = main[probe]["httpGet"]["path"]
                assert httpx.get(f"http://127.0.0.1:{port}{path}").status_code == 200
