"""The Helm chart (deploy/helm/pykai): rendered by scripts/helm-template (helm itself when
installed), every object accepted by the real apiserver's dry-run, values reaching the
scheduler configuration, the same built-ins as the code, and RBAC that is enough — each
component runs under its own service account and a pod is scheduled — and no more."""

from __future__ import annotations

import base64
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from pykai.engine.config import config_from_mapping
from pykai.kube.api import KINDS, connect
from pykai.kube.localcluster import LocalCluster
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


def render(*args: str) -> list[Obj]:
    result = subprocess.run(
        [str(ROOT / "scripts/helm-template"), str(CHART), "--namespace", NAMESPACE, *args],
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr
    return [doc for doc in yaml.safe_load_all(result.stdout) if doc]


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
    assert set(of_kind(rendered, "CustomResourceDefinition")) == {r.name for r in CUSTOM_RESOURCES}
    assert set(of_kind(rendered, "ServiceAccount")) == {
        f"pykai-{name}" for name in [*COMPONENTS, "webhook"]
    }


def test_values_reach_the_scheduler_configuration(rendered: list[Obj]) -> None:
    def placement(objects: list[Obj]) -> tuple[str, str]:
        text = of_kind(objects, "ConfigMap")["pykai-scheduler-config"]["data"]["config.yaml"]
        config = config_from_mapping(yaml.safe_load(text), "config.yaml")
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


def test_network_policies_let_in_only_the_webhook_port(
    local_cluster: LocalCluster, rendered: list[Obj], tmp_path: Path
) -> None:
    policies = of_kind(rendered, "NetworkPolicy")
    assert set(policies) == {"pykai", "pykai-webhook"}
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
    container = of_kind(rendered, "Deployment")["pykai-webhook"]["spec"]["template"]["spec"]
    port = container["containers"][0]["ports"][0]["containerPort"]
    assert webhook["ingress"] == [{"ports": [{"protocol": "TCP", "port": port}]}]

    values = tmp_path / "values.yaml"
    apiserver = [{"ipBlock": {"cidr": "10.0.0.10/32"}}]
    tools = [{"from": [{"namespaceSelector": {"matchLabels": {"name": "tools"}}}]}]
    values.write_text(
        yaml.safe_dump({"networkPolicy": {"webhookFrom": apiserver, "extraIngress": tools}})
    )
    custom = of_kind(render("--values", str(values)), "NetworkPolicy")
    assert custom["pykai-webhook"]["spec"]["ingress"][0]["from"] == apiserver
    assert custom["pykai"]["spec"]["ingress"] == tools
    kubectl(local_cluster, "create", "namespace", NAMESPACE, check=False)
    (tmp_path / "policies.yaml").write_text(yaml.safe_dump_all(list(custom.values())))
    out = kubectl(local_cluster, "apply", "--dry-run=server", "-f", str(tmp_path / "policies.yaml"))
    assert out.count("(server dry run)") == 2
    assert not of_kind(render("--set", "networkPolicy.enabled=false"), "NetworkPolicy")
    no_webhook = render("--set", "webhook.enabled=false")
    assert set(of_kind(no_webhook, "NetworkPolicy")) == {"pykai"}


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


def test_components_run_under_their_own_accounts(
    local_cluster: LocalCluster, rbac: dict[str, Path]
) -> None:
    """Enough, not only little: the four components, each with its own token, schedule a
    whole-GPU pod and a shared-GPU pod (BindRequest, reservation pod) end to end."""
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
    lease = f"--lease-namespace={NAMESPACE}"
    with (
        pykai_running(
            local_cluster, f"--components={COMPONENTS['podgrouper']}", kubeconfig=rbac["podgrouper"]
        ),
        pykai_running(
            local_cluster,
            "--components=scheduler",
            "--leader-elect",
            lease,
            kubeconfig=rbac["scheduler"],
        ),
        pykai_running(local_cluster, "--components=binder", kubeconfig=rbac["binder"]),
        pykai_running(
            local_cluster,
            f"--components={COMPONENTS['controllers']}",
            kubeconfig=rbac["controllers"],
        ),
    ):

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
