"""pykai's CRDs: generated from the models, shipped as generated, and schema-compatible with
KAI Scheduler's own (from KAI's Go module, fetched by scripts/peers): the same
groups, versions, names, fields, types, formats, quantity patterns and KAI's printer columns;
pykai may be stricter (e.g. a queue's priority is an int32, ``spec.resources`` is required, as
KAI's webhook requires it) and adds printer columns to PodGroups, nothing else."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import ValidationError as PydanticError
from typer.testing import CliRunner

from pykai.cli.app import app
from pykai.cli.columns import columns_for
from pykai.engine.decisions import Bind
from pykai.kube.binding import bind_request
from pykai.kube.localcluster import kai_crds
from pykai.model.bindrequest import BindRequestSpec, BindRequestStatus
from pykai.model.crds import CUSTOM_RESOURCES, definition, render
from pykai.model.meta import Obj

ROOT = Path(__file__).resolve().parents[2]
CHART_CRDS = ROOT / "deploy/helm/pykai/crds"

# what a node of KAI's schema says that pykai's must say alike
SAME = ("type", "format", "pattern", "anyOf", "x-kubernetes-int-or-string", "nullable")
KEPT_LIMITS = ("minimum", "maximum", "minLength", "maxLength")  # KAI's, where it has them


# KAI's CRDs that are not the scheduler's API pykai serves: the operator's own configuration, and
# the Topology kind (topology-aware placement, not built yet)
NOT_SERVED = {"configs.kai.scheduler", "topologies.kai.scheduler"}


def kai_definitions() -> dict[str, Obj]:
    """KAI's CRDs of the kinds pykai serves, by name."""
    found = {}
    for path in sorted(kai_crds().glob("*.yaml")):
        for document in yaml.safe_load_all(path.read_text()):
            if document and document["metadata"]["name"] not in NOT_SERVED:
                found[document["metadata"]["name"]] = document
    return found


def pykai_definitions() -> dict[str, Obj]:
    return {r.name: definition(r) for r in CUSTOM_RESOURCES}


def differences(kai: Obj, ours: Obj, path: str) -> Iterator[str]:
    """Where pykai's schema node ``ours`` accepts or keeps other objects than KAI's ``kai``."""
    if ours.get("x-kubernetes-preserve-unknown-fields"):
        return  # pykai keeps whatever is there (a DRA allocation it does not model)
    for key in SAME:
        if kai.get(key) != ours.get(key):
            yield f"{path}: {key} is {ours.get(key)!r}, KAI's is {kai.get(key)!r}"
    for key in KEPT_LIMITS:
        if key in kai and kai[key] != ours.get(key):
            yield f"{path}: {key} is {ours.get(key)!r}, KAI's is {kai[key]!r}"
    if not set(kai.get("enum", [])) <= set(ours.get("enum", kai.get("enum", []))):
        yield f"{path}: enum {ours.get('enum')} lacks some of KAI's {kai['enum']}"
    if not set(kai.get("required", [])) <= set(ours.get("required", [])):
        yield f"{path}: does not require {kai['required']}"
    theirs, mine = kai.get("properties", {}), ours.get("properties", {})
    for name in sorted(set(theirs) - set(mine)):
        yield f"{path}.{name}: missing (KAI has it)"
    for name in sorted(set(mine) - set(theirs)):
        yield f"{path}.{name}: not in KAI's schema (KAI's CRD would prune it)"
    for name in sorted(set(theirs) & set(mine)):
        yield from differences(theirs[name], mine[name], f"{path}.{name}")
    for key in ("items", "additionalProperties"):
        if (key in kai) != (key in ours):
            yield f"{path}: {key} {'missing' if key in kai else 'not in KAI'}"
        elif isinstance(kai.get(key), dict):
            yield from differences(kai[key], ours[key], f"{path}.{key}")


def test_pykai_defines_each_of_kais_kinds() -> None:
    assert set(pykai_definitions()) == set(kai_definitions())


@pytest.mark.parametrize("name", sorted(kai_definitions()))
def test_crd_is_schema_compatible_with_kais(name: str) -> None:
    kai, ours = kai_definitions()[name]["spec"], pykai_definitions()[name]["spec"]
    assert (ours["group"], ours["scope"]) == (kai["group"], kai["scope"])
    assert {k: v for k, v in ours["names"].items() if k != "shortNames"} == {
        k: v for k, v in kai["names"].items() if k != "shortNames"
    }
    assert set(kai["names"].get("shortNames", [])) <= set(ours["names"].get("shortNames", []))
    assert [v["name"] for v in ours["versions"]] == [v["name"] for v in kai["versions"]]
    for theirs, mine in zip(kai["versions"], ours["versions"], strict=True):
        for key in ("served", "storage", "subresources"):
            assert mine[key] == theirs[key], key
        columns = mine.get("additionalPrinterColumns", [])
        for column in theirs.get("additionalPrinterColumns", []):
            assert column in columns  # KAI's columns, as KAI declares them
        schema = (theirs["schema"]["openAPIV3Schema"], mine["schema"]["openAPIV3Schema"])
        found = set(differences(*schema, "openAPIV3Schema"))
        assert found == PYKAI_EXTENSIONS.get(name, set())


