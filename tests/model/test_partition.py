"""Scheduling-shard partitions as KAI's scheduler reads them (conf/scheduler_conf.go
GetLabelSelector: Equals the value, DoesNotExist without one, everything without a key)."""

from __future__ import annotations

from pykai.model.constants import NODE_POOL_LABEL
from pykai.model.partition import Partition, pool_of


def test_a_valued_partition_selects_its_label_value() -> None:
    shard = Partition(value="a")
    assert shard.selector() == f"{NODE_POOL_LABEL}=a"


def test_the_default_partition_holds_what_carries_no_label() -> None:
    shard = Partition()
    assert shard.selector() == f"!{NODE_POOL_LABEL}"


def test_no_label_key_holds_everything() -> None:
    shard = Partition(key="")
    assert shard.selector() == ""


def test_pool_of_reads_the_label_and_ignores_what_is_not_text() -> None:
    assert pool_of({NODE_POOL_LABEL: "a"}) == "a"
    assert pool_of({NODE_POOL_LABEL: ""}) == "default"
    assert pool_of({NODE_POOL_LABEL: 3}) == "default"
    assert pool_of(None) == "default"
