"""`pykai dashboard` refuses what it cannot serve before serving anything, and its server
only reads."""

from __future__ import annotations

import socket
from pathlib import Path

import httpx

from pykai.dashboard.server import API_PATH, serve_dashboard
from tests.cli.conftest import Cli


def test_a_missing_cluster_file_is_not_made(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere.db"
    result = Cli(missing)("dashboard")
    assert result.code == 1 and "nowhere.db" in result.err
    assert not missing.exists()  # read-only: the dashboard never creates a cluster


def test_an_address_must_be_host_and_port(cli: Cli) -> None:
    result = cli("dashboard", "--address", "8090")
    assert result.code == 1 and "--address '8090': write it as HOST:PORT" in result.err


def test_a_taken_port_is_one_clear_line(cli: Cli) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = cli("dashboard", "--address", f"127.0.0.1:{port}")
    assert result.code == 1 and "Address already in use" in result.err


def test_the_server_only_reads() -> None:
    server = serve_dashboard(("127.0.0.1", 0), lambda: b'{"time": 0}')
    try:
        base = f"http://127.0.0.1:{server.server_address[1]}"
        assert httpx.get(base + API_PATH).json() == {"time": 0}
        page = httpx.get(base + "/")
        assert page.status_code == 200 and 'src="/dashboard.js"' in page.text
        assert "http" not in page.text.replace("http://www.w3.org", "")  # nothing from elsewhere
        assert httpx.post(base + API_PATH, content=b"{}").status_code == 501
        assert httpx.get(base + "/other").status_code == 404
    finally:
        server.shutdown()
