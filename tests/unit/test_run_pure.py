"""The nemesis plan and the ownership view: pure logic, known answers."""

from __future__ import annotations

import pytest

from harness.run.plan import check_spacing, make_plan
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


def test_rolling_restart_stops_and_starts_every_member_in_turn_one_trigger_each() -> None:
    s = expand(load_scenario("rolling-restart", ["group.members=3"]))[0].scenario
    plan = make_plan(s, 3)
    # interval 15 s, downtime 2 s; the restart belongs to the stop's (compound) window
    assert [(st.at, st.kind, st.targets, st.trigger) for st in plan.steps] == [
        (5.0, "stop_member", ("m0",), True),
        (7.0, "start_member", ("m0",), False),
        (20.0, "stop_member", ("m1",), True),
        (22.0, "start_member", ("m1",), False),
        (35.0, "stop_member", ("m2",), True),
        (37.0, "start_member", ("m2",), False),
    ]
    check_spacing(plan, s.settle_window)  # 15 s between triggers, settle window 3 s


def test_triggers_closer_than_the_settle_window_are_refused_naming_both() -> None:
    s = load_scenario(
        "herd",
        [
            "group.members=4",
            "settle_window='3s'",
            "timeline=[{at='5s', action='join', count=1}, {at='7s', action='crash', count=1}]",
        ],
    )
    plan = make_plan(s, 4)
    with pytest.raises(
        ValueError, match=r"join at 5s and crash at 7s are 2s apart, less than the settle window \(3s\)"
    ):
        check_spacing(plan, 3.0)
    # a pause's own resume is not a trigger: a 1 s pause next to nothing else is fine
    p = load_scenario(
        "herd", ["group.members=4", "timeline=[{at='5s', action='pause', count=1, duration='1s'}]"]
    )
    check_spacing(make_plan(p, 4), 3.0)


def test_a_timeline_that_removes_more_members_than_exist_is_refused() -> None:
    s = load_scenario("herd", ["group.members=1", "timeline=[{at='1s', action='crash', count=2}]"])
    with pytest.raises(ValueError, match="wants 2 members but only 1"):
        make_plan(s, 1)
