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
        "target_assignments": 0,
        "steady_heartbeats": 0,
        "rebalancing_members": 1,
        "epochs_reached": 0,
        "first_watch": 10 * S,
    }
    assert h["op"] == {"get": 3, "create": 1}
    assert h["api"] == {"SyncGroup": 2}
    assert h["invoke"] == {"members": 3, "partitions": 6}


def hb(
    ts: int, member: str, req: int, epoch: int, change: bool | None, error: str | None = None
) -> dict[str, Any]:
    """One ConsumerGroupHeartbeat exchange as the broker writes it (``change`` None: a writer that left it out)."""
    return ev(
        ts,
        "broker",
        "group_request",
        api="ConsumerGroupHeartbeat",
        member=member,
        member_epoch=req,
        epoch=epoch,
        change=change,
        error=error,
    )


def test_consumer_heartbeats_count_in_the_herd_only_when_they_carry_the_change() -> None:
    events = [
        hb(1 * S, "A", 0, 3, True),  # before the window: the starting epoch is 3
        hb(2 * S, "B", 3, 3, False),
        hb(10 * S, "C", 0, 4, True),  # the window [10 s, 20 s): C joins, epoch 4
        ev(10 * S, "broker", "target_assignment", epoch=4),
        hb(11 * S, "A", 3, 3, True),  # told to revoke: an assignment, the same epoch
        hb(12 * S, "A", 3, 5, True),  # reports its revocation; the target moved on meanwhile: 5
        hb(12 * S, "B", 3, 5, True),
        hb(13 * S, "D", 7, 9, True, error="FENCED_MEMBER_EPOCH"),  # an error: in the herd, not a round
        hb(14 * S, "B", 5, 5, False),  # steady
        hb(15 * S, "C", 4, 4, None),  # no change flag: steady, not in the herd
        ev(16 * S, "broker", "group_request", api="FindCoordinator"),
        hb(20 * S, "C", 4, 6, True),  # the window's end is open
    ]
    got = herd.counts(FoldFacts([trigger(0, 10 * S, 20 * S)], {}), Rows(events))  # type: ignore[arg-type]
    h = got[(*UNIT, 0)]
    # by hand: change exchanges at 10, 11, 12, 12, 13 s (5) and the FindCoordinator; 14 and 15 s are
    # steady; epochs above 3 answered without error: 4 (C), 5 (A, B): two reached; one target
    assert h["api"] == {"ConsumerGroupHeartbeat": 5, "FindCoordinator": 1}
    assert h["herd"]["broker_group_requests"] == 6
    assert (h["herd"]["steady_heartbeats"], h["herd"]["epochs_reached"], h["herd"]["target_assignments"]) == (
        2,
        2,
        1,
    )
    assert herd.rebalance_rounds(h["herd"], "consumer", True, True) == 2
    fields = herd.herd_fields(
        {"outcome": "settled", "invoke": 10 * S, "t0": 10 * S}, h, [], "consumer", True, False
    )
    assert (fields["rebalance_rounds"], fields["group_rebalances"]) == (2, 1)
    tapped = herd.herd_fields(
        {"outcome": "settled", "invoke": 10 * S, "t0": 10 * S}, h, [], "consumer", True, False, tapped=True
    )
    assert (tapped["rebalance_rounds"], tapped["group_rebalances"]) == (2, None)


