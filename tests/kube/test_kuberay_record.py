"""The KubeRay records against the real operator, live: every case of
tests/standins/kuberay_conformance.py recorded again on one local control plane of its own (the
operator started with --batch-scheduler=kai-scheduler, then without a batch scheduler: see
tests/standins/kuberay_live.py) and compared with tests/data/kuberay/. A KubeRay upgrade that
changes what the operator makes of the guides' manifests fails here; then run
scripts/record-kuberay-pods and make tests/standins/test_kuberay_conformance.py pass again."""

from __future__ import annotations

from pathlib import Path

from pykai.kube import peers
from tests.standins.kuberay_conformance import CASES, KUBERAY_MODULE, differences, read_record
from tests.standins.kuberay_live import record


def test_the_real_operator_still_makes_what_was_recorded(tmp_path: Path) -> None:
    version, found = record(tmp_path / "cluster", progress=lambda _: None)
    assert version == peers.version(KUBERAY_MODULE)
    changed = []
    for case in CASES:
        recorded = read_record(case)
        assert recorded["kuberay"] == version, f"{case.path}: run scripts/record-kuberay-pods"
        changed += [
            case.name + line for line in differences(recorded["observed"], found[case.name])
        ]
    assert not changed, (
        "the KubeRay operator makes something else of the guides' manifests now: run "
        "scripts/record-kuberay-pods, then fix the emulator until "
        "tests/standins/test_kuberay_conformance.py passes\n" + "\n".join(changed)
    )
