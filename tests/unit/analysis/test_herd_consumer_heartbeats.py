"""A ConsumerGroupHeartbeat without a change is steady traffic: the herd counts only the exchanges whose
``change`` is true (and every other coordination request, which has no ``change``), the steady rates the others."""

from __future__ import annotations

from harness.analysis import herd, steady
from tests.unit.analysis.test_control_families import UNIT, FoldFacts, Rows, S, ev, trigger

CGH = "ConsumerGroupHeartbeat"


def test_steady_consumer_heartbeats_are_not_counted_in_the_herd() -> None:
    events = [
        ev(11 * S, "broker", "group_request", api=CGH, member="a", change=True),  # a join
        ev(12 * S, "broker", "group_request", api=CGH, member="b", change=False),
        ev(
            13 * S, "broker", "group_request", api=CGH, member="a", change=True
        ),  # its assignment acknowledged
        ev(14 * S, "broker", "group_request", api=CGH, member="a", change=False),
        ev(15 * S, "broker", "group_request", api=CGH, member="b", change=False),
        ev(16 * S, "broker", "group_request", api="FindCoordinator"),  # no change field: counted as before
    ]
    got = herd.counts(FoldFacts([trigger(0, 10 * S, 20 * S)], {}), Rows(events))  # type: ignore[arg-type]
    h = got[(*UNIT, 0)]
    # by hand: the two heartbeats that carry a change and the FindCoordinator; the three steady ones are left out
    assert h["herd"]["broker_group_requests"] == 3
    assert h["api"] == {CGH: 2, "FindCoordinator": 1}


def test_steady_consumer_heartbeats_are_a_steady_rate() -> None:
    events = [
        ev(1 * S, "broker", "group_request", api=CGH, change=False),  # before stable
        ev(3 * S, "broker", "group_request", api=CGH, change=False),
        ev(4 * S, "broker", "group_request", api=CGH, change=True),  # a change: the herd's, not the rate's
        ev(5 * S, "broker", "group_request", api=CGH, change=False),
        ev(
            5 * S, "broker", "broker_request", requests={CGH: 3.0, "Fetch": 2.0}
        ),  # the counter: not counted twice
    ]
    got = steady.unit_values(FoldFacts([], {"start": 2 * S, "end": 6 * S, "wend": 9 * S}), Rows(events))  # type: ignore[arg-type]
    # by hand: three exchanges inside [2 s, 6 s), the two at 3 s and 5 s steady; no member was live (no
    # member-seconds); Fetch from the counter, the counter's ConsumerGroupHeartbeat (a coordination API) not
    # counted a second time
    assert got[UNIT] == {
        "steady_window_ns": float(4 * S),
        "zk_commits": 0.0,
        "heartbeat_exchanges": 3.0,
        "steady_heartbeats": 2.0,
        "member_s": 0.0,
        "broker:Fetch": 2.0,
    }