def test_steady_heartbeats_are_counted_per_live_member_second() -> None:
    events = [
        hb(1 * S, "A", 1, 1, False),  # before stable
        hb(3 * S, "A", 1, 1, False),
        hb(4 * S, "B", 1, 1, False),
        hb(5 * S, "B", 1, 2, True),  # a change: not steady
        hb(7 * S, "A", 2, 2, False),
    ]

    class LiveFacts(FoldFacts):
        def rows(self, rtype: str) -> list[dict[str, Any]]:
            if rtype == "live":  # a live from 0 to 6 s, b from 4 s to the end
                return [
                    {
                        "case": UNIT[0],
                        "impl": UNIT[1],
                        "repetition": UNIT[2],
                        "ident": m,
                        "start": s,
                        "end": e,
                    }
                    for m, s, e in (("a", 0, 6 * S), ("b", 4 * S, None))
                ]
            return super().rows(rtype)

    got = steady.unit_values(LiveFacts([], {"start": 2 * S, "end": 8 * S, "wend": 9 * S}), Rows(events))  # type: ignore[arg-type]
    # in [2 s, 8 s): 4 exchanges, 3 steady; member-seconds: a 2..6 (4 s), b 4..8 (4 s)
    assert (got[UNIT]["heartbeat_exchanges"], got[UNIT]["steady_heartbeats"], got[UNIT]["member_s"]) == (
        4,
        3,
        8,
    )
    fields = steady.steady_fields(got[UNIT])
    assert (fields["heartbeats"], fields["heartbeats_per_member_s"]) == (3, 0.375)
    # a unit without ConsumerGroupHeartbeat exchanges has neither (not measured)
    assert "heartbeats" not in steady.steady_fields({"steady_window_ns": float(6 * S)})


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


def test_a_unit_with_the_zookeeper_tap_counts_the_taps_zookeeper_events_not_the_members() -> None:
    events = [
        # what the members say of themselves: ignored once the tap saw the unit
        ev(10 * S, "member", "watch", source="m1"),
        ev(11 * S, "member", "zk_request", source="m1", op="get", path="/consumers/g/ids/a"),
        ev(11 * S, "member", "conflict", source="m1"),
        ev(11 * S, "member", "rebalance_begin", source="m1"),
        ev(12 * S, "member", "rebalance_end", source="m1", outcome="conflict"),
        # what the tap saw (the original member reports nothing of its own)
        ev(10 * S, "zookeeper", "watch", source="zk-tap", member="a", path="/consumers/g/ids"),
        ev(10 * S, "zookeeper", "watch", source="zk-tap", member="b", path="/consumers/g/ids"),
        ev(11 * S, "zookeeper", "zk_request", source="zk-tap", op="get", path="/consumers/g/ids/a"),
        ev(11 * S, "zookeeper", "zk_request", source="zk-tap", op="get", path="/consumers/g/ids/b"),
        ev(11 * S, "zookeeper", "zk_request", source="zk-tap", op="create", path="/consumers/g/owners/t/0"),
        ev(12 * S, "zookeeper", "conflict", source="zk-tap", path="/consumers/g/owners/t/0"),
        ev(13 * S, "zookeeper", "zk_request", source="zk-tap", op="set", path="/consumers/g/offsets/t/0"),
    ]
    got = herd.counts(FoldFacts([trigger(0, 10 * S, 20 * S)], {}), Rows(events))  # type: ignore[arg-type]
    h = got[(*UNIT, 0)]
    # by hand: the tap's 2 watches, 3 requests (2 registration reads, 1 owner write; the offset write is
    # steady), 1 conflict; attempts and their outcomes stay the members' (only they know them)
    assert (h["herd"]["watches"], h["herd"]["zk_requests"], h["herd"]["conflicts"]) == (2, 3, 1)
    assert (h["herd"]["registration_reads"], h["herd"]["owner_writes"]) == (2, 1)
    assert (h["herd"]["rebalance_attempts"], h["herd"]["failed_attempts"]) == (1, 1)
    assert h["op"] == {"get": 2, "create": 1}
    assert herd.unit_values(Rows(events))[UNIT]["zk_tapped"] == 1.0  # type: ignore[arg-type]
    untapped = [e for e in events if e["role"] != "zookeeper"]
    assert herd.unit_values(Rows(untapped))[UNIT]["zk_tapped"] == 0.0  # type: ignore[arg-type]
    got = steady.unit_values(FoldFacts([], {"start": 10 * S, "end": 20 * S}), Rows(events))  # type: ignore[arg-type]
    assert got[UNIT]["zk_commits"] == 1  # the tap's offset write, counted once
