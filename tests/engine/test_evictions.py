"""What the cycle says of each eviction as facts: the action that evicted (KAI's name) and the
job it made room for, set by the engine where they are known, never read back from the text."""

from __future__ import annotations

from pykai.engine.decisions import Evict
from pykai.model.builders import node, queue
from tests.engine.conftest import Engine, gang
from tests.engine.test_consolidation import fragmented
from tests.engine.test_preempt import pending, running_gang


def facts(evictions: list[Evict]) -> set[tuple[str, str, str]]:
    return {(e.reason, e.action, e.preemptor) for e in evictions}


def test_preempt_names_itself_and_the_preemptor(engine: Engine) -> None:
    engine.add([node("n1", gpus=2), queue("q")])
    engine.add(running_gang("train", 2, gpus=1, node_name="n1"))
    engine.add(pending("serve", gpus=1, priority="inference"))
    assert facts(engine.cycle().evictions) == {("Preempted", "preempt", "default/serve")}


def test_reclaim_names_itself_and_the_reclaimer(engine: Engine) -> None:
    # queue a deserves the whole node and has nothing; b deserves none and holds it all
    engine.add([node("n1", gpus=4), queue("a", gpu=(4, -1, 1)), queue("b", gpu=(0, -1, 1))])
    engine.add(gang("squatter", 1, gpus=4, queue_name="b", node_name="n1"))
    engine.add(gang("owner", 1, gpus=4, queue_name="a"))
    assert facts(engine.cycle().evictions) == {("Reclaimed", "reclaim", "default/owner")}


def test_consolidation_names_itself_and_the_job_it_makes_room_for(engine: Engine) -> None:
    fragmented(engine)
    assert facts(engine.cycle().evictions) == {("Consolidated", "consolidation", "default/big")}


def test_a_stale_gang_is_evicted_for_no_one(engine: Engine) -> None:
    engine.add([node("n1", gpus=4), queue("q")])
    engine.add(running_gang("g", 3, gpus=1, node_name="n1"))
    engine.state.remove("Pod", "default", "g-2")
    engine.cycle()  # g is below its minimum from now
    engine.now += 61  # past the default grace
    assert facts(engine.cycle().evictions) == {("StaleGang", "stalegangeviction", "")}


def test_an_eviction_made_by_hand_takes_its_reasons_action() -> None:
    """A decision built without the action (a scripted scheduler's) gets the one that gives
    its reason."""
    made = Evict("default", "p", "uid-p", "default/g", "Reclaimed", "by hand")
    assert (made.action, made.preemptor) == ("reclaim", "")
