"""The writes an apiserver has served, from its own counters (``apiserver_request_total`` in
/metrics): the ``writes`` figure of ``pykai bench kube --shape``, what each row's scheduler
makes the apiserver do per measured pod. Contract: ``parse`` counts every request whose verb
is not a read (GET, LIST, WATCH), by "VERB resource[/subresource]", summed over codes and
scopes; ``served`` fetches and parses them."""

from __future__ import annotations

import re
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
