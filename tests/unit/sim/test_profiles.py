"""The delay model's named profiles: what each sets, how one is chosen and overridden, one-line errors."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from harness.cli import cli
from harness.kernel.errors import ConfigError
from harness.members.release import POLL_S as RELEASE_POLL_S
from harness.run.runner import RunResult
from harness.sim.model import DEFAULT_PROFILE, MACHINE_PROFILE, PROFILE_FIELDS, load_profile, profile_names
from harness.sim.session import parse_delays
from legacy_zk.fetcher import POLL_MS


def test_the_shipped_profiles_are_the_machine_fit_and_members_on_their_own_hosts() -> None:
    assert profile_names() == ["host-per-member", "two-core-host"]
    assert (DEFAULT_PROFILE, MACHINE_PROFILE) == ("host-per-member", "two-core-host")


def test_the_machine_profile_shares_two_cores_and_keeps_the_fitted_values() -> None:
    m = load_profile("two-core-host")
    assert m.client_cores == 2
    # a few fitted values, as docs/validation/simulator-profile.md gives them
    assert (m.zk_client_s, m.watch_wake_spread_s, m.zk_connect_s) == (0.001, 0.025, 0.008)
    assert (m.kafka_poll_gap_per_member_s, m.kafka_rejoin_late_per_member_s) == (0.00048, 0.0025)
    assert (m.zk_client_share_sigma, m.kafka_assign_per_member_per_core_s) == (0.8, 0.0000156)
    assert (m.seed, m.profile) == (0, "two-core-host")


def test_the_default_profile_differs_from_the_machine_fit_in_client_cores_alone() -> None:
    machine, own = load_profile("two-core-host"), load_profile("host-per-member")
    differ = [f for f in PROFILE_FIELDS if getattr(machine, f) != getattr(own, f)]
    assert differ == ["client_cores"]
    assert own.client_cores == 0
    assert own.per_core(10_000) == 1.0  # per-member-per-core fields count one member per core


@pytest.mark.parametrize("name", ["two-core-host", "host-per-member"])
def test_a_profile_holds_the_code_s_own_polls(name: str) -> None:
    m = load_profile(name)
    assert m.fetch_poll_s == POLL_MS / 1000
    assert m.member_release_poll_s == RELEASE_POLL_S


@pytest.mark.parametrize("name", ["two-core-host", "host-per-member"])
def test_a_profile_gives_each_field_its_type(name: str) -> None:
    m = load_profile(name)
    for f in dataclasses.fields(m):
        if f.name != "profile":
            assert type(getattr(m, f.name)).__name__ == f.type, f.name


def test_delay_overrides_apply_to_the_chosen_profile_and_the_name_is_recorded() -> None:
    m = parse_delays(["client_cores=4"], seed=3, profile="two-core-host")
    assert (m.client_cores, m.seed, m.profile, m.zk_client_s) == (4, 3, "two-core-host", 0.001)
    assert m.as_dict()["profile"] == "two-core-host"
    assert m.describe().startswith("profile two-core-host; ")
    assert parse_delays([]).profile == "host-per-member"


def test_an_unknown_profile_is_a_one_line_error_naming_the_profiles() -> None:
    with pytest.raises(
        ConfigError, match="no delay profile 'laptop' \\(profiles: host-per-member, two-core-host\\)"
    ):
        load_profile("laptop")


def test_the_profile_name_is_not_a_delay_override() -> None:
    with pytest.raises(ConfigError, match="NAME one of"):
        parse_delays(["profile=two-core-host"])


def _capture(monkeypatch: pytest.MonkeyPatch, seen: list[Any]) -> None:
    import harness.cli.simulate as simulate_command

    def fake_simulate(scenario: Any, options: Any) -> RunResult:
        seen.append(options.delays)
        d = options.out / scenario.name / f"20260101-000000-000{len(seen)}"
        d.mkdir(parents=True)
        return RunResult(run_dir=d, run_id=d.name, units=[], events=0)

    monkeypatch.setattr(simulate_command, "simulate_scenario", fake_simulate)


def test_simulate_takes_the_profile_by_name_and_delays_over_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[Any] = []
    _capture(monkeypatch, seen)
    args = ["simulate", "herd-small", "--out", str(tmp_path), "--no-report"]
    r = CliRunner().invoke(cli, [*args, "--profile", "two-core-host", "--delay", "jitter=0.1"])
    assert r.exit_code == 0, r.output
    r = CliRunner().invoke(cli, args)
    assert r.exit_code == 0, r.output
    assert [(m.profile, m.client_cores, m.jitter) for m in seen] == [
        ("two-core-host", 2, 0.1),
        ("host-per-member", 0, 0.0),
    ]
