"""The families over the collected control events (herd counts, steady traffic, session failures,
start-up), on hand-made events: each expected value is counted by hand below."""

from __future__ import annotations

from typing import Any

from harness.analysis import health, herd, startup, steady
from harness.analysis.frames import CONTROL_COLUMNS

UNIT = ("herd", "legacy_zk", 0)
S = 1_000_000_000


def ev(ts: int, role: str, kind: str, **kw: Any) -> dict[str, Any]:
    """One collected control event of :data:`UNIT` (every column of the collection, unset ones None)."""
    e: dict[str, Any] = dict.fromkeys(CONTROL_COLUMNS)
    e.update(case=UNIT[0], impl=UNIT[1], repetition=UNIT[2], ts_ns=ts, role=role, kind=kind, **kw)
    return e


class Rows:
    """The collected control events of one unit (what :class:`harness.analysis.control.Control` gives)."""

    def __init__(self, events: list[dict[str, Any]]) -> None:
        self.events = events

    def rows(self) -> dict[tuple[str, str, int], list[dict[str, Any]]]:
        return {UNIT: self.events}


class FoldFacts:
    """The fold's trigger and marks rows of :data:`UNIT` (what :meth:`harness.analysis.facts.Facts.rows` gives)."""

    def __init__(self, triggers: list[dict[str, Any]], marks: dict[str, Any]) -> None:
        self.by_type = {
            "trigger": [{"case": UNIT[0], "impl": UNIT[1], "repetition": UNIT[2], **t} for t in triggers],
            "marks": [{"case": UNIT[0], "impl": UNIT[1], "repetition": UNIT[2], **marks}],
        }

    def rows(self, rtype: str) -> list[dict[str, Any]]:
        return self.by_type.get(rtype, [])


def trigger(tid: int, t0: int, wend: int, outcome: str = "settled", action: str = "kill") -> dict[str, Any]:
    return {
        "tid": tid,
        "action": action,
        "outcome": outcome,
        "invoke": t0,
        "t0": t0,
        "wend": wend,
        "live_invoke": 3,
        "nparts_invoke": 6,
    }


def test_herd_counts_only_the_changes_own_events_in_its_window() -> None:
    events = [
        ev(9 * S, "member", "watch", source="m1"),  # before the window [10 s, 20 s)
        ev(10 * S, "member", "watch", source="m1"),
        ev(11 * S, "member", "watch", source="m2"),
        ev(12 * S, "member", "zk_request", source="m1", op="get", path="/consumers/g/ids/m2", count=3),
        ev(12 * S, "member", "zk_request", source="m1", op="create", path="/consumers/g/owners/t/0"),
        ev(13 * S, "member", "zk_request", source="m2", op="set", path="/consumers/g/offsets/t/0"),  # steady
        ev(13 * S, "member", "rebalance_begin", source="m1"),
        ev(13 * S, "member", "rebalance_begin", source="m1"),
        ev(14 * S, "member", "conflict", source="m2"),
        ev(15 * S, "member", "rebalance_end", source="m1", outcome="conflict", gave_up=True),
        ev(15 * S, "member", "rebalance_end", source="m2", outcome="ok"),
        ev(16 * S, "broker", "group_request", api="SyncGroup", assignments=2),
        ev(16 * S, "broker", "group_request", api="SyncGroup", assignments=0),
        ev(16 * S, "broker", "group_request", api="JoinGroup", client="herdlab-harness"),  # the workload's
        ev(20 * S, "member", "watch", source="m1"),  # the window's end is open
    ]
    got = herd.counts(FoldFacts([trigger(0, 10 * S, 20 * S)], {}), Rows(events))  # type: ignore[arg-type]
    h = got[(*UNIT, 0)]
    # by hand: watches at 10 and 11 s; requests 3 (the get stands for 3) + 1 (the create), the offset
    # write is steady state; one registration read of 3, one owner write; m1 began twice (1 member)
    assert h["herd"] == {
        "watches": 2,
        "zk_requests": 4,
        "conflicts": 1,
        "failed_attempts": 1,
        "gave_up": 1,
        "rebalance_attempts": 2,
        "group_rebalances": 0,
        "broker_group_requests": 2,
        "owner_writes": 1,
        "registration_reads": 3,
        "leader_syncs": 1,
        "rebalancing_members": 1,
        "first_watch": 10 * S,
    }
    assert h["op"] == {"get": 3, "create": 1}
    assert h["api"] == {"SyncGroup": 2}
    assert h["invoke"] == {"members": 3, "partitions": 6}


