"""The garbage-collection policy for a loaded state (engine/memory.py)."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator

import pytest

from pykai.engine import memory
from pykai.engine.memory import settle
from pykai.model.builders import node, pod, podgroup, queue
from tests.engine.conftest import Engine


class _Cyclic:
    """An object in a reference cycle: only the cyclic collector frees it."""

    def __init__(self) -> None:
        self.me = self


@pytest.fixture
def unfrozen() -> Iterator[None]:
    """Leave the interpreter's permanent generation as empty as it was found."""
    gc.unfreeze()
    yield
    gc.unfreeze()


def _state_with(pods: int) -> Engine:
    engine = Engine()
    engine.add([node("n1", gpus=8), queue("q")])
    for i in range(pods):
        engine.add([podgroup(f"j{i}", queue="q"), pod(f"p{i}", group=f"j{i}", gpus=1)])
    return engine


def test_a_large_state_is_collected_then_frozen(
    unfrozen: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(memory, "LARGE_STATE", 3)
    engine = _state_with(3)
    garbage = weakref.ref(_Cyclic())  # garbage the collector has not seen yet
    assert settle(engine.state)
    assert garbage() is None  # collected before the freeze, not frozen with the rest
    # the state's objects no longer take part in collections; the engine still works on them
    assert gc.get_freeze_count() > 0
    assert id(engine.state.tasks) not in {id(o) for o in gc.get_objects()}
    assert len(engine.cycle().binds) == 3


def test_garbage_frozen_by_an_earlier_settle_is_collected_by_the_next(
    unfrozen: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(memory, "LARGE_STATE", 1)
    engine = _state_with(1)
    cyclic = _Cyclic()
    frozen = weakref.ref(cyclic)
    assert settle(engine.state)  # alive now: frozen with the rest
    del cyclic
    assert frozen() is not None  # a frozen cycle is never collected ...
    gc.collect()
    assert frozen() is not None
    assert settle(engine.state)  # ... until the next settle empties the permanent generation
    assert frozen() is None


def test_a_small_state_is_left_alone(unfrozen: None) -> None:
    engine = _state_with(3)
    assert len(engine.state.tasks) < memory.LARGE_STATE
    assert not settle(engine.state)
    assert gc.get_freeze_count() == 0


def test_a_long_running_process_freezes_its_imports_and_collects_young_objects_less_often(
    unfrozen: None,
) -> None:
    before = gc.get_threshold()
    imported = id(memory)  # a module: imported before the call, alive for good
    try:
        memory.long_running()
        assert gc.get_threshold() == (memory.YOUNG_EVERY, *before[1:])
        assert gc.get_freeze_count() > 0
        assert imported not in {id(o) for o in gc.get_objects()}
    finally:
        gc.set_threshold(*before)
