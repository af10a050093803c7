"""The dashboard at scale: the contended cluster of the engine benchmark (``contended.py``)
with ``nodes`` nodes of 8 GPUs and ``pods`` pods (4 in 5 running, the rest pending), its page
model built and encoded ``runs`` times (medians of wall and CPU time, and the JSON's size);
the same cluster in a cluster file, as ``pykai dashboard`` serves it (the first page loads the
engine state from the file; the next ones replay only what changed: the median of ``runs``);
then each page drawn once by headless Chromium, if there is one (``chromium`` on the PATH:
scripts/chromium installs it): the time the page's script spends drawing, which it logs to
the console when its URL asks for ``?timing``. Chromium's own start-up is not counted."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from pykai.bench.contended import Workload, build, objects
from pykai.dashboard.memory import Memory
from pykai.dashboard.model import build_page
from pykai.dashboard.server import serve_dashboard
from pykai.embedded.dashboard import StorePages
from pykai.embedded.sqlite import Store
from pykai.engine.settings import SchedulerConfig

PAGES = ("queues", "gpus", "pending", "evictions", "history")
_DRAWN = re.compile(r"pykai-draw (\S+) ([\d.]+) ms")
BROWSER_DEADLINE = 120.0  # seconds for Chromium to start, fetch and draw one page


def run_dashboard_bench(nodes: int, pods: int, runs: int) -> dict[str, Any]:
    """Figures of the page model and, where Chromium is installed, of drawing each page."""
    running = pods * 4 // 5
    workload = Workload(nodes=nodes, running=running, pending=pods - running)
    state = build(workload)
    memory = Memory()
    walls, cpus, body = [], [], b""
    for _ in range(runs):
        wall, cpu = time.perf_counter(), time.process_time()
        model = build_page(
            state, SchedulerConfig(), 0.0, reasons={}, evictions=[], history=memory.history()
        )
        body = json.dumps(model).encode()
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
    figures: dict[str, Any] = {
        "nodes": nodes,
        "pods": len(state.tasks),
        "pending_jobs": len(state.pending_jobs),
        "page_model_wall_s": round(statistics.median(walls), 3),
        "page_model_cpu_s": round(statistics.median(cpus), 3),
        "page_json_bytes": len(body),
        **_embedded(workload, runs),
    }
    browser = shutil.which("chromium")
    if browser is None:
        figures["browser"] = "no chromium on the PATH (scripts/chromium installs it)"
        return figures
    server = serve_dashboard(("127.0.0.1", 0), lambda: body)
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/?timing"
        for page in PAGES:
            figures[f"draw_{page}_ms"] = _draw_ms(browser, f"{url}#{page}")
    finally:
        server.shutdown()
    return figures


def _embedded(workload: Workload, runs: int) -> dict[str, float]:
    """Wall time of the first page of a cluster file and the median of the next ``runs``."""
    with tempfile.TemporaryDirectory(prefix="pykai-bench-dashboard-") as directory:
        path = Path(directory) / "cluster.db"
        store = Store(path)
        try:
            with store.transaction():
                for obj in objects(workload):
                    store.create(obj)
        finally:
            store.close()
        pages = StorePages(path)
        try:
            walls = []
            for _ in range(runs + 1):
                wall = time.perf_counter()
                pages.page()
                walls.append(time.perf_counter() - wall)
        finally:
            pages.close()
    return {
        "file_first_page_wall_s": round(walls[0], 3),
        "file_next_page_wall_s": round(statistics.median(walls[1:]), 3),
    }


def _draw_ms(browser: str, url: str) -> float | None:
    """How long the page's script took to draw ``url`` in headless Chromium (None if it did
    not say so in time)."""
    with tempfile.TemporaryDirectory(
        prefix="pykai-bench-chromium-", ignore_cleanup_errors=True
    ) as profile:
        process = subprocess.Popen(
            [browser, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
             f"--user-data-dir={profile}", "--window-size=1400,1000", "--enable-logging=stderr",
             "--remote-debugging-port=0", url],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
            start_new_session=True,  # its own process group: Chromium's helpers end with it
        )  # fmt: skip
        assert process.stderr is not None
        deadline = time.monotonic() + BROWSER_DEADLINE
        try:
            while time.monotonic() < deadline:
                line = process.stderr.readline()
                if not line:
                    return None
                found = _DRAWN.search(line)
                if found:
                    return float(found.group(2))
            return None
        finally:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
