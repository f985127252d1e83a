"""The families' assembly into the metrics document, without Spark: collected rows in, entries out.

Each test feeds one family's field function the rows its Spark job would have collected, written
by hand, and checks the entry against figures worked out here. The Spark jobs themselves are
checked end to end in tests/integration/analysis.
"""

from __future__ import annotations

from typing import Any

from harness.analysis.herd import herd_fields, packets
from harness.analysis.latency import window_fields
from harness.analysis.records import records_fields
from harness.analysis.split_brain import split_brain, unit_totals
from harness.analysis.steady import steady_fields

S = 1_000_000_000
ORIGIN = 100 * S  # the unit's origin: its stable event


def window_row(outcome: str = "settled", **kw: Any) -> dict[str, Any]:
    """A trigger row as latency.trigger_rows collects it: crash of m1, invoke 110 s, t0 110 s,
    first reaction 110.5 s, t1 112 s, window end 120 s, resumed 112.25 s, longest gap 111-112 s."""
    row: dict[str, Any] = {
        "tid": 1,
        "action": "crash",
        "targets": ["m1"],
        "outcome": outcome,
        "reason": None,
        "invoke": 110 * S,
        "t0": 110 * S,
        "wend": 120 * S,
        "t_react": 110 * S + S // 2,
        "t1": 112 * S,
        "startup": None,
        "P1": 3,
        "t_resumed": 112 * S + S // 4,
        "gap_start": 111 * S,
        "gap_end": 112 * S,
    }
    return row | kw


def test_a_settled_window_has_its_latency_split_into_detection_and_convergence() -> None:
    t = window_fields(window_row(), ORIGIN)
    assert (t["index"], t["key"], t["targets"], t["settled"]) == (1, "#2 crash", ["m1"], True)
    # times since the origin (100 s): t0 10, t1 12, window end 20
    assert (t["invoke_s"], t["t0_s"], t["t1_s"], t["window_end_s"]) == (10.0, 10.0, 12.0, 20.0)
    # latency 112 - 110 = 2; detection 110.5 - 110 = 0.5; convergence 112 - 110.5 = 1.5
    assert (t["latency_s"], t["detection_s"], t["convergence_s"]) == (2.0, 0.5, 1.5)
    # resumed 112.25 - 110; gap 112 - 111 = 1, at [11, 12] since the origin
    assert (t["resumed_s"], t["gap_s"], t["gap"]) == (2.25, 1.0, [11.0, 12.0])
    assert t["startup_s"] is None


def test_a_window_that_never_settled_has_a_reaction_but_no_latency() -> None:
    t = window_fields(window_row("never", t1=None, t_resumed=None), ORIGIN)
    assert (t["settled"], t["latency_s"], t["detection_s"], t["convergence_s"]) == (False, None, None, None)
    assert (t["reaction_s"], t["resumed_s"], t["t1_s"]) == (0.5, None, None)


