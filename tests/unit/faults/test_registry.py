"""The one registry of actions (harness.kernel.actions) against everything that speaks the vocabulary: the
nemesis classes, the scenario model's typed entries and the random nemesis's typed names, the plan's steps
and the steps that end its faults, the history contract's member effects, the failover analysis's faults and
the toxic kinds."""

from __future__ import annotations

import typing
from typing import Any, get_args

import pytest

from harness.analysis import failover_verdict
from harness.faults import toxics
from harness.faults.actions import REGISTRY
from harness.kernel import actions, events
from harness.kernel.actions import SPECS, ending, spec
from harness.run.plan import make_plan
from harness.scenario import model
from harness.scenario.model import Scenario


def _timeline_classes() -> dict[str, type[Any]]:
    """The scenario model's timeline entry classes by their ``action`` tag."""
    union = get_args(model.Action)[0]
    out: dict[str, type[Any]] = {}
    for cls in get_args(union):
        (tag,) = get_args(cls.model_fields["action"].annotation)
        out[tag] = cls
    return out


def test_every_step_action_has_one_nemesis_class_and_no_class_is_outside_the_registry() -> None:
    assert set(REGISTRY) == {s.name for s in SPECS if s.step}
    assert all(cls.action == name for name, cls in REGISTRY.items())


def test_the_scenario_models_timeline_entries_are_the_registrys_timeline_actions() -> None:
    assert set(_timeline_classes()) == set(actions.TIMELINE_ACTIONS)


def test_the_random_nemesis_names_are_the_registrys_random_actions() -> None:
    assert set(typing.get_args(model.RandomAction)) == set(actions.RANDOM_ACTIONS)


@pytest.mark.parametrize("name", [s.name for s in SPECS if s.timeline])
def test_an_entrys_keys_are_what_its_spec_says(name: str) -> None:
    fields = set(_timeline_classes()[name].model_fields)
    s = spec(name)
    assert ({"count", "select"} <= fields) == s.chooses
    assert ("duration" in fields) == (s.length == "duration")
    assert ("downtime" in fields) == (s.length == "downtime")


@pytest.mark.parametrize("impl", ["legacy_zk", "coordinator", "consumer"])
def test_a_nemesis_applies_exactly_where_its_spec_says(impl: str) -> None:
    for name, cls in REGISTRY.items():
        applies = cls(target="broker").applicable(impl) is None
        assert applies == (impl in spec(name).applies_to), name


def test_every_fault_is_ended_by_a_step_that_is_not_a_trigger() -> None:
    for s in SPECS:
        if s.ended_by is not None:
            end = spec(s.ended_by)
            assert s.trigger and end.step and not end.trigger, s.name


def test_a_plans_steps_take_their_trigger_from_the_registry() -> None:
    scenario = Scenario.model_validate(
        {
            "name": "t",
            "group": {"members": 3},
            "timeline": [
                {"action": "pause", "at": "5s", "duration": "3s"},
                {"action": "cut", "at": "20s", "target": "broker", "duration": "2s"},
                {"action": "rolling_restart", "at": "40s", "interval": "10s", "downtime": "1s"},
            ],
        }
    )
    plan = make_plan(scenario, 3)
    # worked out by hand: pause 5 / resume 8, cut 20 / heal 22, per member a stop (trigger) and its start
    # one second later, ten seconds apart
    assert [(st.at, st.kind, st.trigger) for st in plan.steps] == [
        (5.0, "pause", True),
        (8.0, "resume", False),
        (20.0, "cut", True),
        (22.0, "heal", False),
        (40.0, "stop_member", True),
        (41.0, "start_member", False),
        (50.0, "stop_member", True),
        (51.0, "start_member", False),
        (60.0, "stop_member", True),
        (61.0, "start_member", False),
    ]


def test_a_stall_is_planned_on_chosen_members_and_ended_by_an_unstall_its_duration_later() -> None:
    scenario = Scenario.model_validate(
        {
            "name": "t",
            "group": {"members": 3},
            "timeline": [{"action": "stall", "at": "5s", "count": 2, "select": "oldest", "duration": "4s"}],
        }
    )
    plan = make_plan(scenario, 3)
    # worked out by hand: the two oldest of m0 m1 m2; the stall (a trigger, value = its duration) at 5 s,
    # the unstall (not a trigger) at 5 + 4 = 9 s; both members run in a process of their own
    assert [(st.at, st.kind, st.targets, st.value, st.trigger) for st in plan.steps] == [
        (5.0, "stall", ("m0", "m1"), 4.0, True),
        (9.0, "unstall", ("m0", "m1"), None, False),
    ]
    assert plan.isolated == {"m0", "m1"}
    # the poll timer's fault: coordinator-kind members, of classic and consumer units alike
    assert spec("stall").applies_to == spec("unstall").applies_to == ("coordinator", "consumer")


