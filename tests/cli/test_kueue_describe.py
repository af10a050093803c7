"""``pykai describe clusterqueue|localqueue`` lists the pending Workloads with their positions
in Kueue's order (higher priority first, then earlier creation), as Kueue's visibility API
reports them; the admitted Workload is not listed."""

from __future__ import annotations

from pathlib import Path

from pykai.model.meta import Obj
from tests.cli.conftest import Cli, write
from tests.kueue.test_admission import API, _cq, _job, _lq, _node, _wpc


def _table(out: str) -> list[list[str]]:
    """The rows of the Pending Workloads table (after its header and dashes)."""
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("Pending Workloads:"))
    rows = []
    for line in lines[start + 3 :]:
        if not line.startswith("  ") or not line.strip():
            break
        rows.append(line.split())
    return rows


def test_describe_shows_pending_positions(cli: Cli, tmp_path: Path) -> None:
    flavor: Obj = {"apiVersion": API, "kind": "ResourceFlavor", "metadata": {"name": "default"}}
    setup = [_node("n1", "16"), flavor, _wpc("low", 100), _wpc("high", 1000)]
    setup += [_cq("cq", "1"), _lq("q", "cq")]
    assert cli("apply", "-f", write(tmp_path, "setup.yaml", setup)).code == 0
    for name, priority in (("first", "low"), ("second", "low"), ("urgent", "high")):
        job = _job(name, "q", priority=priority)
        assert cli("apply", "-f", write(tmp_path, f"{name}.yaml", [job])).code == 0
        cli("schedule")
    workloads = {w[0]: w for w in cli.lines("get", "workloads")[1:]}
    assert len(workloads) == 3
    rows = _table(cli("describe", "clusterqueue", "cq").out)
    # "first" holds the quota; "urgent" (priority 1000) is ahead of "second" (100)
    assert [(r[0], r[1], r[2].split("/")[1].split("-")[1], r[3], r[4]) for r in rows] == [
        ("0", "0", "urgent", "1000", "q"),
        ("1", "1", "second", "100", "q"),
    ]
    assert _table(cli("describe", "localqueue", "q").out) == rows