def test_herd_skips_a_skipped_trigger_and_an_empty_window_has_no_counts() -> None:
    events = [ev(5 * S, "member", "watch", source="m1")]
    facts = FoldFacts([trigger(0, 1 * S, 2 * S), trigger(1, 4 * S, 6 * S, outcome="skipped")], {})
    got = herd.counts(facts, Rows(events))  # type: ignore[arg-type]
    assert got == {(*UNIT, 0): {"invoke": {"members": 3, "partitions": 6}}}


def test_steady_traffic_is_what_falls_between_stable_and_settling_end() -> None:
    events = [
        ev(1 * S, "member", "zk_request", op="set", path="/consumers/g/offsets/t/0"),  # before stable
        ev(2 * S, "member", "zk_request", op="set", path="/consumers/g/offsets/t/0", count=4),
        ev(3 * S, "member", "zk_request", op="get", path="/consumers/g/ids/m1"),  # not an offset write
        ev(3 * S, "broker", "broker_request", requests={"Heartbeat": 7.0, "JoinGroup": 2.0}),
        ev(4 * S, "broker", "broker_request", requests={"Heartbeat": 1.0, "Fetch": 5.0}),
        ev(6 * S, "member", "zk_request", op="set", path="/consumers/g/offsets/t/0"),  # at settling_end
    ]
    got = steady.unit_values(FoldFacts([], {"start": 2 * S, "end": 6 * S, "wend": 9 * S}), Rows(events))  # type: ignore[arg-type]
    assert got[UNIT] == {
        "steady_window_ns": float(4 * S),
        "zk_commits": 4.0,
        "broker:Heartbeat": 8.0,
        "broker:Fetch": 5.0,
    }
    # without settling_end the steady phase runs to the unit's last event
    got = steady.unit_values(FoldFacts([], {"start": 2 * S, "end": None, "wend": 9 * S}), Rows(events))  # type: ignore[arg-type]
    assert got[UNIT]["steady_window_ns"] == float(7 * S) and got[UNIT]["zk_commits"] == 5.0


def test_session_failures_leave_out_targeted_members_and_fault_windows() -> None:
    events = [
        ev(1 * S, "member", "ready", source="m1"),
        ev(0, "harness", "unit_start"),
        ev(1 * S, "member", "heartbeat_error", source="m1"),  # before stable: start-up
        ev(2 * S, "harness", "stable"),
        ev(3 * S, "member", "zk_state", source="m2", state="SUSPENDED"),
        ev(3 * S, "member", "zk_state", source="m2", state="CONNECTED"),  # no trouble
        ev(4 * S, "nemesis", "invoke", targets=["m3"], action="kill"),
        ev(5 * S, "member", "heartbeat_error", source="m3"),  # targeted
        ev(6 * S, "member", "started", source="m1", member="id-1"),
        ev(7 * S, "broker", "member_removed", member="id-1", reason="expired"),  # m1's session
        ev(8 * S, "broker", "member_removed", member="id-1", reason="left"),
        ev(11 * S, "member", "heartbeat_error", source="m2"),  # inside the coordinator fault's window
        ev(21 * S, "member", "heartbeat_error", source="m2"),  # after settling_end
    ]
    facts = FoldFacts(
        [trigger(0, 4 * S, 10 * S), trigger(1, 10 * S, 12 * S, action="kill_coordinator")],
        {"start": 2 * S, "end": 20 * S, "wend": 21 * S},
    )
    got = health.unit_values(facts, Rows(events))  # type: ignore[arg-type]
    # by hand: after stable m2's SUSPENDED and m1's expiry; before it m1's heartbeat error
    assert got[UNIT]["session_failures"] == 2.0
    assert got[UNIT]["session_failures_startup"] == 1.0
    assert got[UNIT]["startup_members_ready"] == 1.0


def test_start_up_counts_the_members_ready_before_stable() -> None:
    events = [
        ev(10 * S, "harness", "unit_start"),
        ev(11 * S, "member", "ready", source="m1"),
        ev(12 * S, "member", "ready", source="m2"),
        ev(12 * S, "member", "ready", source="m2"),  # the same member twice: counted once
        ev(14 * S, "harness", "stable"),
        ev(15 * S, "member", "ready", source="m3"),  # joined later
    ]
    assert startup.unit_values(events) == {
        "startup_members_ready": 2.0,
        "startup_first_ready_s": 1.0,
        "startup_ready_s": 2.0,
        "startup_stable_s": 4.0,
    }
    assert startup.unit_values(events[1:]) == {}  # no unit_start
    never = startup.unit_values(events[:4])  # never stable: every ready counts, no stable_s
    assert never == {"startup_members_ready": 2.0, "startup_first_ready_s": 1.0, "startup_ready_s": 2.0}
