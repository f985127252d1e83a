"""Scenario files: built-ins load, overrides apply, matrices expand, bad input gets one clear line."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.kernel.errors import ConfigError
from harness.scenario import builtin_names, expand, load_scenario, parse_duration


def test_every_builtin_scenario_loads_and_expands() -> None:
    assert set(builtin_names()) >= {"herd", "split-brain", "rolling-restart", "partition-growth"}
    for name in builtin_names():
        s = load_scenario(name)
        assert s.name == name
        cases = expand(s)
        assert cases and all(isinstance(c.members, int) for c in cases)


def test_herd_matrix_is_the_members_axis() -> None:
    cases = expand(load_scenario("herd"))
    assert [c.params for c in cases] == [{"group.members": n} for n in (10, 25, 50)]
    assert [c.partitions for c in cases] == [10, 25, 50]  # partitions = "members"
    assert [a.action for a in cases[0].scenario.timeline] == ["join", "leave", "crash"]


def test_split_brain_matrix_crosses_both_mitigations() -> None:
    cases = expand(load_scenario("split-brain"))
    combos = {
        (c.scenario.group.legacy_zk.fenced_commits, c.scenario.group.legacy_zk.takeover_delay_ms)
        for c in cases
    }
    assert combos == {(False, 0), (False, 6000), (True, 0), (True, 6000)}


def test_set_overrides_any_key_with_toml_values() -> None:
    s = load_scenario(
        "herd",
        ["group.members=5", 'implementations=["coordinator"]', "workload.rate=50.5", "settle_window=500ms"],
    )
    assert s.group.members == 5
    assert s.implementations == ["coordinator"]
    assert s.workload.rate == 50.5
    assert s.settle_window == 0.5
    assert [c.members for c in expand(s)] == [5]


@pytest.mark.parametrize(
    ("value", "seconds"), [("500ms", 0.5), ("5s", 5.0), ("2m", 120.0), (3, 3.0), (1.5, 1.5), ("7", 7.0)]
)
def test_durations(value: object, seconds: float) -> None:
    assert parse_duration(value) == seconds


def _write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "s.toml"
    p.write_text(text)
    return p


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            'name = "x"\n[group]\nmembrs = 3\n',
            "group.membrs: unknown key (allowed: assignor, coordinator, id, legacy_zk, members)",
        ),
        (
            'name = "x"\n[group]\nmembers = "ten"\n',
            "group.members: expected a positive integer or a non-empty list of them (got 'ten')",
        ),
        (
            'name = "x"\n[topic]\npartitions = -1\n',
            "topic.partitions: expected a positive integer or 'members' (got -1)",
        ),
        (
            'name = "x"\n[group]\nmembers = 0\n',
            "group.members: expected a positive integer or a non-empty list of them (got 0)",
        ),
        (
            'name = "x"\n[[timeline]]\nat = "5 parsecs"\naction = "join"\n',
            "timeline[0].at: expected a duration like '5s' or '500ms' (got '5 parsecs')",
        ),
        (
            'name = "x"\n[[timeline]]\nat = "5s"\naction = "explode"\n',
            "timeline[0]: Input tag 'explode' found using 'action' does not match",
        ),
        (
            'name = "x"\n[[timeline]]\nat = "5s"\naction = "pause"\n',
            "timeline[0].duration: required key is missing",
        ),
        ('name = "x"\nimplementations = ["kafka"]\n', "implementations[0]"),
        (
            'name = "x"\n[group.coordinator]\nheartbeat_interval_ms = 7000\n',
            "heartbeat_interval_ms must be below session_timeout_ms",
        ),
        ('description = "no name"\n', "name: required key is missing"),
        ('name = "x"\nrepetitions = \n', "not valid TOML"),
    ],
)
def test_malformed_scenarios_give_one_line_naming_key_and_value(
    tmp_path: Path, text: str, expected: str
) -> None:
    path = _write(tmp_path, text)
    with pytest.raises(ConfigError) as info:
        load_scenario(path)
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith(str(path))
    assert expected in message


def test_unknown_scenario_name_lists_the_builtins() -> None:
    with pytest.raises(ConfigError, match="neither a scenario file nor a built-in scenario .*herd"):
        load_scenario("no-such-scenario")
    with pytest.raises(ConfigError, match="no such scenario file"):
        load_scenario("missing.toml")


@pytest.mark.parametrize("item", ["group.members", "=5", "group..members=1"])
def test_bad_set_syntax(item: str) -> None:
    with pytest.raises(ConfigError, match="--set"):
        load_scenario("herd", [item])


def test_set_through_a_non_table_is_refused() -> None:
    with pytest.raises(ConfigError, match="group.members is not a table"):
        load_scenario("herd", ["group.members.x=1"])
