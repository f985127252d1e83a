"""The simulator's waits scale with the group: the bound on a unit's waits (``stable_timeout``, unless the
scenario sets it) and whether a step waits for the previous trigger to settle (``wait_settled``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.run.interpreter import Timing
from harness.run.plan import make_plan
from harness.run.runner import Unit, planned_cases
from harness.scenario import load_scenario
from harness.sim.driver import SimUnitRunner, round_s, unit_timing
from harness.sim.model import load_profile


def _timing(
    impl: str, members: int, sets: tuple[str, ...] = (), options: dict[str, int] | None = None
) -> Timing:
    s = load_scenario("herd", [f"group.members={members}", *sets])
    case = planned_cases(s)[0]
    plan = make_plan(case.scenario, case.members, repetition=0)
    return unit_timing(case.scenario, impl, plan, load_profile("host-per-member"), options or {})


def test_a_legacy_round_is_the_squared_reads_at_the_slower_of_server_and_cores() -> None:
    # 100 members: 10^4 reads; two cores issue one per 1 ms / 2 = 0.5 ms (slower than the server's 0.12 ms)
    assert round_s("legacy_zk", 100, load_profile("two-core-host")) == pytest.approx(5.0)
    # cores of their own: the server's 0.12 ms a read, 10^6 reads at 1000 members
    assert round_s("legacy_zk", 1000, load_profile("host-per-member")) == pytest.approx(120.0)
    assert round_s("coordinator", 1000, load_profile("host-per-member")) == 0.0


def test_small_groups_keep_the_scenario_s_bound_and_times() -> None:
    t = _timing("legacy_zk", 50)  # 10 rounds of 2500 x 0.12 ms = 3 s: below the default 120 s
    assert (t.stable_timeout, t.wait_settled) == (120.0, False)


def test_a_thousand_legacy_members_wait_ten_rounds_and_each_step_waits_for_the_last() -> None:
    t = _timing("legacy_zk", 1000)
    assert t.stable_timeout == pytest.approx(1200.0)  # 10 x 10^6 reads x 0.12 ms
    assert t.wait_settled


def test_a_thousand_coordinator_members_keep_the_bound_but_wait_for_the_last_trigger() -> None:
    t = _timing("coordinator", 1000)
    assert (t.stable_timeout, t.wait_settled) == (120.0, True)


def test_a_bound_the_scenario_sets_and_an_explicit_option_are_kept() -> None:
    t = _timing("legacy_zk", 1000, ("stable_timeout=300s",), {"wait_settled": 0})
    assert (t.stable_timeout, t.wait_settled) == (300.0, False)
    t = _timing("legacy_zk", 10, (), {"wait_settled_from": 10})
    assert t.wait_settled


def test_a_group_not_stable_in_time_says_what_to_raise(tmp_path: Path) -> None:
    # the initial members become ready over 1 s: a 0.5 s bound cannot see the group stable
    s = load_scenario("herd-small", ["stable_timeout=0.5s", 'implementations=["legacy_zk"]'])
    unit = Unit(0, planned_cases(s)[0], "legacy_zk", 0, tmp_path / "u")
    outcome = SimUnitRunner(s, unit, load_profile("host-per-member"), epoch_ns=10**18).run()
    assert outcome["failed"].startswith("c0-legacy_zk-r0: group not stable after 0.5s (")
    assert outcome["failed"].endswith(
        "; 0.5s of virtual time is stable_timeout (the scenario's): raise it, e.g. --set stable_timeout=5s"
    )
