"""Scenario files: built-ins load, overrides apply, matrices expand, bad input gets one clear line."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.kernel.errors import ConfigError
from harness.scenario import builtin_names, expand, load_scenario, parse_duration
from harness.scenario.model import Switch
from harness.scenario.positions import key_lines, line_of


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


def _assert_one_line_error(tmp_path: Path, text: str, expected: str) -> None:
    """Loading the scenario ``text`` fails with one line that names the file and contains ``expected``."""
    path = _write(tmp_path, text)
    with pytest.raises(ConfigError) as info:
        load_scenario(path)
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith(str(path))
    assert expected in message


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            'name = "x"\n[group]\nmembrs = 3\n',
            "line 3: group.membrs: unknown key; did you mean 'members'? (allowed: assignor, consumer, coordinator, id, legacy_zk, members)",
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
            "line 3: timeline entry 1, at: expected a duration like '5s' or '500ms' (got '5 parsecs')",
        ),
        (
            'name = "x"\n[[timeline]]\nat = "5s"\naction = "explode"\n',
            "line 4: timeline entry 1: unknown action 'explode'; did you mean 'expire'? (one of: join, leave, crash,",
        ),
        (
            'name = "x"\n[[timeline]]\nat = "5s"\naction = "pause"\n',
            "line 2: timeline entry 1, duration: required key is missing",
        ),
        (
            'name = "x"\nimplementations = ["kafka"]\n',
            "line 2: implementations entry 1: Input should be 'legacy_zk', 'coordinator' or 'consumer' (got 'kafka')",
        ),
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
    _assert_one_line_error(tmp_path, text, expected)


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


_LEGACY = 'name = "x"\nimplementations = ["legacy_zk"]\n'


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            _LEGACY
            + '[[timeline]]\nat = "5s"\naction = "set_property"\nproperties = { "offsets.storag" = "kafka" }\n',
            "timeline entry 1, properties: unknown legacy_zk property 'offsets.storag'",
        ),
        (
            _LEGACY + '[[timeline]]\nat = "5s"\naction = "rollback"\nproperties = { "group.id" = "other" }\n',
            "timeline entry 1, properties: property 'group.id' is set by the harness for every member",
        ),
        (
            _LEGACY
            + '[[timeline]]\nat = "5s"\naction = "set_property"\nproperties = { "offsets.storage" = "disk" }\n',
            "property 'offsets.storage' must be zookeeper or kafka (got 'disk')",
        ),
        (
            _LEGACY
            + '[[timeline]]\nat = "5s"\naction = "set_property"\nproperties = { "dual.commit.enabled" = 1 }\n',
            "property 'dual.commit.enabled' must be true or false (got 1)",
        ),
        (
            _LEGACY + '[[timeline]]\nat = "5s"\naction = "set_property"\nproperties = {}\n',
            "timeline entry 1, properties",
        ),
        (
            _LEGACY + '[[timeline]]\nat = "5s"\naction = "switch"\nmode = "sideways"\n',
            "timeline entry 1, mode",
        ),
        (
            'name = "x"\n[[timeline]]\nat = "5s"\naction = "switch"\n',
            'timeline actions switch migrate a legacy_zk group: they need implementations = ["legacy_zk"]',
        ),
        (
            'name = "x"\nimplementations = ["coordinator"]\n[[timeline]]\nat = "5s"\naction = "rollback"\n',
            'timeline actions rollback migrate a legacy_zk group: they need implementations = ["legacy_zk"]',
        ),
        (_LEGACY + '[migration]\nexpect = "fine"\n', "migration.expect"),
        (_LEGACY + '[group.legacy_zk]\noffsets_storage = "hdfs"\n', "group.legacy_zk.offsets_storage"),
    ],
)
def test_malformed_migrations_give_one_line_naming_key_and_value(
    tmp_path: Path, text: str, expected: str
) -> None:
    _assert_one_line_error(tmp_path, text, expected)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            _LEGACY + '[[timeline]]\nat = "5s"\naction = "switch"\nto = "consumer"\n',
            'they need implementations = ["coordinator"]',
        ),
        (
            'name = "x"\nimplementations = ["coordinator"]\n[[timeline]]\nat = "5s"\naction = "switch"\n'
            'to = "consumer"\n[[timeline]]\nat = "20s"\naction = "rollback"\n',
            "not both",
        ),
        (
            'name = "x"\nimplementations = ["coordinator"]\n[[timeline]]\nat = "5s"\naction = "switch"\n'
            'to = "legacy_zk"\n',
            "to",
        ),
    ],
)
def test_malformed_protocol_migrations_give_one_line(tmp_path: Path, text: str, expected: str) -> None:
    _assert_one_line_error(tmp_path, text, expected)


def test_migration_keys_and_actions_load_with_their_defaults(tmp_path: Path) -> None:
    s = load_scenario(
        _write(
            tmp_path,
            _LEGACY
            + '[group.legacy_zk]\noffsets_storage = "kafka"\ndual_commit_enabled = false\n'
            + '[migration]\nexpect = "overlap"\n'
            + '[[timeline]]\nat = "5s"\naction = "set_property"\n'
            + 'properties = { "dual.commit.enabled" = "TRUE", "auto.commit.interval.ms" = 500 }\n'
            + '[[timeline]]\nat = "20s"\naction = "switch"\nmode = "rolling"\n'
            + '[[timeline]]\nat = "40s"\naction = "rollback"\n',
        )
    )
    c = s.group.legacy_zk
    assert (c.offsets_storage, c.dual_commit_enabled) == ("kafka", False)
    assert (c.offsets_commit_max_retries, c.offsets_channel_backoff_ms) == (5, 1000)  # 0.8.2's defaults
    assert load_scenario("herd").group.legacy_zk.dual_commit_enabled is None  # unset: 0.8.2's rule
    assert s.migration.expect == "overlap" and load_scenario("herd").migration.expect == "clean"
    set_property, switch, rollback = s.timeline
    assert (
        set_property.action == "set_property" and switch.action == "switch" and rollback.action == "rollback"
    )
    assert set_property.properties == {"dual.commit.enabled": "TRUE", "auto.commit.interval.ms": 500}
    assert (set_property.interval, set_property.downtime) == (3.0, 0.5)
    assert (switch.mode, switch.interval, switch.downtime) == ("rolling", 3.0, 0.5)
    assert (rollback.mode, rollback.properties) == ("all_at_once", {})
    assert s.has_migration and not load_scenario("herd").has_migration


@pytest.mark.parametrize(
    ("name", "expect"),
    [("migration", "clean"), ("migration-no-dual-commit", "replay"), ("migration-mixed", "overlap")],
)
def test_the_builtin_migration_scenarios_are_legacy_zk_groups_of_three_expecting_their_verdict(
    name: str, expect: str
) -> None:
    s = load_scenario(name)
    assert s.implementations == ["legacy_zk"] and s.migration.expect == expect
    assert (s.group.members, s.topic.partitions) == (3, 3)
    assert (s.group.legacy_zk.auto_commit_interval_ms, s.group.legacy_zk.auto_offset_reset) == (
        1000,
        "smallest",
    )
    switches = [a for a in s.timeline if isinstance(a, Switch)]
    assert len(switches) == 1
    assert switches[0].mode == ("rolling" if name == "migration-mixed" else "all_at_once")


def test_scenarios_check_plans_each_case_as_run_does(tmp_path: Path) -> None:
    """``herdlab scenarios check`` refuses what ``run`` would refuse before starting anything: here a rollback
    with no coordinator member to replace (the scenario itself is well-formed)."""
    from click.testing import CliRunner

    from harness.cli.scenarios import check

    bad = tmp_path / "bad.toml"
    bad.write_text(
        'name = "bad"\nimplementations = ["legacy_zk"]\n[group]\nmembers = 2\n'
        '[[timeline]]\nat = "2s"\naction = "rollback"\nmode = "all_at_once"\n'
    )
    r = CliRunner().invoke(check, [str(bad)])
    assert r.exit_code != 0
    assert "rollback at 2s: no coordinator member is present to replace" in str(r.exception)
    ok = CliRunner().invoke(check, ["migration"])
    assert ok.exit_code == 0, ok.output
    assert ok.output.startswith("migration: default: 3 members, 3 partitions\n")


def test_an_unknown_key_of_a_timeline_entry_names_the_entry_from_1_its_line_and_the_closest_key(
    tmp_path: Path,
) -> None:
    text = (
        'name = "x"\n'  # 1
        "\n"  # 2
        "[[timeline]]\n"  # 3
        'at = "2s"\n'  # 4
        'action = "join"\n'  # 5
        "\n"  # 6
        "[[timeline]]\n"  # 7
        'at = "9s"\n'  # 8
        'action = "leave"\n'  # 9
        "cuont = 1\n"  # 10
    )
    _assert_one_line_error(
        tmp_path,
        text,
        ": line 10: timeline entry 2, cuont: unknown key; did you mean 'count'? "
        "(allowed: action, at, count, select)",
    )


def test_a_timeline_entry_without_its_action_names_the_misspelt_key_and_its_line(tmp_path: Path) -> None:
    text = (
        'name = "x"\n'  # 1
        "[[timeline]]\n"  # 2
        'at = "2s"\n'  # 3
        'action = "join"\n'  # 4
        "[[timeline]]\n"  # 5
        'at = "9s"\n'  # 6
        'acton = "leave"\n'  # 7
    )
    _assert_one_line_error(
        tmp_path, text, ": line 7: timeline entry 2: no 'action' key ('acton': did you mean 'action'?)"
    )
    # no key close to "action": the entry's own line, and no guess
    _assert_one_line_error(
        tmp_path, text.replace("acton", "select"), ": line 5: timeline entry 2: no 'action' key"
    )


def test_a_key_set_by_an_override_has_no_line_of_the_file(tmp_path: Path) -> None:
    path = _write(tmp_path, 'name = "x"\n[group]\nmembers = 3\n')
    with pytest.raises(ConfigError) as info:
        load_scenario(path, ["group.members=0"])
    assert str(info.value) == (
        f"{path}: group.members: expected a positive integer or a non-empty list of them (got 0)"
    )


def test_key_lines_finds_tables_array_entries_and_dotted_keys() -> None:
    text = (
        'name = "x"\n'  # 1
        'description = """\n'  # 2
        "members = 9\n"  # 3: inside a string, not a key
        '"""\n'  # 4
        "group.id = 'g'\n"  # 5
        "[group]  # the group\n"  # 6
        "members = [4, 8]\n"  # 7
        '[group."legacy_zk"]\n'  # 8
        "[[timeline]]\n"  # 9
        "at = '1s'\n"  # 10
        "[[timeline]]\n"  # 11
        "  at = '2s'\n"  # 12
    )
    lines = key_lines(text)
    assert lines == {
        ("name",): 1,
        ("description",): 2,
        ("group", "id"): 5,
        ("group",): 6,
        ("group", "members"): 7,
        ("group", "legacy_zk"): 8,
        ("timeline", 0): 9,
        ("timeline", 0, "at"): 10,
        ("timeline", 1): 11,
        ("timeline", 1, "at"): 12,
    }
    assert line_of(lines, ("timeline", 1, "duration")) == 11  # a missing key: its table's header
    assert line_of(lines, ("topic", "partitions")) is None