def test_an_unknown_action_is_a_key_error_naming_it() -> None:
    with pytest.raises(KeyError, match="unknown nemesis action 'explode'"):
        spec("explode")


def test_ending_is_the_step_that_ends_a_fault_and_refuses_one_that_ends_by_itself() -> None:
    assert ending("pause") == "resume"
    assert ending("stall") == "unstall"
    assert ending("latency") == "remove_toxic"
    assert ending("kill_coordinator") == "restart_coordinator"
    with pytest.raises(ValueError, match="'crash' ends by itself"):
        ending("crash")
    with pytest.raises(KeyError, match="unknown nemesis action 'explode'"):
        ending("explode")


def test_a_plan_ends_each_lasting_fault_with_the_step_its_spec_names() -> None:
    scenario = Scenario.model_validate(
        {
            "name": "t",
            "group": {"members": 2},
            "cluster": {"brokers": 3},
            "timeline": [
                {"action": "timeout", "at": "5s", "target": "broker", "duration": "1s"},
                {"action": "kill_zk_leader", "at": "10s", "downtime": "2s"},
                {"action": "pause_zk_leader", "at": "20s", "duration": "3s"},
                {"action": "kill_coordinator", "at": "30s", "downtime": "4s"},
                {"action": "pause_coordinator", "at": "40s", "duration": "5s"},
                {"action": "cut_coordinator", "at": "50s", "duration": "6s"},
                {"action": "cut_broker_zk", "at": "60s", "duration": "7s"},
            ],
        }
    )
    # worked out by hand: each fault at its time, its ending step its duration / downtime later
    assert [(st.at, st.kind) for st in make_plan(scenario, 2).steps] == [
        (5.0, "timeout"),
        (6.0, "remove_toxic"),
        (10.0, "kill_zk_leader"),
        (12.0, "restart_zk_server"),
        (20.0, "pause_zk_leader"),
        (23.0, "resume_zk_server"),
        (30.0, "kill_coordinator"),
        (34.0, "restart_coordinator"),
        (40.0, "pause_coordinator"),
        (45.0, "resume_coordinator"),
        (50.0, "cut_coordinator"),
        (56.0, "heal_coordinator"),
        (60.0, "cut_broker_zk"),
        (67.0, "heal_broker_zk"),
    ]


def test_the_member_effects_of_the_history_contract_are_the_registrys() -> None:
    assert set(events.JOIN_ACTIONS) == {"join", "start_member"}
    assert set(events.DOWN_ACTIONS) == {"crash", "leave", "stop_member"}
    assert set(events.SUSPEND_ACTIONS) == {"pause", "stall", "cut"}
    assert set(events.UNSUSPEND_ACTIONS) == {"resume", "unstall", "heal"}


def test_the_failover_analysis_reads_each_fault_with_the_step_that_ends_it() -> None:
    assert failover_verdict.FAULTS == {
        "kill_coordinator": "restart_coordinator",
        "pause_coordinator": "resume_coordinator",
        "cut_coordinator": "heal_coordinator",
        "kill_zk_leader": "restart_zk_server",
        "pause_zk_leader": "resume_zk_server",
    }


def test_the_toxic_kinds_and_the_scenarios_coordinator_faults_are_the_registrys() -> None:
    assert toxics.TOXICS == ("latency", "bandwidth", "reset_peer", "slow_close", "timeout", "limit_data")
    assert model.COORDINATOR_FAULTS == ("kill_coordinator", "pause_coordinator", "cut_coordinator")


def test_every_action_applies_to_consumer_units_exactly_where_it_applies_to_coordinator_units() -> None:
    # a consumer unit's members are coordinator-kind: its faults are the coordinator's, and the legacy-only
    # ones (expire, the migrations) are skipped with the coordinator's reason
    for s in SPECS:
        assert ("consumer" in s.applies_to) == ("coordinator" in s.applies_to), s.name
    for name, cls in REGISTRY.items():
        assert cls(target="zookeeper").applicable("consumer") == cls(target="zookeeper").applicable(
            "coordinator"
        ), name
    assert REGISTRY["expire"]().applicable("consumer") == "ZooKeeper sessions exist only on the legacy side"
