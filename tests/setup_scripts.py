"""The project's install scripts (scripts/*), run from tests that need what they install."""

from __future__ import annotations

import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def installed(script: str, timeout: float = 900.0) -> str:
    """Run ``scripts/<script>`` (idempotent and cached) and return the last line it printed:
    the path or name of what it installed."""
    out = subprocess.run(
        ["bash", str(ROOT / "scripts" / script)],
        capture_output=True,
        text=True,
        check=True,
        timeout=timeout,
    )
    return out.stdout.strip().splitlines()[-1]
