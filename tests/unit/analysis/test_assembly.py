"""The families' assembly into the metrics document, without Spark: collected rows in, entries out.

Each test feeds one family's field function the rows its Spark job would have collected, written
by hand, and checks the entry against figures worked out here. The Spark jobs themselves are
checked end to end in tests/integration/analysis.
"""

from __future__ import annotations

from typing import Any

from harness.analysis.herd import herd_fields, packets, packets_minus_idle
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


MNTR: list[tuple[int, str, float | None]] = [
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


# -- the legacy herd bench's figures --------------------------------------------------------------------
def test_packets_minus_idle_subtract_the_rate_between_the_idle_and_invoke_samples() -> None:
    # idle:1 at 107 s (940), invoke:1 at 109 s (1000): 60 packets / 2 s = 30/s while nothing changed;
    # the window's samples 109 s -> 120 s: 1450 - 1000 = 450 raw, minus 30/s x 11 s = 330: 120
    samples: list[tuple[int, str, float | None]] = [*MNTR, (107 * S, "idle:1", 940.0)]
    assert packets_minus_idle(samples, 110 * S) == 450 - 330
    # the last window's start sample is invoke:2, and there is no idle:2: nothing to subtract
    assert packets_minus_idle(samples, 121 * S) is None
    # an idle sample of another trigger does not count
    assert packets_minus_idle([*MNTR, (107 * S, "idle:2", 940.0)], 110 * S) is None
    # no sample before the invoke: not measured
    assert packets_minus_idle(samples, 100 * S) is None


def test_legacy_herd_reports_the_bench_figures_of_its_window() -> None:
    counts = COUNTS | {
        "herd": COUNTS["herd"]
        | {
            "owner_writes": 6,
            "registration_reads": 9,
            "rebalancing_members": 3,
            "first_watch": 110 * S + S // 4,
        },
        "invoke": {"members": 4, "partitions": 3},
    }
    samples: list[tuple[int, str, float | None]] = [*MNTR, (107 * S, "idle:1", 940.0)]
    h = herd_fields(window_row(), counts, samples, "legacy_zk", has_broker=False, has_mntr=True)
    assert (h["owner_writes"], h["registration_reads"], h["rebalancing_members"]) == (6, 9, 3)
    # t0 110 s, first watch 110.25 s
    assert h["first_notification_s"] == 0.25
    assert (h["zk_packets"], h["zk_packets_minus_idle"]) == (450, 120)
    assert (h["members_at_invoke"], h["partitions_at_invoke"]) == (4, 3)
    # no watch in the window: no first notification; counts absent from the job are 0
    bare = herd_fields(window_row(), COUNTS, MNTR, "legacy_zk", has_broker=False, has_mntr=True)
    assert (bare["first_notification_s"], bare["owner_writes"], bare["rebalancing_members"]) == (None, 0, 0)
    assert bare["zk_packets_minus_idle"] is None  # MNTR has no idle sample


def test_members_and_partitions_just_before_each_invoke() -> None:
    from types import SimpleNamespace

    from harness.analysis.facts import _at_invoke  # pyright: ignore[reportPrivateUsage]

    def e(ts: int, kind: str, source: str, role: str = "member", **kw: Any) -> dict[str, Any]:
        return {"ts_ns": ts, "kind": kind, "source": source, "role": role, **kw}

    rows = [
        e(0, "unit_start", "nemesis", "harness", partitions=2),
        e(1, "rebalance_end", "a", outcome="ok"),
        e(2, "rebalance_end", "b", outcome="ok"),
        e(3, "rebalance_end", "c", outcome="failed"),  # not completed: never live
        e(5, "complete", "nemesis", "nemesis", action="crash", targets=["b"]),
        e(6, "complete", "nemesis", "nemesis", action="add_partitions", targets=[], partitions=5),
        e(10, "rebalance_end", "d", outcome="ok"),  # at the second invoke: not before it
    ]
    first, second = SimpleNamespace(tid=0, invoke_ns=5), SimpleNamespace(tid=1, invoke_ns=10)
    # before 5: a and b live (b's crash completes at 5, not before), P = 2; before 10: a, P = 5
    assert _at_invoke(rows, [second, first]) == {0: (2, 2), 1: (1, 5)}
