"""The pages of `pykai run`, fed by the run loop: what each cycle decided is remembered, the
page is built in the loop only while someone looks, and a dashboard failure never reaches the
loop."""

from __future__ import annotations

import json

import pytest

from pykai.dashboard import live
from pykai.dashboard.live import CyclePages
from pykai.engine.settings import SchedulerConfig
from pykai.model.builders import node, queue
from tests.dashboard.test_model import job
from tests.engine.conftest import Engine


@pytest.fixture
def preempted() -> Engine:
    """An inference job about to preempt a training job of its queue; a job that never fits."""
    engine = Engine()
    engine.add([node("n1", gpus=8), queue("prod", gpu=(8, -1, 1))])
    engine.add(job("train", "prod", gpus=8, node_name="n1", phase="Running"))
    engine.add(job("serve", "prod", gpus=8, priority="inference"))
    engine.add(job("huge", "prod", gpus=16))
    return engine


def test_a_cycle_is_remembered_and_shown(preempted: Engine) -> None:
    pages = CyclePages(SchedulerConfig())
    assert json.loads(pages.page()) == {"waiting": "no scheduling cycle has run yet"}
    result = preempted.cycle()
    pages.observe(preempted.state, result, 100.0)
    model = json.loads(pages.page())
    [eviction] = model["evictions"]
    assert (eviction["pod"], eviction["action"], eviction["preemptor"]) == (
        "train-0",
        "preempt",
        "default/serve",
    )
    huge = next(j for j in model["pending"]["jobs"] if j["job"] == "default/huge")
    assert "needs 16 on one node" in huge["reason"]
    # at 100 s prod holds nothing: the victim releases its GPUs, serve waits for them
    assert model["history"] == {"queues": ["prod"], "samples": [[100.0, [0.0]]]}


def test_no_page_is_built_while_nobody_looks(
    preempted: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    pages = CyclePages(SchedulerConfig())
    pages.observe(preempted.state, preempted.cycle(), 100.0)
    monkeypatch.setattr(live, "WATCHED_FOR", -1.0)  # the last request is long past
    pages.observe(preempted.state, preempted.cycle(), 101.0)
    assert json.loads(pages.page())["time"] == 100.0
    assert len(pages.memory.history()["samples"]) == 2  # history is kept all the same


def test_a_dashboard_failure_stays_in_the_dashboard(
    preempted: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*_: object, **__: object) -> None:
        raise RuntimeError("a bug in the page model")

    pages = CyclePages(SchedulerConfig())
    pages.observe(preempted.state, preempted.cycle(), 100.0)
    monkeypatch.setattr(live, "build_page", broken)
    pages.observe(preempted.state, preempted.cycle(), 101.0)  # does not raise into the loop
    assert json.loads(pages.page())["time"] == 100.0
