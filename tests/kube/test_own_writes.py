"""``pykai run`` reads its own background writes (kube/host.py): until the cache holds its
answer, ``get``, ``list`` and ``owned`` show an object as a status patch makes it, on top of
whatever the cache holds, so that the next pass never decides on what it already changed (a
Kueue pass that saw a Workload it had admitted as pending could admit another into the quota
it holds). A patch the writeback gives up on is no longer shown."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, cast

import pytest

from pykai.kube.api import ApiError, KubeApi
from pykai.kube.host import KubeHost
from pykai.kube.informer import Change
from pykai.model import builders
from pykai.model.kinds import KindSpec
from pykai.model.meta import Obj, merge_patch
from tests.inline import InlineExecutor


class _Api:
    """Answers each patch once ``gate`` is set, as the stored object at the next version (or
    with ``refusal``)."""

    def __init__(self, stored: Obj, refusal: ApiError | None = None) -> None:
        self.stored, self.refusal = stored, refusal
        self.gate = threading.Event()

    def patch(
        self, kind: KindSpec, name: str, patch: Obj, namespace: str = "", sub: str = ""
    ) -> Obj:
        assert self.gate.wait(10.0)
        if self.refusal is not None:
            raise self.refusal
        version = int(self.stored["metadata"]["resourceVersion"]) + 1
        self.stored = merge_patch(self.stored, patch)
        self.stored["metadata"]["resourceVersion"] = str(version)
        return self.stored


def _group() -> Obj:
    group = builders.podgroup("g", queue="team", min_member=1)
    group["metadata"]["resourceVersion"] = "5"
    return group


@pytest.fixture
def background() -> Any:
    with ThreadPoolExecutor(2) as pool:
        yield pool


def _host(api: _Api, background: ThreadPoolExecutor) -> KubeHost:
    host = KubeHost(cast(KubeApi, api), InlineExecutor(), background=background)
    host.apply(Change("PodGroup", "SYNC", None, (_group(),)))
    return host


def _next_change(host: KubeHost) -> Change:
    return host.changes.get(timeout=10.0)


def _running(
    background: ThreadPoolExecutor, refusal: ApiError | None = None
) -> tuple[_Api, KubeHost, Obj]:
    """A host whose PodGroup ``g`` (version 5) is being patched to phase Running, the API
    holding the answer until its gate opens; the PodGroup as cached before."""
    api = _Api(_group(), refusal)
    host = _host(api, background)
    cached = host.get("PodGroup", "g", "default")
    assert cached is not None
    host.patch(cached, {"status": {"phase": "Running"}}, status=True)
    return api, host, cached


def test_a_patch_under_way_is_read_back_until_its_answer_is_cached(
    background: ThreadPoolExecutor,
) -> None:
    api, host, _ = _running(background)
    shown = host.get("PodGroup", "g", "default")
    assert shown is not None and shown["status"]["phase"] == "Running"
    assert shown["metadata"]["resourceVersion"] != "5"  # not taken for the stored version
    # a second patch of the same pass builds on the first, in every reading
    host.patch(shown, {"status": {"running": 1}}, status=True)
    [listed] = host.list("PodGroup")
    assert (listed["status"]["phase"], listed["status"]["running"]) == ("Running", 1)
    assert host.list("Queue") == []
    api.gate.set()
    first = _next_change(host)  # answered; the runner has not applied it yet
    deadline = time.monotonic() + 10.0
    while host.writeback.pending():  # both answered, neither in the cache
        assert time.monotonic() < deadline, "the writeback never finished"
        time.sleep(0.01)
    waiting = host.get("PodGroup", "g", "default")
    assert waiting is not None and (waiting["status"]["phase"], waiting["status"]["running"]) == (
        "Running",
        1,
    )
    host.apply(first)
    host.apply(_next_change(host))
    answered = host.get("PodGroup", "g", "default")
    assert answered == api.stored  # the cache's own, once it holds every answer
    assert not host.writeback.writes("PodGroup")


def test_a_patch_under_way_shows_on_top_of_anyone_elses_change(
    background: ThreadPoolExecutor,
) -> None:
    api, host, _ = _running(background)
    changed = merge_patch(
        _group(), {"metadata": {"resourceVersion": "9"}, "spec": {"minMember": 2}}
    )
    host.apply(Change("PodGroup", "MODIFIED", changed))
    shown = host.get("PodGroup", "g", "default")
    assert shown is not None
    assert (shown["spec"]["minMember"], shown["status"]["phase"]) == (2, "Running")
    api.gate.set()


def test_a_patch_the_writeback_gives_up_on_is_no_longer_shown(
    background: ThreadPoolExecutor,
) -> None:
    api, host, cached = _running(background, ApiError(422, "refused"))
    refused = host.get("PodGroup", "g", "default")
    assert refused is not None
    api.gate.set()
    deadline = time.monotonic() + 10.0
    while host.writeback.pending():
        assert time.monotonic() < deadline, "the writeback never gave up"
        time.sleep(0.01)
    assert host.get("PodGroup", "g", "default") == cached
    # the next patch's object never wears the refused one's version (a view remembered per
    # resourceVersion would be taken for it)
    api.gate.clear()
    host.patch(cached, {"status": {"phase": "Pending"}}, status=True)
    again = host.get("PodGroup", "g", "default")
    assert again is not None and again["status"]["phase"] == "Pending"
    assert again["metadata"]["resourceVersion"] != refused["metadata"]["resourceVersion"]
    api.gate.set()
