"""The writes an apiserver has served, from its own counters (``apiserver_request_total`` in
/metrics): the ``writes`` figure of ``pykai bench kube --shape``, what each row's scheduler
makes the apiserver do per measured pod. Contract: ``parse`` counts every request whose verb
is not a read (GET, LIST, WATCH), by "VERB resource[/subresource]", summed over codes and
scopes; ``served`` fetches and parses them; ``settled`` waits until they stop growing (the
writes a scheduler leaves for after its last bind: status patches in the background)."""

from __future__ import annotations

import re
import time
from collections import Counter

from pykai.kube.api import KubeApi

READS = frozenset({"GET", "LIST", "WATCH"})
_LABEL = re.compile(r'(\w+)="([^"]*)"')


def parse(text: str) -> Counter[str]:
    """Writes by "VERB resource[/subresource]" from the text of /metrics."""
    counts: Counter[str] = Counter()
    for line in text.splitlines():
        if not line.startswith("apiserver_request_total{"):
            continue
        labels = dict(_LABEL.findall(line))
        verb = labels.get("verb", "")
        if verb in READS:
            continue
        sub = labels.get("subresource", "")
        key = f"{verb} {labels.get('resource', '')}" + (f"/{sub}" if sub else "")
        counts[key] += int(float(line.rsplit(" ", 1)[1]))
    return counts


def served(api: KubeApi) -> Counter[str]:
    """The apiserver's writes so far."""
    response = api.http.get("/metrics", timeout=30.0)
    response.raise_for_status()
    return parse(response.text)


def settled(api: KubeApi, quiet: float = 3.0, limit: float = 60.0) -> Counter[str]:
    """The apiserver's writes once none came for ``quiet`` seconds (at most ``limit``)."""
    deadline = time.monotonic() + limit
    last = served(api)
    still = time.monotonic()
    while time.monotonic() < deadline:
        time.sleep(0.5)
        now = served(api)
        if now != last:
            last, still = now, time.monotonic()
        elif time.monotonic() - still >= quiet:
            break
    return last