# pykai's own optional fields: on a cluster with KAI's CRDs the apiserver prunes them and pykai
# uses their defaults (docs/placement.md). `actions` and `plugins` are KAI's since v0.13; the
# KAI release the Go module proxy serves, and the tests run on, is v0.12.0 (docs/conformance.md).
PYKAI_EXTENSIONS = {
    "schedulingshards.kai.scheduler": {
        "openAPIV3Schema.spec.placementStrategy.typicalPods: not in KAI's schema "
        "(KAI's CRD would prune it)",
        "openAPIV3Schema.spec.actions: not in KAI's schema (KAI's CRD would prune it)",
        "openAPIV3Schema.spec.plugins: not in KAI's schema (KAI's CRD would prune it)",
    }
}


def test_differences_are_found() -> None:
    """The comparison itself: a pruned field, another pattern, a lost enum value."""
    kai: Obj = {
        "type": "object",
        "properties": {
            "a": {"type": "string", "pattern": "^x$"},
            "b": {"type": "string", "enum": ["p", "q"]},
        },
    }
    ours: Any = {
        "type": "object",
        "properties": {
            "a": {"type": "string", "pattern": "^y$"},
            "b": {"type": "string", "enum": ["p"]},
            "c": {"type": "string"},
        },
    }
    found = list(differences(kai, ours, "s"))
    assert len(found) == 3 and "s.c: not in KAI's schema" in found[0]


# columns pykai's get works out with the engine, which no stored field holds (kubectl cannot)
ENGINE_COLUMNS = {"PodGroup": {"POSITION"}}


@pytest.mark.parametrize("kind", ["Queue", "PodGroup"])
def test_kubectl_get_prints_what_pykai_get_prints(kind: str) -> None:
    """kubectl prints NAME, then the printer columns' names in upper case: pykai's get the
    same, besides the columns only the engine can work out (a PodGroup's queue position)."""
    crd = pykai_definitions()[definition_name(kind)]["spec"]
    columns = crd["versions"][0]["additionalPrinterColumns"]
    computed = ENGINE_COLUMNS.get(kind, set())
    assert ["NAME", *(c["name"].upper() for c in columns)] == [
        header for header, _ in columns_for(kind) if header not in computed
    ]


def test_podgroup_columns_make_kubectl_get_useful() -> None:
    crd = pykai_definitions()["podgroups.scheduling.run.ai"]["spec"]
    names = [c["name"] for c in crd["versions"][0]["additionalPrinterColumns"]]
    assert {"Queue", "Phase", "Min-Member", "Age"} <= set(names)


def definition_name(kind: str) -> str:
    return next(r.name for r in CUSTOM_RESOURCES if r.kind.kind == kind)


def test_chart_crds_are_what_the_code_generates(tmp_path: Path) -> None:
    kais = [p.name for p in CHART_CRDS.glob("*.yaml") if not p.name.startswith("kueue.x-k8s.io_")]
    assert sorted(kais) == sorted(r.file_name for r in CUSTOM_RESOURCES)  # Kueue's: stand-ins
    for resource in CUSTOM_RESOURCES:
        shipped = (CHART_CRDS / resource.file_name).read_text()
        assert shipped == render(resource), (
            f"{resource.file_name} is stale: run pykai crds --output-dir deploy/helm/pykai/crds"
        )
    written = CliRunner().invoke(app, ["crds", "--output-dir", str(tmp_path)])
    assert written.exit_code == 0, written.output
    for resource in CUSTOM_RESOURCES:
        assert (tmp_path / resource.file_name).read_text() == render(resource)
    printed = CliRunner().invoke(app, ["crds"])
    names = [d["metadata"]["name"] for d in yaml.safe_load_all(printed.output)]
    assert names == [r.name for r in CUSTOM_RESOURCES]


def test_bind_requests_pykai_writes_fit_the_schema() -> None:
    """The scheduler's BindRequests and the binder's status writes (the statuses of Queues and
    PodGroups are checked in every scenario, tests/test_scenarios.py)."""
    request = bind_request(Bind("default", "p", "uid-1", "n1", ("g1", "g2"), 0.5))
    BindRequestSpec.model_validate(request["spec"])
    for status in (
        {"phase": "Succeeded"},
        {"phase": "Failed", "failedAttempts": 3, "reason": "binding to n1 failed"},
    ):
        BindRequestStatus.model_validate(status)
    with pytest.raises(PydanticError):
        BindRequestSpec.model_validate({**request["spec"], "gpuPortion": "0.5"})  # unknown
