"""The legacy_zk herd bench's figures come from the trigger windows with the checker's definitions: a
hand-made history in the shape the bench writes (nemesis pairs, zk_mntr samples, members), every
expected figure worked out by hand (times in ms)."""

from __future__ import annotations

from typing import Any

import pytest

from harness.bench.legacy_zk import LegacyBench, member_names
from harness.bench.legacy_zk_figures import (
    Check,
    compare,
    deviation,
    format_checks,
    format_size,
    measure,
)
from harness.kernel.errors import HerdlabError
from legacy_zk.model import HerdModel

MS = 1_000_000
W = 1000 * MS
IDS = "/consumers/g/ids"
OWN = "/consumers/g/owners/t"


def ev(ms: int, kind: str, source: str, role: str = "member", **kw: Any) -> dict[str, Any]:
    return {"ts_ns": ms * MS, "kind": kind, "source": source, "role": role, **kw}


def zk(ms: int, source: str, op: str, path: str) -> dict[str, Any]:
    return ev(ms, "zk_request", source, op=op, path=path)


def pair(ms: int, kind: str, action: str, aid: int, targets: list[str], **kw: Any) -> dict[str, Any]:
    return ev(
        ms, kind, "nemesis", "nemesis", action=action, action_id=aid, targets=targets, trigger=True, **kw
    )


def mntr(ms: int, label: str, packets: int) -> dict[str, Any]:
    counters = {"zk_packets_received": packets, "zk_packets_sent": packets}
    return ev(ms, "zk_mntr", "nemesis", "harness", label=label, counters=counters)


def history() -> list[dict[str, Any]]:
    """P = 2: a owns p0, v (the victim) p1. A join of ``joiner`` (invoke 3000, ready 3500 = t0) and
    a crash of v (invoke 8000; a and the joiner take over after v's session expired)."""
    return [
        ev(0, "unit_start", "nemesis", "harness", partitions=2, group="g"),
        ev(10, "ready", "a"),
        ev(100, "assigned", "a", partition=0),
        ev(100, "rebalance_end", "a", outcome="ok"),
        ev(20, "ready", "v"),
        ev(110, "assigned", "v", partition=1),
        ev(110, "rebalance_end", "v", outcome="ok"),
        ev(200, "stable", "nemesis", "harness"),
        # -- join: idle rate (140 - 100) / 2000 ms; the window [3500, 8000)
        mntr(1000, "idle:1", 100),
        mntr(3000, "invoke:1", 140),
        pair(3000, "invoke", "join", 1, ["joiner"]),
        zk(3200, "a", "get", "/brokers/ids"),  # before t0 (the joiner's ready): not the join's
        ev(3500, "ready", "joiner"),
        pair(3510, "complete", "join", 1, ["joiner"], ready_ns={"joiner": 3500 * MS}),
        zk(3600, "joiner", "create", f"{IDS}/joiner"),
        ev(3620, "rebalance_begin", "joiner"),
        ev(3630, "rebalance_end", "joiner", outcome="ok"),  # live, owning nothing
        ev(3700, "watch", "a", path=IDS),  # the first reaction
        zk(3701, "a", "exists", IDS),
        zk(3702, "a", "get_children", IDS),
        ev(3710, "watch", "v", path=IDS),
        ev(3800, "rebalance_begin", "a"),
        zk(3801, "a", "get", f"{IDS}/a"),
        zk(3802, "a", "get", f"{IDS}/v"),
        zk(3803, "a", "get", f"{IDS}/joiner"),
        zk(3804, "a", "delete", f"{OWN}/0"),
        ev(3805, "revoked", "a", partition=0),
        ev(3810, "rebalance_begin", "v"),
        zk(3811, "v", "delete", f"{OWN}/1"),
        ev(3812, "revoked", "v", partition=1),
        zk(3900, "a", "create", f"{OWN}/0"),
        zk(3901, "a", "set", "/consumers/g/offsets/t/0"),  # an offset write: steady state
        ev(3902, "assigned", "a", partition=0),
        ev(3903, "rebalance_end", "a", outcome="ok"),
        zk(3950, "v", "create", f"{OWN}/1"),
        ev(3951, "conflict", "v", partition=1),
        ev(3952, "rebalance_end", "v", outcome="conflict"),  # a failed attempt
        ev(4100, "rebalance_begin", "v"),
        zk(4200, "v", "create", f"{OWN}/1"),
        ev(4201, "assigned", "v", partition=1),  # owned once again: t1 of the join
        ev(4202, "rebalance_end", "v", outcome="ok"),
        # -- crash of v: idle rate (340 - 300) / 2000 ms; the window [8000, settling_end 16000)
        mntr(6000, "idle:2", 300),
        mntr(8000, "invoke:2", 340),
        pair(8000, "invoke", "crash", 2, ["v"]),
        pair(8100, "complete", "crash", 2, ["v"], exit_code=-9),  # p1 unowned from here
        ev(14000, "watch", "a", path=IDS),
        ev(14001, "watch", "joiner", path=IDS),
        zk(14002, "joiner", "exists", IDS),
        zk(14003, "joiner", "get_children", IDS),
        zk(14004, "a", "exists", IDS),
        zk(14005, "a", "get_children", IDS),
        ev(14100, "rebalance_begin", "a"),
        ev(14110, "rebalance_begin", "joiner"),
        zk(14120, "a", "get", f"{IDS}/a"),
        zk(14121, "a", "get", f"{IDS}/joiner"),
        zk(14140, "a", "delete", f"{OWN}/0"),
        ev(14150, "revoked", "a", partition=0),
        zk(14200, "a", "create", f"{OWN}/0"),
        ev(14201, "assigned", "a", partition=0),
        ev(14202, "rebalance_end", "a", outcome="ok"),
        zk(14300, "joiner", "create", f"{OWN}/1"),
        ev(14301, "assigned", "joiner", partition=1),  # t1 of the crash
        ev(14302, "rebalance_end", "joiner", outcome="ok"),
        mntr(16000, "settling_end", 500),
        ev(16000, "settling_end", "nemesis", "harness"),
        zk(16500, "a", "delete", f"{OWN}/0"),  # teardown: after the settling phase
    ]


