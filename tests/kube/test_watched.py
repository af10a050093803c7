"""The kinds ``pykai run`` lists first (what the decisions and controllers read) and later
(what only Kueue's pass reads, which waits for all of them)."""

from __future__ import annotations

import pytest

from pykai.kube.runner import DEFAULT_COMPONENTS
from pykai.kube.watched import (
    EMBEDDED_ONLY,
    ENGINE_KINDS,
    KUEUE_ONLY,
    NEEDS,
    first_kinds,
    later_kinds,
    parse_components,
)
from pykai.round.steps import COMPONENTS


def test_every_component_names_its_kinds() -> None:
    """Every component of a round but the embedded cluster's stand-ins for a kubelet and for
    KubeRay, which a real cluster has (and ``pykai run`` refuses by name)."""
    assert tuple(NEEDS) == tuple(c for c in COMPONENTS if c not in EMBEDDED_ONLY)
    assert set(EMBEDDED_ONLY) == {"kubelet", "kuberay"}
    for name in EMBEDDED_ONLY:
        with pytest.raises(ValueError, match=f"{name} is a stand-in of the embedded cluster only"):
            parse_components(f"scheduler,{name}")


def test_the_decisions_kinds_come_first_and_kueues_later() -> None:
    first, later = first_kinds(DEFAULT_COMPONENTS), later_kinds(DEFAULT_COMPONENTS)
    assert set(ENGINE_KINDS) <= set(first)
    assert {"ReplicaSet", "Job", "RayJob"} <= set(first)  # the pod-grouper's owners
    assert set(later) == set(KUEUE_ONLY)
    assert not set(first) & set(later)


def test_a_kind_another_component_reads_is_not_deferred() -> None:
    chosen = frozenset({"scheduler", "provisioning"})
    assert {"ProvisioningRequest", "PodTemplate"} <= set(first_kinds(chosen))
    assert not {"ProvisioningRequest", "PodTemplate"} & set(later_kinds(chosen))


def test_without_the_scheduler_nothing_is_listed_for_kueue() -> None:
    chosen = frozenset({"queuecontroller", "podgroupcontroller"})
    assert later_kinds(chosen) == []
    assert not set(first_kinds(chosen)) & set(KUEUE_ONLY)


def test_an_unknown_component_is_named() -> None:
    with pytest.raises(ValueError, match=r"unknown component.*shceduler"):
        parse_components("shceduler,binder")
    assert parse_components(" scheduler, binder ") == {"scheduler", "binder"}