def test_a_join_reports_its_process_startup() -> None:
    # invoke at 110 s, ready 1.25 s later
    t = window_fields(window_row(action="join", startup=S + S // 4), ORIGIN)
    assert (t["key"], t["startup_s"]) == ("#2 join", 1.25)


MNTR = [
    (109 * S, "invoke:1", 1000.0),  # just before the invoke (110 s)
    (105 * S, "invoke:0", 900.0),
    (120 * S, "invoke:2", 1450.0),  # the next trigger's: the window's far edge
    (130 * S, "settling_end", 1600.0),
]


def test_packets_run_from_the_sample_before_the_invoke_to_the_next_window_edge() -> None:
    assert packets(MNTR, 110 * S) == 1450 - 1000
    # the last trigger's window ends at settling_end
    assert packets(MNTR, 121 * S) == 1600 - 1450
    # no sample before the invoke: not measured
    assert packets(MNTR, 100 * S) is None


COUNTS = {
    "herd": {"watches": 3, "zk_requests": 12, "conflicts": 2, "rebalance_attempts": 4},
    "op": {"get_data": 5, "create": 7},
    "api": {"JoinGroup": 3, "SyncGroup": 3},
}


def test_legacy_herd_counts_zookeeper_only() -> None:
    h = herd_fields(window_row(), COUNTS, MNTR, "legacy_zk", has_broker=False, has_mntr=True)
    assert (h["watches"], h["zk_requests"], h["zk_packets"], h["conflicts"]) == (3, 12, 450, 2)
    # no broker: its counts are not measured, coordination = the ZooKeeper requests alone
    assert (h["broker_group_requests"], h["group_rebalances"], h["coordination_requests"]) == (None, None, 12)
    assert h["zk_requests_by_op"] == {"create": 7, "get_data": 5}  # sorted by operation
    assert h["broker_requests_by_api"] == {}
    assert (h["failed_attempts"], h["gave_up"], h["rebalance_attempts"]) == (0, 0, 4)


def test_coordinator_herd_adds_broker_requests_and_needs_a_broker_to_be_measured() -> None:
    counts = {"herd": {"broker_group_requests": 6, "group_rebalances": 1}, "api": COUNTS["api"]}
    h = herd_fields(window_row(), counts, [], "coordinator", has_broker=True, has_mntr=False)
    assert (h["zk_requests"], h["broker_group_requests"], h["coordination_requests"]) == (0, 6, 0 + 6)
    assert (h["group_rebalances"], h["zk_packets"]) == (1, None)
    assert h["broker_requests_by_api"] == {"JoinGroup": 3, "SyncGroup": 3}
    blind = herd_fields(window_row(), counts, [], "coordinator", has_broker=False, has_mntr=False)
    assert (blind["broker_group_requests"], blind["coordination_requests"]) == (None, None)


def test_a_skipped_trigger_has_no_herd_counts() -> None:
    h = herd_fields(window_row("skipped"), COUNTS, MNTR, "legacy_zk", has_broker=True, has_mntr=True)
    counted = [k for k, v in h.items() if not k.endswith(("_by_op", "_by_api"))]
    assert counted and all(h[k] is None for k in counted)


def test_steady_rates_are_per_second_of_the_steady_window() -> None:
    # 8 s from stable to settling_end: 4 offset writes, 40 heartbeats, 12 fetches
    pu = {"steady_window_ns": 8.0 * S, "zk_commits": 4.0, "broker:Heartbeat": 40.0, "broker:Fetch": 12.0}
    assert steady_fields(pu | {"lost": 1.0}) == {
        "window_s": 8.0,
        "zk_commits_per_s": 0.5,
        "broker_per_s": {"Fetch": 1.5, "Heartbeat": 5.0},
    }
    # no steady window (the unit never became stable): no rates
    assert steady_fields({"zk_commits": 4.0}) == {
        "window_s": 0.0,
        "zk_commits_per_s": None,
        "broker_per_s": {},
    }


def test_records_fields_read_absent_counts_as_zero() -> None:
    r = records_fields({"produced": 80.0, "processed": 77.0, "lost": 1.0, "phantom": 2.0}, [[0, 40]])
    assert (r["produced"], r["processed"], r["lost"], r["lost_sample"]) == (80, 77, 1, [[0, 40]])
    assert (r["processed_not_produced"], r["not_drained"], r["duplicates"]) == (2, 0, 0)


def test_stale_generations_are_not_applicable_without_a_commit_carrying_one() -> None:
    legacy = split_brain({"overlap_episodes": 2.0, "overlap_s": 0.1234567, "commits_non_owner": 1.0})
    assert legacy == {
        "overlap_episodes": 2,
        "overlap_s": 0.123457,
        "duplicates": 0,
        "commits_non_owner": 1,
        "commits_stale_generation": None,
    }
    coordinator = split_brain({"commits_with_generation": 3.0})
    assert coordinator["commits_stale_generation"] == 0


def test_unit_totals_add_startup_and_trigger_windows() -> None:
    values = [
        {"overlap_episodes": 1.0, "overlap_s": 0.5},
        {"commits_with_generation": 2.0, "commits_stale_generation": 1.0},
    ]
    phases = [split_brain(v) for v in values]
    assert unit_totals(phases, values) == {
        "overlap_episodes": 1,
        "overlap_s": 0.5,
        "commits_non_owner": 0,
        "commits_stale_generation": 1,
    }
    # without any commit carrying a generation, the total is n/a too
    assert unit_totals(phases[:1], values[:1])["commits_stale_generation"] is None
