"""The nemesis plan and the ownership view: pure logic, known answers."""

from __future__ import annotations

import pytest

from harness.run.ownership import Ownership
from harness.run.plan import make_plan
from harness.scenario import expand, load_scenario


def test_herd_plan_joins_a_new_member_then_removes_two_of_the_present_ones() -> None:
    case = expand(load_scenario("herd", ["group.members=4"]))[0]
    plan = make_plan(case.scenario, case.members)
    assert plan.initial == ["m0", "m1", "m2", "m3"]
    assert [(s.at, s.kind) for s in plan.steps] == [(5.0, "join"), (25.0, "leave"), (45.0, "crash")]
    assert plan.steps[0].targets == ("j0",)
    left, crashed = plan.steps[1].targets[0], plan.steps[2].targets[0]
    assert left != crashed and {left, crashed} <= {"m0", "m1", "m2", "m3", "j0"}
    assert plan.isolated == {crashed}


def test_plan_is_the_same_for_the_same_seed_and_differs_with_another() -> None:
    s = expand(load_scenario("herd", ["group.members=20"]))[0].scenario
    a, b = make_plan(s, 20, seed=1), make_plan(s, 20, seed=1)
    assert a.steps == b.steps
    assert any(make_plan(s, 20, seed=k).steps != a.steps for k in range(2, 10))


def test_pause_and_cut_get_their_healing_steps_and_proxies() -> None:
    s = expand(load_scenario("split-brain"))[0].scenario
    plan = make_plan(s, 3)
    kinds = [(s.at, s.kind, s.target) for s in plan.steps]
    assert kinds == [
        (5.0, "pause", None),
        (15.0, "resume", None),
        (35.0, "cut", "zookeeper"),
        (45.0, "heal", "zookeeper"),
        (65.0, "cut", "broker"),
        (75.0, "heal", "broker"),
    ]
    assert not plan.steps[1].trigger
    assert set().union(*plan.proxied.values()) == {"zookeeper", "broker"}


def test_rolling_restart_stops_and_starts_every_member_in_turn() -> None:
    s = expand(load_scenario("rolling-restart", ["group.members=3"]))[0].scenario
    plan = make_plan(s, 3)
    assert [(st.at, st.kind, st.targets) for st in plan.steps] == [
        (5.0, "stop_member", ("m0",)),
        (7.0, "start_member", ("m0",)),
        (13.0, "stop_member", ("m1",)),
        (15.0, "start_member", ("m1",)),
        (21.0, "stop_member", ("m2",)),
        (23.0, "start_member", ("m2",)),
    ]


def test_a_timeline_that_removes_more_members_than_exist_is_refused() -> None:
    s = load_scenario("herd", ["group.members=1", "timeline=[{at='1s', action='crash', count=2}]"])
    with pytest.raises(ValueError, match="wants 2 members but only 1"):
        make_plan(s, 1)


def _ev(ts: float, kind: str, source: str, **kw) -> dict:
    return {"ts_ns": int(ts * 1e9), "kind": kind, "source": source, **kw}


def test_ownership_settles_only_when_each_partition_has_one_live_owner_for_the_window() -> None:
    o = Ownership(partitions=2)
    o.apply_all([_ev(0, "started", "a"), _ev(0, "started", "b"), _ev(1, "assigned", "a", partition=0)])
    assert not o.owned_once()
    o.apply(_ev(2, "assigned", "b", partition=1))
    assert o.owned_once()
    assert not o.settled(int(3e9), window_s=3)
    assert o.settled(int(5e9), window_s=3)
    # A second claimant (a zombie that has not noticed) unsettles the group.
    o.apply(_ev(6, "assigned", "b", partition=0))
    assert o.owners()[0] == ["a", "b"] and not o.settled(int(60e9), window_s=3)
    o.apply(_ev(7, "revoked", "a", partition=0))
    assert o.settled(int(10e9), window_s=3)


def test_crash_and_stop_drop_claims_and_producer_start_is_not_a_member() -> None:
    o = Ownership(partitions=1)
    o.apply_all(
        [
            _ev(0, "started", "producer", role="producer"),
            _ev(0, "started", "a"),
            _ev(0, "assigned", "a", partition=0),
        ]
    )
    assert o.live == {"a"} and o.owned_once()
    o.apply({"ts_ns": int(1e9), "kind": "nemesis", "action": "crash", "targets": ["a"], "source": "nemesis"})
    assert o.owners() == {} and not o.live
    o.apply_all([_ev(2, "started", "b"), _ev(2, "assigned", "b", partition=0), _ev(3, "stopped", "b")])
    assert o.owners() == {}


def test_added_partitions_must_be_owned_too() -> None:
    o = Ownership(partitions=1)
    o.apply_all([_ev(0, "started", "a"), _ev(0, "assigned", "a", partition=0)])
    o.apply(
        {
            "ts_ns": int(1e9),
            "kind": "nemesis",
            "action": "add_partitions",
            "partitions": 2,
            "source": "nemesis",
        }
    )
    assert not o.owned_once()
    o.apply(_ev(2, "assigned", "a", partition=1))
    assert o.owned_once()


def test_a_paused_member_does_not_count_until_resumed_and_then_counts_as_a_second_claimant() -> None:
    o = Ownership(partitions=1)
    o.apply_all([_ev(0, "started", "a"), _ev(0, "started", "b"), _ev(0, "assigned", "a", partition=0)])
    assert o.owned_once()
    o.apply({"ts_ns": int(10e9), "kind": "nemesis", "action": "pause", "targets": ["a"], "source": "nemesis"})
    assert not o.owned_once()  # nobody who can act owns partition 0
    o.apply(_ev(16, "assigned", "b", partition=0))  # b took over after a's session expired
    assert o.settled(int(20e9), window_s=3)
    o.apply(
        {"ts_ns": int(21e9), "kind": "nemesis", "action": "resume", "targets": ["a"], "source": "nemesis"}
    )
    assert o.owners()[0] == ["a", "b"] and not o.owned_once()
    o.apply(_ev(22, "revoked", "a", partition=0))
    assert o.owned_once()


def test_joined_means_a_completed_rebalance_and_is_forgotten_on_stop() -> None:
    o = Ownership(partitions=1)
    o.apply_all([_ev(0, "started", "a"), _ev(0, "started", "b"), _ev(1, "assigned", "a", partition=0)])
    o.apply(_ev(1, "rebalance_end", "a", outcome="ok"))
    o.apply(_ev(1, "rebalance_end", "b", outcome="exhausted"))
    assert o.joined == {"a"}
    o.apply(_ev(2, "rebalance_end", "b", outcome="ok"))
    assert o.joined == {"a", "b"}
    o.apply(_ev(3, "stopped", "b"))
    assert o.joined == {"a"}
