"""Kueue's own CRDs (Kueue v0.17.0, from its module: their schemas and CEL rules) against pykai's
rules for Kueue's kinds. pykai ships schema-less stand-ins for Kueue's CRDs (docs/kueue.md) and
checks Kueue's rules itself, at apply and in its webhook; here a real apiserver v1.34 runs with
Kueue's CRDs in their place, as on a cluster where Kueue is installed:
- every Kueue object of the guides, which pykai accepts, Kueue's CRDs accept too;
- every Kueue case of the bad-input catalogue that Kueue's CRDs refuse, pykai refuses too, and
  names the same field (pykai refuses more: the rest of Kueue's rules are in its webhooks).
What each side refuses is printed (docs/conformance.md records it)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from pykai.kube import peers
from pykai.kube.localcluster import KUEUE_CRDS, LocalCluster
from pykai.model.meta import Obj
from tests.kube.conftest import ROOT, kubectl, wait_for

from ..badinput.catalogue import CASES, BadInput

KUEUE_GROUP = "kueue.x-k8s.io"
KUEUE_CASES = [c for c in CASES if f"apiVersion: {KUEUE_GROUP}/" in c.manifest]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    """etcd and the apiserver, with Kueue's CRDs put in place of pykai's stand-ins by kubectl,
    as a user installs them."""
    local = LocalCluster(tmp_path_factory.mktemp("kueue-crds"))
    local.up(controller_manager=False, stand_ins=False)
    try:
        # a CRD deleted while still being established can stay Terminating for minutes (its
        # instances' cleanup fails and backs off): established first, then deleted
        kubectl(local, "wait", "--for=condition=Established", "--timeout=120s", "crd", "--all")
        kubectl(local, "delete", "--wait=false", *(f"--filename={path}" for path in KUEUE_CRDS))

        def stand_ins_gone() -> bool:
            listed = kubectl(local, "get", "crd", "-o", "name", check=False)
            return not any(KUEUE_GROUP in line for line in listed.splitlines())

        if not wait_for(stand_ins_gone, timeout=180):
            left = kubectl(local, "get", "crd", "-o", "yaml", check=False)
            pytest.fail(f"pykai's Kueue CRDs not deleted in 180 s:\n{left}")
        bases = peers.module("kueue") / "config/components/crd/bases"
        kubectl(local, "create", f"--filename={bases}")  # too large for apply's annotation
        kubectl(local, "wait", "--for=condition=Established", "--timeout=120s", "crd", "--all")
        yield local
    finally:
        local.down()


def kueue_documents() -> list[tuple[Path, Obj]]:
    """Every Kueue object of the guides' manifests (examples/kueue), with its file."""
    found = []
    for path in sorted((ROOT / "examples/kueue").rglob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if isinstance(doc, dict) and str(doc.get("apiVersion", "")).startswith(KUEUE_GROUP):
                found.append((path, doc))
    return found


def test_kueues_crds_are_in_place(cluster: LocalCluster) -> None:
    served = kubectl(cluster, "get", "crd", "clusterqueues.kueue.x-k8s.io", "-o", "yaml")
    assert "x-kubernetes-validations" in served  # Kueue's CEL rules, not pykai's stand-in
    assert "served: true" in served and "storage: true" in served


def test_kueue_accepts_every_kueue_object_of_the_guides(
    cluster: LocalCluster, tmp_path: Path
) -> None:
    documents = kueue_documents()
    assert len(documents) >= 20
    refused = []
    for number, (path, doc) in enumerate(documents):
        manifest = tmp_path / f"doc-{number}.yaml"
        manifest.write_text(yaml.safe_dump(doc))
        out = kubectl(cluster, "create", "--dry-run=server", "-f", str(manifest), check=False)
        if "created (server dry run)" not in out:
            refused.append(f"{path.relative_to(ROOT)} {doc['kind']}: {out.strip()}")
    assert not refused, "\n".join(refused)


def refused_by_kueue(cluster: LocalCluster, case: BadInput, directory: Path) -> str:
    """What the apiserver with Kueue's CRDs answers the case (server dry run, no client-side
    schema check), if it refuses it; "" if it would store it."""
    manifest = directory / f"{case.id}.yaml"
    manifest.write_text(case.manifest)
    out = kubectl(
        cluster, "create", "--dry-run=server", "--validate=false", "-f", str(manifest), check=False
    )
    return "" if "created (server dry run)" in out else out.strip()


def test_pykai_refuses_whatever_kueues_crds_refuse(cluster: LocalCluster, tmp_path: Path) -> None:
    assert len(KUEUE_CASES) >= 10
    answers = {case.id: refused_by_kueue(cluster, case, tmp_path) for case in KUEUE_CASES}
    for case in KUEUE_CASES:
        print(f"{case.id}: Kueue's CRDs {'refuse' if answers[case.id] else 'store'} it;", end=" ")
        print(f"pykai {'refuses' if case.webhook_refuses else 'stores'} it")
    by_kueue = [case for case in KUEUE_CASES if answers[case.id]]
    assert by_kueue, "Kueue's CRDs refused none of the cases: are its schemas in place?"
    not_by_pykai = [case.id for case in by_kueue if not case.webhook_refuses]
    assert not not_by_pykai, f"Kueue's CRDs refuse what pykai lets in: {not_by_pykai}"
    # the same field: the path pykai names (must_name's second part), as the apiserver says it
    other_fields = [
        f"{case.id}: pykai names {case.must_name[1]!r}; Kueue's CRDs say {answers[case.id]!r}"
        for case in by_kueue
        if len(case.must_name) > 1 and _field(case.must_name[1]) not in answers[case.id]
    ]
    assert not other_fields, "\n".join(other_fields)


def _field(path: str) -> str:
    """The last part of a field path, as both pykai's and the apiserver's messages end it
    (``spec.resourceGroups[0].flavors[0].resources[0].lendingLimit`` → ``lendingLimit``)."""
    return path.rsplit(".", 1)[-1]
