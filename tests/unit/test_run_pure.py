"""The nemesis plan and the ownership view: pure logic, known answers."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from harness.kernel.errors import ConfigError
from harness.kernel.windows import evaluate
from harness.run.plan import Plan, check_spacing, make_plan
from harness.run.runner import RunOptions, run_scenario
from harness.scenario import expand, load_scenario
from harness.scenario.model import Scenario


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


def _migration(timeline: str, *more: str) -> Scenario:
    """A legacy_zk scenario of 3 members with ``timeline`` (a TOML array of inline tables)."""
    return load_scenario(
        "herd",
        ['implementations=["legacy_zk"]', "matrix={}", "group.members=3", f"timeline={timeline}", *more],
    )


def _steps(plan: Plan) -> list[tuple[object, ...]]:
    return [
        (s.at, s.kind, s.targets, s.trigger, s.member_kind, dict(s.props), s.migration, s.migration_step)
        for s in plan.steps
    ]


def test_set_property_restarts_each_legacy_member_in_turn_with_every_property_set_so_far() -> None:
    s = _migration(
        "[{at='5s', action='set_property', interval='3s', downtime='0.5s', properties={'offsets.storage'='kafka',"
        " 'dual.commit.enabled'=true}}, {at='20s', action='set_property', interval='4s', downtime='1s',"
        " properties={'dual.commit.enabled'=false}}]"
    )
    plan = make_plan(s, 3)
    on = {"offsets.storage": "kafka", "dual.commit.enabled": "true"}
    off = {"offsets.storage": "kafka", "dual.commit.enabled": "false"}  # the storage stays kafka
    assert _steps(plan) == [
        (5.0, "stop_member", ("m0",), True, None, {}, "set_property", 1),
        (5.5, "start_member", ("m0",), False, "legacy_zk", on, "set_property", 1),
        (8.0, "stop_member", ("m1",), True, None, {}, "set_property", 1),
        (8.5, "start_member", ("m1",), False, "legacy_zk", on, "set_property", 1),
        (11.0, "stop_member", ("m2",), True, None, {}, "set_property", 1),
        (11.5, "start_member", ("m2",), False, "legacy_zk", on, "set_property", 1),
        (20.0, "stop_member", ("m0",), True, None, {}, "set_property", 2),
        (21.0, "start_member", ("m0",), False, "legacy_zk", off, "set_property", 2),
        (24.0, "stop_member", ("m1",), True, None, {}, "set_property", 2),
        (25.0, "start_member", ("m1",), False, "legacy_zk", off, "set_property", 2),
        (28.0, "stop_member", ("m2",), True, None, {}, "set_property", 2),
        (29.0, "start_member", ("m2",), False, "legacy_zk", off, "set_property", 2),
    ]
    assert plan.final_kinds == {"m0": None, "m1": None, "m2": None}


def test_switch_all_at_once_stops_every_legacy_member_then_starts_as_many_coordinator_members() -> None:
    plan = make_plan(_migration("[{at='10s', action='switch', mode='all_at_once', downtime='1s'}]"), 3)
    assert _steps(plan) == [
        (10.0, "stop_member", ("m0", "m1", "m2"), True, None, {}, "switch", 1),
        (11.0, "start_member", ("c0", "c1", "c2"), False, "coordinator", {}, "switch", 1),
    ]
    assert plan.final_kinds == dict.fromkeys(("c0", "c1", "c2"), "coordinator")
    assert {s.mode for s in plan.steps} == {"all_at_once"}
    check_spacing(plan, 3.0)


def test_a_rolling_switch_replaces_one_member_per_interval_and_later_faults_pick_either_kind() -> None:
    # a join first (j0, the unit's kind), then the rolling switch of m0, m1, j0, then a leave of the
    # newest present member (a coordinator member now), then a rollback of the coordinator members left.
    s = _migration(
        "[{at='2s', action='join'}, {at='5s', action='set_property', interval='3s', downtime='1s',"
        " properties={'offsets.storage'='kafka'}}, {at='20s', action='leave', count=1, select='oldest'},"
        " {at='25s', action='switch', mode='rolling', interval='4s', downtime='0.5s'},"
        " {at='40s', action='leave', count=1, select='newest'},"
        " {at='45s', action='rollback', mode='rolling', interval='5s', downtime='2s',"
        " properties={'auto.commit.interval.ms'=500}}]",
        "settle_window='2s'",
    )
    plan = make_plan(s, 2)
    kafka = {"offsets.storage": "kafka"}
    assert _steps(plan) == [
        (2.0, "join", ("j0",), True, None, {}, None, None),
        (5.0, "stop_member", ("m0",), True, None, {}, "set_property", 1),
        (6.0, "start_member", ("m0",), False, "legacy_zk", kafka, "set_property", 1),
        (8.0, "stop_member", ("m1",), True, None, {}, "set_property", 1),
        (9.0, "start_member", ("m1",), False, "legacy_zk", kafka, "set_property", 1),
        (11.0, "stop_member", ("j0",), True, None, {}, "set_property", 1),
        (12.0, "start_member", ("j0",), False, "legacy_zk", kafka, "set_property", 1),
        (20.0, "leave", ("m0",), True, None, {}, None, None),
        (25.0, "stop_member", ("m1",), True, None, {}, "switch", 2),
        (25.5, "start_member", ("c0",), False, "coordinator", {}, "switch", 2),
        (29.0, "stop_member", ("j0",), True, None, {}, "switch", 2),
        (29.5, "start_member", ("c1",), False, "coordinator", {}, "switch", 2),
        (40.0, "leave", ("c1",), True, None, {}, None, None),
        (45.0, "stop_member", ("c0",), True, None, {}, "rollback", 3),
        (
            47.0,
            "start_member",
            ("r0",),
            False,
            "legacy_zk",
            {**kafka, "auto.commit.interval.ms": "500"},
            "rollback",
            3,
        ),
    ]
    assert plan.final_kinds == {"r0": "legacy_zk"}
    modes = {(s.migration, s.mode) for s in plan.steps if s.migration}
    assert modes == {("set_property", None), ("switch", "rolling"), ("rollback", "rolling")}
    check_spacing(plan, 2.0)


@pytest.mark.parametrize(
    ("timeline", "message"),
    [
        ("[{at='7s', action='rollback'}]", "rollback at 7s: no coordinator member is present to replace"),
        (
            "[{at='5s', action='switch'}, {at='9s', action='switch'}]",
            "switch at 9s: no legacy_zk member is present to replace",
        ),
        (
            "[{at='5s', action='switch'}, {at='9s', action='set_property', properties={'offsets.storage'='kafka'}}]",
            "set_property at 9s: no legacy_zk member is present to restart",
        ),
    ],
)
def test_a_migration_with_nothing_to_replace_is_refused_naming_the_action_and_its_time(
    timeline: str, message: str, tmp_path: Path
) -> None:
    s = _migration(timeline)
    with pytest.raises(ValueError, match=re.escape(message)):
        make_plan(s, 3)
    # the run refuses it before anything starts, as one line naming the scenario
    with pytest.raises(ConfigError, match=re.escape(f"scenario herd: {message}")) as e:
        run_scenario(s, RunOptions(out=tmp_path))
    assert "\n" not in str(e.value)
    assert not any(tmp_path.iterdir())


@pytest.mark.parametrize("name", ["migration", "migration-no-dual-commit", "migration-mixed"])
def test_the_builtin_migration_scenarios_plan_measurable_triggers_ending_with_coordinator_members(
    name: str,
) -> None:
    s = load_scenario(name)
    plan = make_plan(s, 3)
    check_spacing(plan, s.settle_window)
    assert plan.final_kinds == dict.fromkeys(("c0", "c1", "c2"), "coordinator")
    switch = [st for st in plan.steps if st.migration == "switch"]
    starts = [t for st in switch if st.kind == "start_member" for t in st.targets]
    assert starts == ["c0", "c1", "c2"]


def _protocol_migration(timeline: str, *more: str) -> Scenario:
    """A coordinator scenario of 3 members with ``timeline`` (a TOML array of inline tables)."""
    return load_scenario(
        "herd",
        ['implementations=["coordinator"]', "matrix={}", "group.members=3", f"timeline={timeline}", *more],
    )


def test_a_switch_to_the_consumer_protocol_replaces_classic_members_by_consumer_members_and_back() -> None:
    s = _protocol_migration(
        "[{at='5s', action='switch', to='consumer', mode='rolling', interval='4s', downtime='0.5s'},"
        " {at='20s', action='leave', count=1, select='oldest'},"
        " {at='25s', action='rollback', to='coordinator', mode='all_at_once', downtime='1s'}]",
        "settle_window='2s'",
    )
    plan = make_plan(s, 3)
    # by hand: m0, m1, m2 (the unit's classic members) replaced in turn by k0, k1, k2 of kind consumer; the
    # leave takes the oldest present (k0); the rollback replaces k1 and k2 by classic members r0, r1
    assert _steps(plan) == [
        (5.0, "stop_member", ("m0",), True, None, {}, "switch", 1),
        (5.5, "start_member", ("k0",), False, "consumer", {}, "switch", 1),
        (9.0, "stop_member", ("m1",), True, None, {}, "switch", 1),
        (9.5, "start_member", ("k1",), False, "consumer", {}, "switch", 1),
        (13.0, "stop_member", ("m2",), True, None, {}, "switch", 1),
        (13.5, "start_member", ("k2",), False, "consumer", {}, "switch", 1),
        (20.0, "leave", ("k0",), True, None, {}, None, None),
        (25.0, "stop_member", ("k1", "k2"), True, None, {}, "rollback", 2),
        (26.0, "start_member", ("r0", "r1"), False, "coordinator", {}, "rollback", 2),
    ]
    assert plan.final_kinds == {"r0": "coordinator", "r1": "coordinator"}
    check_spacing(plan, 2.0)
    with pytest.raises(
        ValueError, match=re.escape("rollback at 7s: no consumer member is present to replace")
    ):
        make_plan(_protocol_migration("[{at='7s', action='rollback', to='coordinator'}]"), 3)


@pytest.mark.parametrize(
    ("name", "members", "final"),
    [
        ("migration-consumer", 3, dict.fromkeys(("k0", "k1", "k2"), "consumer")),
        ("migration-consumer-back", 3, dict.fromkeys(("r0", "r1", "r2"), "coordinator")),
        ("migration-consumer-zombie", 2, dict.fromkeys(("k0", "k1"), "consumer")),
    ],
)
def test_the_builtin_protocol_migrations_plan_measurable_triggers(
    name: str, members: int, final: dict[str, str]
) -> None:
    s = load_scenario(name)
    assert s.implementations == ["coordinator"] and s.group.members == members
    plan = make_plan(s, members)
    check_spacing(plan, s.settle_window)
    assert plan.final_kinds == final


def _switch_history(migration: dict[str, object]) -> list[dict[str, object]]:
    """Two legacy members own partitions 0 and 1; at 1 s both are stopped (``migration`` fields on
    the stop and on the start of c0, c1 at 1.5 s); c0 and c1 are ready at 2.0 / 2.1 s, get one
    partition each at 5 s; settling ends at 8 s. Times in seconds after ``stable`` (t = 0)."""
    base = 1_000_000_000_000

    def ev(t: float, source: str, role: str, kind: str, **f: object) -> dict[str, object]:
        return {"ts_ns": base + round(t * 1e9), "source": source, "role": role, "kind": kind, **f}

    def nem(t: float, kind: str, action: str, targets: list[str], trigger: bool) -> dict[str, object]:
        return ev(t, "nemesis", "nemesis", kind, action=action, targets=targets, trigger=trigger, **migration)

    es = [ev(-2.0, "nemesis", "harness", "unit_start", partitions=2)]
    for t, m, p in ((-1.0, "m0", 0), (-1.0, "m1", 1), (5.0, "c0", 0), (5.0, "c1", 1)):
        es += [ev(t - 0.5, m, "member", "rebalance_begin"), ev(t, m, "member", "assigned", partition=p)]
        es.append(ev(t, m, "member", "rebalance_end", outcome="ok"))
    es += [ev(0.0, "nemesis", "harness", "stable")]
    es += [nem(1.0, "invoke", "stop_member", ["m0", "m1"], True)]
    es += [
        ev(1.05, m, "member", k, **({"partition": p} if k == "revoked" else {}))
        for m, p in (("m0", 0), ("m1", 1))
        for k in ("revoked", "stopped")
    ]
    es += [nem(1.1, "complete", "stop_member", ["m0", "m1"], True)]
    es += [nem(1.5, "invoke", "start_member", ["c0", "c1"], False)]
    es += [ev(2.0, "c0", "member", "ready"), ev(2.1, "c1", "member", "ready")]
    es += [nem(2.1, "complete", "start_member", ["c0", "c1"], False)]
    es += [ev(8.0, "nemesis", "harness", "settling_end")]
    return es


def test_a_switch_trigger_settles_once_its_replacements_are_live_not_the_stopped_members() -> None:
    facts = evaluate(_switch_history({"migration": "switch", "migration_step": 1}), int(2e9))
    (t,) = facts.triggers
    assert t.replacements == ["c0", "c1"]
    # first reaction: c0's rebalance_begin at 4.5 s; owned once from 5.0 s, no change for 2 s, and
    # 5.0 + 2 <= 8 (settling_end): t1 = 5.0 s, latency 4.0 s after the stop at 1.0 s
    assert t.outcome == "settled"
    assert (t.react_ns - t.t0_ns, t.t1_ns - t.t0_ns) == (3_500_000_000, 4_000_000_000)
    # the same history without the migration labels reads as a rolling restart whose stopped members
    # never came back: never settled
    (plain,) = evaluate(_switch_history({}), int(2e9)).triggers
    assert plain.replacements is None and plain.outcome == "never"
