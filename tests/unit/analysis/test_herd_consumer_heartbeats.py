"""A ConsumerGroupHeartbeat without a change is steady traffic: the herd counts only the exchanges whose
``change`` is true (and every other coordination request, which has no ``change``)."""

from __future__ import annotations

from harness.analysis import herd
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
