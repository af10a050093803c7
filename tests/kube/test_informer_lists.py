"""Informer lists on the real apiserver: paged with ``limit`` + ``continue``, the first one
from the watch cache (``resourceVersion=0``); a kind with more objects than a page is listed
whole either way."""

from __future__ import annotations

import queue
import threading

import httpx

from pykai.kube.api import connect
from pykai.kube.informer import Change, Informer
from pykai.kube.localcluster import LocalCluster
from pykai.model import builders
from pykai.model.kinds import BY_KIND

NAMES = {f"paged-{i}" for i in range(7)}


def test_a_kind_larger_than_a_page_is_listed_whole(local_cluster: LocalCluster) -> None:
    api = connect(local_cluster.kubeconfig)
    for name in NAMES:
        api.create_if_absent(BY_KIND["Queue"], builders.queue(name))
    pages: list[httpx.URL] = []

    def seen(response: httpx.Response) -> None:
        if response.request.url.path == api.path(BY_KIND["Queue"]):
            pages.append(response.request.url)

    api.http.event_hooks["response"].append(seen)
    items, version = api.list(BY_KIND["Queue"], limit=2)
    assert {q["metadata"]["name"] for q in items} >= NAMES
    assert len(items) == len({q["metadata"]["name"] for q in items})  # no page read twice
    assert version and len(pages) >= 4  # 7+ queues, 2 a page
    assert all(url.params["limit"] == "2" for url in pages)
    assert all("continue" in url.params for url in pages[1:])


def test_the_informer_lists_from_the_watch_cache_first(local_cluster: LocalCluster) -> None:
    api = connect(local_cluster.kubeconfig)
    for name in NAMES:
        api.create_if_absent(BY_KIND["Queue"], builders.queue(name))
    lists: list[httpx.URL] = []

    def seen(request: httpx.Request) -> None:
        if request.url.path == api.path(BY_KIND["Queue"]) and "watch" not in request.url.params:
            lists.append(request.url)

    api.http.event_hooks["request"].append(seen)
    changes: queue.Queue[Change] = queue.Queue()
    stop = threading.Event()
    informer = Informer(api, BY_KIND["Queue"], changes, stop)
    informer.start()
    try:
        first = changes.get(timeout=60)
    finally:
        stop.set()
    assert first.type == "SYNC"
    assert {q["metadata"]["name"] for q in first.objects} >= NAMES
    assert lists[0].params["resourceVersion"] == "0"
