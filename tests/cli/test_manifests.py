"""Reading manifests: files, directories, stdin, multi-document YAML, JSON, Lists, errors."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from pykai.cli.manifests import ManifestError, parse_documents, read_manifests


def names(objects: list[dict[str, dict[str, str]]]) -> list[str]:
    return [o["metadata"]["name"] for o in objects]


def test_multi_document_yaml_skips_empty_documents() -> None:
    text = "---\nkind: Pod\nmetadata: {name: a}\n---\n\n---\nkind: Pod\nmetadata: {name: b}\n---\n"
    assert names(parse_documents(text, "x.yaml")) == ["a", "b"]


def test_list_items_are_expanded() -> None:
    text = (
        "kind: List\nitems:\n"
        "- {kind: Pod, metadata: {name: a}}\n- {kind: Pod, metadata: {name: b}}\n"
    )
    assert names(parse_documents(text, "x.yaml")) == ["a", "b"]


def test_list_items_must_be_objects() -> None:
    with pytest.raises(ManifestError, match=r"x\.yaml:1: document 1: List items must be objects"):
        parse_documents("kind: List\nitems: [1, 2]\n", "x.yaml")


def test_a_directory_is_its_manifest_files_in_name_order(tmp_path: Path) -> None:
    (tmp_path / "b.yml").write_text("kind: Pod\nmetadata: {name: from-b}\n")
    (tmp_path / "a.yaml").write_text("kind: Pod\nmetadata: {name: from-a}\n")
    (tmp_path / "c.json").write_text('{\n\t"kind": "Pod",\n\t"metadata": {"name": "from-c"}\n}\n')
    (tmp_path / "notes.txt").write_text("kind: Pod\nmetadata: {name: ignored}\n")
    (tmp_path / "sub.yaml").mkdir()
    assert names(read_manifests([str(tmp_path)])) == ["from-a", "from-b", "from-c"]


def test_stdin_and_files_in_the_order_given(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "a.yaml").write_text("kind: Pod\nmetadata: {name: file}\n")
    monkeypatch.setattr("sys.stdin", io.StringIO("kind: Pod\nmetadata: {name: stdin}\n"))
    assert names(read_manifests(["-", str(tmp_path / "a.yaml")])) == ["stdin", "file"]


def test_malformed_yaml_names_the_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "x.yaml"
    path.write_text("kind: Pod\nmetadata:\n  name: a\n  labels: b: c\n")
    with pytest.raises(ManifestError) as caught:
        read_manifests([str(path)])
    assert str(caught.value) == f"{path}:4: mapping values are not allowed here"


def test_malformed_json_names_the_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "x.json"
    path.write_text('{\n  "kind": "Pod",\n  "metadata": {"name": "a"\n}\n')
    with pytest.raises(ManifestError, match=r"x\.json:5: Expecting ',' delimiter"):
        read_manifests([str(path)])


def test_a_document_must_be_a_mapping() -> None:
    with pytest.raises(ManifestError, match=r"x\.yaml:3: document 2 is not a mapping"):
        parse_documents("kind: Pod\n---\n- a\n- list\n", "x.yaml")


def test_a_missing_path_is_named() -> None:
    with pytest.raises(ManifestError, match=r'the path "nowhere\.yaml" does not exist'):
        read_manifests(["nowhere.yaml"])


def test_an_unreadable_file_is_named(tmp_path: Path) -> None:
    path = tmp_path / "binary.yaml"
    path.write_bytes(b"\xff\xfe\x00")
    with pytest.raises(ManifestError, match=r"binary\.yaml: cannot be read"):
        read_manifests([str(path)])


def test_numbers_are_read_as_kubectl_reads_them() -> None:
    """kubectl's YAML (go-yaml v2, through sigs.k8s.io/yaml) takes any float strconv parses,
    ``1e30`` included, where YAML 1.1 wants a dot and a signed exponent; one past float64
    (``1e400``) stays a string, as there, for the schema to refuse."""
    text = "a: 1e30\nb: 1.5e3\nc: -2E-3\nd: .5\ne: 1e400\nf: '1e30'\ng: 7\nh: 1.0e+3\ni: 1_000\n"
    (document,) = parse_documents(text, "x.yaml")
    assert document == {
        "a": 1e30,
        "b": 1500.0,
        "c": -0.002,
        "d": 0.5,
        "e": "1e400",
        "f": "1e30",
        "g": 7,
        "h": 1000.0,
        "i": 1000,
    }
    assert isinstance(document["g"], int) and isinstance(document["a"], float)


def test_base_60_numbers_stay_strings_as_kubectl_reads_them() -> None:
    """YAML 1.1 reads ``10:30`` as 630 (base 60); go-yaml v2, kubectl's reader, has no base-60
    numbers and keeps the string (a time in an env value, a port mapping)."""
    text = "a: 10:30\nb: 1:30.5\nc: -1:00\nd: '10:30'\ne: 630\n"
    (document,) = parse_documents(text, "x.yaml")
    assert document == {"a": "10:30", "b": "1:30.5", "c": "-1:00", "d": "10:30", "e": 630}
