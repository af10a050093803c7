"""Headless Chromium (Debian's, installed by scripts/chromium) as a user's browser: a page's
DOM after its script has run (``--dump-dom``) and a screenshot of it, kept as a test artefact."""

from __future__ import annotations

import subprocess
import tempfile
from dataclasses import dataclass, field
from functools import cache
from html.parser import HTMLParser
from pathlib import Path

from tests.setup_scripts import installed

ROOT = Path(__file__).resolve().parents[2]
# virtual time Chromium lets the page's script run (its fetch of /api/dashboard included)
SCRIPT_TIME_MS = 8000


@cache
def chromium() -> str:
    """The browser's path (installed on first use)."""
    return installed("chromium")


def _run(url: str, *flags: str) -> str:
    with tempfile.TemporaryDirectory(
        prefix="pykai-chromium-", ignore_cleanup_errors=True
    ) as profile:
        out = subprocess.run(
            [
                chromium(),
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--hide-scrollbars",
                "--no-first-run",
                f"--user-data-dir={profile}",
                "--window-size=1400,1000",
                f"--virtual-time-budget={SCRIPT_TIME_MS}",
                *flags,
                url,
            ],
            capture_output=True,
            text=True,
            timeout=180,
            check=True,
        )
    return out.stdout


def load(url: str, screenshot: Path) -> Dom:
    """The DOM of ``url`` once its script has drawn it; a screenshot saved at ``screenshot``
    (its path printed: pytest shows it with the test's output)."""
    _run(url, f"--screenshot={screenshot}")
    print(f"screenshot of {url}: {screenshot}")
    dom = Dom()
    dom.feed(_run(url, "--dump-dom"))
    return dom


@dataclass
class Dom(HTMLParser):
    """What a user sees, read from the dumped DOM: the text of each table body's rows (by the
    body's id), every element's attributes by id, and the text of elements by id."""

    rows: dict[str, list[list[str]]] = field(default_factory=dict)
    attributes: dict[str, dict[str, str]] = field(default_factory=dict)
    texts: dict[str, str] = field(default_factory=dict)
    _open: list[tuple[str, str]] = field(default_factory=list)  # (tag, id) from the root
    _body: str = ""

    def __post_init__(self) -> None:
        HTMLParser.__init__(self)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = {k: v or "" for k, v in attrs}
        ident = found.get("id", "")
        if ident:
            self.attributes[ident] = found
            self.texts[ident] = ""
        if tag == "tbody":
            self._body = ident
            self.rows[ident] = []
        elif tag == "tr" and self._body:
            self.rows[self._body].append([])
        elif tag == "td" and self._body:
            self.rows[self._body][-1].append("")
        if tag not in ("br", "img", "input", "meta", "link"):
            self._open.append((tag, ident))

    def handle_endtag(self, tag: str) -> None:
        while self._open:
            opened, _ = self._open.pop()
            if opened == tag:
                break
        if tag == "tbody":
            self._body = ""

    def handle_data(self, data: str) -> None:
        for _, ident in self._open:
            if ident:
                self.texts[ident] += data
        if (
            self._body
            and self.rows[self._body]
            and self.rows[self._body][-1]
            and any(tag == "td" for tag, _ in self._open)
        ):
            self.rows[self._body][-1][-1] += data

    def text(self, ident: str) -> str:
        """The text inside the element of that id."""
        return " ".join(self.texts.get(ident, "").split())