def test_each_change_is_counted_in_its_trigger_window_beside_the_model() -> None:
    join, crash = measure(history(), W)

    assert (join.action, join.targets, join.outcome) == ("join", ("joiner",), "settled")
    assert (join.t0_ns, join.end_ns, join.t1_ns) == (3500 * MS, 8000 * MS, 4201 * MS)
    assert join.latency_s == 0.701 and join.first_notification_s == 0.2
    k = join.counts
    assert k.watches == 2  # a and v
    # joiner 1 + a 7 (re-arm 2, registrations 3, delete, create; not the offset write) + v 3
    assert k.zk_requests == 11
    assert k.by_op == {"create": 4, "delete": 2, "exists": 1, "get": 3, "get_children": 1}
    assert k.owner_writes == 5 and k.registration_reads == 3
    assert (k.conflicts, k.failed_attempts, k.gave_up) == (1, 1, 0)
    assert (k.rebalance_attempts, k.rebalancing_members) == (4, 3)
    # packets from the invoke:1 sample (140) to the invoke:2 sample (340) over 5000 ms; idle 0.02/ms
    assert (join.packets, join.packets_minus_idle) == (200, 200 - 100)
    # 2 members before the join, P = 2, B = 1: 3 after; 9 + 11 x 3 + 6 requests; 9 + 6 registrations
    assert (join.members_before, join.partitions) == (2, 2)
    assert join.model == HerdModel(
        members_after=3, notifications=2, zk_requests=48, owner_writes=4, registration_reads=15
    )

    assert (crash.action, crash.targets, crash.outcome) == ("crash", ("v",), "settled")
    assert (crash.t0_ns, crash.end_ns) == (8000 * MS, 16000 * MS)
    assert crash.latency_s == 6.301 and crash.first_notification_s == 6.0
    k = crash.counts
    assert (k.watches, k.zk_requests, k.owner_writes, k.registration_reads) == (2, 9, 3, 2)
    assert k.by_op == {"create": 2, "delete": 1, "exists": 2, "get": 2, "get_children": 2}
    assert (k.conflicts, k.failed_attempts, k.rebalance_attempts, k.rebalancing_members) == (0, 0, 2, 2)
    # 340 -> 500 over 8000 ms at the idle 0.02/ms: 160 - 160
    assert (crash.packets, crash.packets_minus_idle) == (160, 0)
    # a, v and the joiner before; 2 survivors: 4 + 11 x 2 + 6 requests, 4 + 4 registrations
    assert crash.members_before == 3
    assert crash.model == HerdModel(
        members_after=2, notifications=2, zk_requests=32, owner_writes=4, registration_reads=8
    )


def test_a_change_that_does_not_settle_before_the_settling_end_is_never() -> None:
    # the joiner's p1 comes at 14301; a settling end at 15000 < 14301 + W leaves no settled instant
    evs = [e for e in history() if e["kind"] != "settling_end"] + [
        ev(15000, "settling_end", "nemesis", "harness")
    ]
    _join, crash = measure(evs, W)
    assert crash.outcome == "never" and crash.latency_s is None and crash.t1_ns is None
    assert crash.counts.watches == 2  # still counted: the window ends at the settling end


def test_the_table_prints_measured_model_and_deviation() -> None:
    assert deviation(274, 272) == "+2 (+0.7%)"
    assert deviation(209, 210) == "-1 (-0.5%)"
    assert deviation(0, 0) == "+0 (n/a)"
    table = format_size(2, measure(history(), W), 1.0)
    # join: notifications 2 (model 2), requests 11 (48): -37 = -77.1 %; owner writes 5 (4)
    assert (
        "| join | settled | 0.701 | 0.200 | 2 (2) +0 (+0.0%) | 11 (48) -37 (-77.1%) | 5 (4) +1 (+25.0%) "
        in table
    )
    assert (
        "| crash | settled | 6.301 | 6.000 | 2 (2) +0 (+0.0%) | 9 (32) -23 (-71.9%) | 3 (4) -1 (-25.0%) "
        in table
    )


def test_the_checkers_figures_are_compared_one_by_one() -> None:
    join, crash = measure(history(), W)
    by_op = {"create": 4, "delete": 2, "exists": 1, "get": 3, "get_children": 1}
    triggers = [
        {"action": "join", "outcome": "settled", "watches": 2, "zk_requests": 11}
        | {"zk_requests_by_op": by_op, "latency_s": 0.701, "zk_packets": 200},
        {"action": "crash", "outcome": "settled", "watches": 2, "zk_requests": 10}
        | {"zk_requests_by_op": crash.counts.by_op, "latency_s": 6.301, "zk_packets": 160},
    ]
    checks = compare(2, [join, crash], triggers)
    assert len(checks) == 12
    assert [c for c in checks if not c.equal] == [Check(2, "crash", "zk_requests", 10, 9)]
    text = format_checks(checks)
    assert (
        "| 2 | join | equal (settled) | equal (2) | equal (11) | equal | equal (0.701) | equal (200) |"
        in text
    )
    assert "| 2 | crash | equal (settled) | equal (2) | checker 10, bench 9 |" in text
    # a trigger the checker does not have is itself a difference
    missing = compare(2, [join, crash], triggers[:1])
    assert Check(2, "-", "triggers", 1, 2) in missing


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
