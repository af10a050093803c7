"""`pykai apply` on the bad-input catalogue: every case is refused with one clear message naming
the object and the field (file and line for YAML faults), no traceback, nothing written, and
the cluster still schedules a valid pod afterwards."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pykai.cli import manifests
from pykai.cli.app import app
from pykai.embedded.cluster import EmbeddedCluster
from tests.embedded.conftest import dump

from .catalogue import BASELINE, CASES, VALID_POD, BadInput

RUNNER = CliRunner()


@pytest.fixture(scope="module")
def baseline(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A cluster file with BASELINE applied."""
    directory = tmp_path_factory.mktemp("baseline")
    (directory / "baseline.yaml").write_text(BASELINE)
    path = directory / "cluster.db"
    result = RUNNER.invoke(
        app, ["apply", "-f", str(directory / "baseline.yaml"), "--cluster", str(path)]
    )
    assert result.exit_code == 0, result.output
    return path


def expected(case: BadInput, bad: Path) -> list[str]:
    """What the message must name, with ``bad.yaml`` as the path the case was written to."""
    return [text.replace("bad.yaml", str(bad)) for text in case.must_name]


def test_the_catalogue_is_large_and_its_ids_unique() -> None:
    assert len(CASES) >= 100
    assert len({case.id for case in CASES}) == len(CASES)


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_apply_refuses_and_changes_nothing(case: BadInput, baseline: Path, tmp_path: Path) -> None:
    cluster = tmp_path / "cluster.db"
    shutil.copy(baseline, cluster)
    bad = tmp_path / "bad.yaml"
    bad.write_text(case.manifest)
    before = dump(cluster)

    result = RUNNER.invoke(app, ["apply", "-f", str(bad), "--cluster", str(cluster)])

    output = result.stdout + result.stderr
    assert result.exit_code == 1, output
    assert result.exception is None or isinstance(result.exception, SystemExit), output
    assert "Traceback" not in output
    assert result.stderr.startswith("error: ")
    missing = [text for text in expected(case, bad) if text not in result.stderr]
    assert not missing, f"{missing} not in: {result.stderr}"
    assert dump(cluster) == before
    _still_schedules(cluster, tmp_path)


def _still_schedules(path: Path, directory: Path) -> None:
    (directory / "valid.yaml").write_text(VALID_POD)
    result = RUNNER.invoke(
        app, ["apply", "-f", str(directory / "valid.yaml"), "--cluster", str(path)]
    )
    assert result.exit_code == 0, result.output
    cluster = EmbeddedCluster.open(path)
    try:
        pod = cluster.get("Pod", "still-schedules", "default")
        assert pod is not None and pod["spec"].get("nodeName") == "gpu-node"
    finally:
        cluster.close()


SUBPROCESS = (
    "yaml-alias-bomb",
    "pod-gpu-overflow",
    "raycluster-replicas-words",
    "queue-quota-nan",
    "kind-typo-queu",
    "deployment-replicas-ten-million",
)


@pytest.mark.parametrize("case", [c for c in CASES if c.id in SUBPROCESS], ids=SUBPROCESS)
def test_a_real_process_refuses_quickly(case: BadInput, baseline: Path, tmp_path: Path) -> None:
    cluster = tmp_path / "cluster.db"
    shutil.copy(baseline, cluster)
    bad = tmp_path / "bad.yaml"
    bad.write_text(case.manifest)
    before = dump(cluster)
    started = time.monotonic()
    result = subprocess.run(
        [sys.executable, "-m", "pykai", "apply", "-f", str(bad), "--cluster", str(cluster)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 1 and "Traceback" not in result.stderr + result.stdout
    assert all(text in result.stderr for text in expected(case, bad)), result.stderr
    assert time.monotonic() - started < 60  # nothing is expanded or made before refusing
    assert dump(cluster) == before


def test_oversize_input_is_refused_with_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(manifests, "MAX_INPUT_BYTES", 1000)
    big = tmp_path / "big.yaml"
    big.write_text(VALID_POD + "#" * 1000 + "\n")
    with pytest.raises(manifests.ManifestError, match=f"{big}: is larger than 1000 bytes"):
        manifests.read_manifests([str(big)])
    monkeypatch.setattr("sys.stdin", _Text(VALID_POD * 10))
    with pytest.raises(manifests.ManifestError, match="<stdin>: is larger than 1000 bytes"):
        manifests.read_manifests(["-"])
    monkeypatch.setattr("sys.stdin", _Text(VALID_POD))
    assert manifests.read_manifests(["-"])[0]["metadata"]["name"] == "still-schedules"


class _Text:
    """stdin holding ``text``, read at most ``limit`` characters at a time."""

    def __init__(self, text: str) -> None:
        self.text = text

    def read(self, limit: int = -1) -> str:
        return self.text if limit < 0 else self.text[:limit]


def test_json_duplicate_keys_and_depth_are_refused(tmp_path: Path) -> None:
    twice = tmp_path / "twice.json"
    twice.write_text('{"kind": "Pod", "kind": "Node"}')
    with pytest.raises(manifests.ManifestError, match='duplicate key "kind"'):
        manifests.read_manifests([str(twice)])
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(manifests.ManifestError, match="nested too deeply"):
        manifests.read_manifests([str(deep)])


def test_yaml_merge_keys_and_timestamps_still_read() -> None:
    text = (
        "base: &base {cpu: 100m}\n---\n"
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p, creationTimestamp: 2024-01-01T00:00:00Z}\n"
        "spec: {containers: [{name: c, image: i, resources: {requests: {<<: {cpu: 1}}}}]}\n"
    )
    documents = manifests.parse_documents(text, "x.yaml")
    pod = documents[1]
    assert pod["metadata"]["creationTimestamp"] == "2024-01-01T00:00:00Z"
    assert pod["spec"]["containers"][0]["resources"]["requests"] == {"cpu": 1}
