"""The rebalance plan: eager release, claims, and takeover detection (pure)."""

from __future__ import annotations

import pytest

from legacy_zk.assignors import AssignmentError, View
from legacy_zk.ids import ThreadId, TopicPartition
from legacy_zk.plan import plan_rebalance, vanished_owners


def view(members: list[str], partitions: int = 4) -> View:
    return View(tuple(sorted(members)), {m: {"t": 1} for m in members}, {"t": tuple(range(partitions))})


def tp(p: int) -> TopicPartition:
    return TopicPartition("t", p)


def test_first_plan_claims_everything_for_a_lone_member() -> None:
    plan = plan_rebalance(view(["a"]), "a", "range", owned=set())
    assert plan.release == ()
    assert plan.claim == {tp(p): ThreadId("a", 0) for p in range(4)}
    assert (
        plan.gained == {tp(0), tp(1), tp(2), tp(3)} and not plan.kept and not plan.lost and not plan.takeover
    )


def test_a_join_makes_the_old_member_release_all_and_keep_half() -> None:
    plan = plan_rebalance(
        view(["a", "b"]), "a", "range", owned={tp(0), tp(1), tp(2), tp(3)}, previous=view(["a"])
    )
    assert plan.release == (tp(0), tp(1), tp(2), tp(3))  # eager: everything is released first
    assert set(plan.claim) == {tp(0), tp(1)}
    assert plan.kept == {tp(0), tp(1)} and plan.lost == {tp(2), tp(3)} and not plan.gained
    assert not plan.takeover  # nobody vanished


def test_partitions_of_a_vanished_owner_are_takeovers() -> None:
    before = view(["a", "b"])
    plan = plan_rebalance(view(["a"]), "a", "range", owned={tp(0), tp(1)}, previous=before)
    assert plan.gained == {tp(2), tp(3)}
    assert plan.takeover == {tp(2), tp(3)}


def test_moves_between_live_members_are_not_takeovers() -> None:
    # b joins: c's partitions shift to b, but c is still registered
    before = view(["a", "c"])
    plan = plan_rebalance(view(["a", "b", "c"]), "b", "range", owned=set(), previous=before)
    assert plan.gained and not plan.takeover


def test_no_previous_view_means_no_known_owner() -> None:
    assert vanished_owners(None, view(["a"]), "range", {tp(0)}) == frozenset()


def test_an_assignor_error_fails_the_plan() -> None:
    v = View(("a", "b"), {"a": {"x": 1}, "b": {"y": 1}}, {"x": (0,), "y": (0,)})
    with pytest.raises(AssignmentError):
        plan_rebalance(v, "a", "roundrobin", owned=set())
