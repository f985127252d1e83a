"""The legacy_zk herd bench's figures are the checker's: one trigger of the metrics document in, the
figures beside the analytic model out, and their table. The checker's counts of a history in the
shape the bench writes are checked by hand in tests/integration/analysis/test_checker.py
(``bench_shaped``); the triggers here carry those figures."""

from __future__ import annotations

from typing import Any

import pytest

from harness.bench.legacy_zk import LegacyBench, member_names
from harness.bench.legacy_zk_figures import deviation, figures, format_size, unit_figures
from harness.kernel.errors import HerdlabError
from legacy_zk.model import HerdModel


def trigger(action: str, **kw: Any) -> dict[str, Any]:
    """A trigger of the metrics document with the herd fields the bench reads."""
    return {"action": action, "targets": ["joiner"], "outcome": "settled", "zk_requests_by_op": {}} | kw


JOIN = trigger(
    "join",
    latency_s=0.701,
    first_notification_s=0.2,
    watches=2,
    zk_requests=11,
    owner_writes=5,
    registration_reads=3,
    conflicts=1,
    failed_attempts=1,
    gave_up=0,
    rebalance_attempts=4,
    rebalancing_members=3,
    zk_packets=200,
    zk_packets_minus_idle=100,
    members_at_invoke=2,
    partitions_at_invoke=2,
)
CRASH = trigger(
    "crash",
    targets=["v"],
    latency_s=6.301,
    first_notification_s=6.0,
    watches=2,
    zk_requests=9,
    owner_writes=3,
    registration_reads=2,
    conflicts=0,
    failed_attempts=0,
    gave_up=0,
    rebalance_attempts=2,
    rebalancing_members=2,
    zk_packets=160,
    zk_packets_minus_idle=0,
    members_at_invoke=3,
    partitions_at_invoke=2,
)


def test_each_change_is_set_beside_the_model_of_the_members_live_at_its_invoke() -> None:
    join, crash = figures(JOIN), figures(CRASH)
    assert (join.action, join.targets, join.outcome, join.latency_s) == (
        "join",
        ("joiner",),
        "settled",
        0.701,
    )
    assert (join.members_before, join.partitions, join.packets, join.packets_minus_idle) == (2, 2, 200, 100)
    # 2 members before the join, P = 2, B = 1: 3 after; 9 + 11 x 3 + 6 requests and the leader finders of
    # min(3, 2) = 2 owners, 2 each; 9 + 6 registrations
    assert join.model == HerdModel(
        members_after=3, notifications=2, zk_requests=52, owner_writes=4, registration_reads=15
    )
    # a, v and the joiner before; 2 survivors: 4 + 11 x 2 + 6 requests and 2 owners' leader finders of 2
    # each, 4 + 4 registrations
    assert crash.model == HerdModel(
        members_after=2, notifications=2, zk_requests=36, owner_writes=4, registration_reads=8
    )
    # an action the model does not know, or no members found: no model
    assert figures(trigger("pause", members_at_invoke=3, partitions_at_invoke=2)).model is None
    assert figures(trigger("join")).model is None


def test_the_units_triggers_are_read_by_case() -> None:
    metrics = {"units": [{"case": "N=2", "triggers": [JOIN, CRASH]}, {"case": "N=3", "triggers": []}]}
    assert [c.action for c in unit_figures(metrics, "N=2")] == ["join", "crash"]
    assert unit_figures(metrics, "N=3") == []
    with pytest.raises(HerdlabError, match="no unit 'N=4'"):
        unit_figures(metrics, "N=4")


def test_the_table_prints_measured_model_and_deviation() -> None:
    assert deviation(274, 272) == "+2 (+0.7%)"
    assert deviation(209, 210) == "-1 (-0.5%)"
    assert deviation(0, 0) == "+0 (n/a)"
    table = format_size(2, [figures(JOIN), figures(CRASH)], 1.0)
    # join: notifications 2 (model 2), requests 11 (52): -41 = -78.8 %; owner writes 5 (4)
    assert (
        "| join | settled | 0.701 | 0.200 | 2 (2) +0 (+0.0%) | 11 (52) -41 (-78.8%) | 5 (4) +1 (+25.0%) "
        in table
    )
    assert (
        "| crash | settled | 6.301 | 6.000 | 2 (2) +0 (+0.0%) | 9 (36) -27 (-75.0%) | 3 (4) -1 (-25.0%) "
        in table
    )
    # registration reads 3 (15), packets 200 (minus idle 100), conflicts, failed, gave up, rebalancing
    assert "| 3 (15) -12 (-80.0%) | 200 (100) | 1 | 1 | 0 | 3 |" in table
    # a skipped trigger has no counts: dashes
    skipped = figures(trigger("crash", outcome="skipped", members_at_invoke=None))
    assert "| crash | skipped | - | - | - | - | - | - | - | - | - | - | - |" in format_size(2, [skipped], 1.0)


def test_member_names_and_settings_are_checked() -> None:
    assert member_names("host0", 3) == ["host0-0", "host0-1", "host0-2"]
    assert member_names("victim", 1) == ["victim"]
    with pytest.raises(HerdlabError, match="measure join before leave"):
        LegacyBench(sizes=(3,), changes=("leave", "join"))
    with pytest.raises(HerdlabError, match="measure join before leave"):
        LegacyBench(sizes=(3,), changes=("leave",))
    with pytest.raises(HerdlabError, match="unknown changes"):
        LegacyBench(sizes=(3,), changes=("join", "expire"))
    with pytest.raises(HerdlabError, match="once per size"):
        LegacyBench(sizes=(3,), changes=("join", "join"))
    with pytest.raises(HerdlabError, match=">= 2"):
        LegacyBench(sizes=(1,))
    with pytest.raises(HerdlabError, match="measured once"):
        LegacyBench(sizes=(3, 3))
