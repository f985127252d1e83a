"""The checker (harness.analysis) on hand-made histories whose answers are worked out by hand here.

All units live in one run directory and are analysed once (units are independent by construction:
every job is keyed by case, implementation and repetition). Times are integer milliseconds; each
unit's comment gives the timeline, each test the arithmetic behind its expected figures.
Settle window: 1 s.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from harness.errors import ConfigError
from tests.integration.analysis.histories import UnitHistory, write_run

pytestmark = pytest.mark.slow


def zombie() -> UnitHistory:
    """m0 owns p0, is paused (trigger) and comes back after m1 took over: two owners, a zombie batch.

    m0 processes offsets 0..10 at 1.0..2.0 s; paused at 2.05; m1 reacts at 4.0, is assigned at 4.5
    (generation 2) and processes 6..21 at 4.65..6.15 (every 100 ms); m0 resumes at 5.0, processes
    11 and 12 at 5.05 and 5.25, commits at 5.2 (generation 1) and revokes at 5.3.
    """
    u = UnitHistory("zombie", partitions=1)
    u.unit_start(0, ["m0", "m1"]).started(0, "m0").started(0, "m1")
    u.assigned(500, "m0", 0, generation=1, member="m0-a")
    u.stable(1000)
    u.produced(0, range(22), 900, 100)
    u.records("m0", 0, range(11), 1000, 100)
    u.nemesis(2050, "pause", ["m0"])
    u.at(4000, "rebalance_begin", "m1", generation=1, member="m1-b")
    u.assigned(4500, "m1", 0, generation=2, member="m1-b")
    u.at(4500, "rebalance_end", "m1", outcome="ok", generation=2, member="m1-b")
    u.records("m1", 0, range(6, 22), 4650, 100)
    u.nemesis(5000, "resume", ["m0"], trigger=False)
    u.records("m0", 0, [11, 12], 5050, 200)
    u.at(5200, "commit", "m0", topic=u.topic, partition=0, offset=13, generation=1, member="m0-a")
    u.revoked(5300, "m0", 0, generation=1, member="m0-a")
    u.at(6000, "commit", "m1", topic=u.topic, partition=0, offset=22, generation=2, member="m1-b")
    u.stopped(7000, "m0").stopped(7000, "m1")
    return u


def crash() -> UnitHistory:
    """legacy_zk: m0 is killed mid-batch (processed p0 up to offset 9, committed 6).

    Sources are 0.8 consumer ids; each member's started event names it (m0, m1) as the nemesis
    does. Lists of partitions in assigned / revoked, as legacy members write them. m1 learns of
    the crash by a watch at 8.0 (session timeout), revokes p1 at 8.2, owns p0 and p1 at 8.4 and
    processes p0 6..14 and p1 10..14 from 8.5 s.
    """
    a, b = "g_host-1-aaaa", "g_host-2-bbbb"
    u = UnitHistory("crash", impl="legacy_zk", partitions=2)
    u.unit_start(0, ["m0", "m1"]).started(0, a, name="m0").started(0, b, name="m1")
    u.legacy_assigned(500, a, 0).legacy_assigned(500, b, 1)
    u.stable(1000)
    u.produced(0, range(15), 1000, 100).produced(1, range(15), 1000, 100)
    u.records(a, 0, range(10), 1000, 100).records(b, 1, range(10), 1000, 100)
    u.at(1500, "commit", a, topic=u.topic, partition=0, offset=6, reason="auto")
    u.nemesis(2000, "crash", ["m0"])
    u.mntr(2010, "before:crash", 100)
    u.at(8000, "watch", b, path="/consumers/g/ids", type="CHILD")
    u.at(8050, "zk_request", b, op="getChildren", path="/consumers/g/ids")
    u.at(8060, "zk_request", b, op="getChildren", path="/brokers/ids")
    u.at(8100, "rebalance_begin", b, rebalance=2, attempt=0)
    u.legacy_revoked(8200, b, 1)
    u.at(8300, "zk_request", b, op="create", path="/consumers/g/owners/t/0")
    u.at(8350, "claim", b, topic=u.topic, partition=0)
    u.legacy_assigned(8400, b, 0, 1)
    u.at(8400, "rebalance_end", b, outcome="ok", attempt=0)
    u.records(b, 0, range(6, 15), 8500, 100).records(b, 1, range(10, 15), 8500, 100)
    u.mntr(9500, "settled", 160)
    u.stopped(11000, b)
    return u


def lost() -> UnitHistory:
    """Five records produced; offset 3 never processed, offset 1 processed twice by m0."""
    u = UnitHistory("lost", partitions=1)
    u.unit_start(0, ["m0"]).started(0, "m0").assigned(100, "m0", 0, generation=1).stable(200)
    u.produced(0, range(5), 300, 100)
    u.records("m0", 0, [0, 1, 1, 2, 4], 400, 100)
    u.stopped(1000, "m0")
    return u


def never() -> UnitHistory:
    """legacy_zk: m0 owns both partitions and leaves at 2.0; m1 fails three attempts on conflicts."""
    u = UnitHistory("never", impl="legacy_zk", partitions=2)
    u.unit_start(0, ["m0", "m1"]).started(0, "m0").started(0, "m1")
    u.legacy_assigned(500, "m0", 0, 1).stable(1000)
    u.produced(0, range(5), 1000, 100).records("m0", 0, range(5), 1000, 100)
    u.nemesis(2000, "leave", ["m0"])
    u.legacy_revoked(2050, "m0", 0, 1).stopped(2100, "m0")
    for k, t in enumerate((2500, 4500, 6500)):
        u.at(t, "rebalance_begin", "m1", rebalance=1, attempt=k)
        u.at(t + 100, "conflict", "m1", topic=u.topic, partition=0, holder="m0")
        u.at(t + 200, "rebalance_end", "m1", rebalance=1, attempt=k, outcome="conflict")
    u.stopped(10000, "m1")
    return u


def reps(rep: int) -> UnitHistory:
    """A join at 2.0; the joiner j0 gets p0 at 4.0, 5.0, 6.0 in repetitions 0, 1, 2, never in 3.

    j0 starts only at 3.5: the group is owned once and quiet for longer than the window from t0,
    but it has not settled until the joiner is live. m0 revokes p0 at 3.6 (the first reaction of a
    non-target).
    """
    u = UnitHistory("reps", repetition=rep, partitions=1)
    u.unit_start(0, ["m0"]).started(0, "m0").assigned(500, "m0", 0, generation=1).stable(1000)
    u.produced(0, range(10), 1000, 100).records("m0", 0, range(10), 1000, 100)
    u.nemesis(2000, "join", ["j0"])
    u.started(3500, "j0").revoked(3600, "m0", 0, generation=1)
    if rep < 3:
        t = 4000 + rep * 1000
        u.assigned(t, "j0", 0, generation=2)
        u.produced(0, range(10, 12), t, 50).records("j0", 0, range(10, 12), t + 100, 100)
    u.stopped(9000, "m0").stopped(9000, "j0")
    return u


def growth() -> UnitHistory:
    """The topic grows from 1 to 2 partitions at 2.0; m0 owns both from 2.6."""
    u = UnitHistory("growth", partitions=1)
    u.unit_start(0, ["m0"]).started(0, "m0").assigned(500, "m0", 0, generation=1).stable(1000)
    u.records("m0", 0, range(10), 1000, 100)
    u.nemesis(2000, "add_partitions", [], partitions=2)
    u.revoked(2500, "m0", 0, generation=1).assigned(2600, "m0", 0, 1, generation=2)
    u.records("m0", 0, [10, 11], 2700, 100).records("m0", 1, [0, 1], 2900, 100)
    u.stopped(5000, "m0")
    return u


def broker() -> UnitHistory:
    """coordinator with broker-side events: a leave, request reports, one stale accepted commit.

    Broker commits (authoritative when present): m0 gen 1 at 2.02 (m0 still owns p0), m0 gen 1 at
    2.6 (m1 owns p0 since 2.4 in generation 2: non-owner and stale), m1 gen 2 at 3.0. A member-side
    commit at 2.61 with generation 1 must be ignored. Request reports at 2.0 (covering 1..2 s),
    3.0 (2..3 s) and 4.0.
    """
    u = UnitHistory("broker", partitions=1)
    br = {"broker_id": 0, "group": "g"}
    u.unit_start(0, ["m0", "m1"]).started(100, "m0").started(100, "m1")
    u.at(
        450,
        "group_state",
        "broker-0",
        from_state="CompletingRebalance",
        to_state="Stable",
        generation=1,
        **br,
    )
    u.assigned(500, "m0", 0, generation=1, member="m0-aaa").stable(1000)
    u.produced(0, range(20), 900, 100).records("m0", 0, range(10), 1000, 100)
    u.at(
        2000,
        "broker_request",
        "broker-0",
        interval_s=1.0,
        requests={"Fetch": 10, "Heartbeat": 4},
        total=14,
        broker_id=0,
    )
    u.nemesis(2000, "leave", ["m0"])
    u.at(
        2020, "commit", "broker-0", member="m0-aaa", generation=1, topic=u.topic, partition=0, offset=10, **br
    )
    u.revoked(2050, "m0", 0, generation=1, member="m0-aaa")
    u.at(
        2080,
        "group_state",
        "broker-0",
        from_state="Stable",
        to_state="PreparingRebalance",
        generation=1,
        **br,
    )
    u.at(2080, "rebalance_begin", "broker-0", generation=1, **br)
    u.stopped(2100, "m0")
    u.at(2100, "rebalance_begin", "m1", generation=1, member="m1-bbb")
    u.at(
        2300,
        "group_state",
        "broker-0",
        from_state="PreparingRebalance",
        to_state="CompletingRebalance",
        generation=2,
        **br,
    )
    u.at(
        2350,
        "group_state",
        "broker-0",
        from_state="CompletingRebalance",
        to_state="Stable",
        generation=2,
        **br,
    )
    u.assigned(2400, "m1", 0, generation=2, member="m1-bbb")
    u.records("m1", 0, range(10, 20), 2500, 100)
    u.at(
        2600, "commit", "broker-0", member="m0-aaa", generation=1, topic=u.topic, partition=0, offset=10, **br
    )
    u.at(2610, "commit", "m1", member="m1-bbb", generation=1, topic=u.topic, partition=0, offset=12)
    u.at(
        3000, "commit", "broker-0", member="m1-bbb", generation=2, topic=u.topic, partition=0, offset=15, **br
    )
    u.at(
        3000,
        "broker_request",
        "broker-0",
        interval_s=1.0,
        requests={"JoinGroup": 2, "SyncGroup": 2, "Fetch": 10},
        total=14,
        broker_id=0,
    )
    u.at(4000, "broker_request", "broker-0", interval_s=1.0, requests={"Fetch": 10}, total=10, broker_id=0)
    u.stopped(5000, "m1")
    return u


@pytest.fixture(scope="module")
def analysed(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    from harness.analysis.analyze import analyze
    from harness.analysis.load import load_run

    units = [zombie(), crash(), lost(), never(), growth(), broker(), *(reps(r) for r in range(4))]
    run = write_run(tmp_path_factory.mktemp("handmade"), units, settle_window_s=1.0)
    return analyze(spark, load_run(run))


def unit(m: dict[str, Any], case: str, rep: int = 0) -> dict[str, Any]:
    (u,) = [u for u in m["units"] if u["case"] == case and u["repetition"] == rep]
    return u


def agg(m: dict[str, Any], case: str, trigger: str, metric: str) -> dict[str, Any]:
    (a,) = [
        a for a in m["aggregates"] if a["case"] == case and a["trigger"] == trigger and a["metric"] == metric
    ]
    return a


# -- overlapping owners: the paused zombie --------------------------------------------------------
def test_zombie_settles_only_after_the_second_claimant_revokes(analysed: dict[str, Any]) -> None:
    (t,) = unit(analysed, "zombie")["triggers"]
    # 4.5 m1 owns p0, but the resume at 5.0 comes 0.5 s later (< 1 s window) and makes m0 count
    # again (two claimants) until it revokes at 5.3: t1 = 5.3
    assert t["settled"] and t["latency_s"] == pytest.approx(5.3 - 2.05)
    assert t["detection_s"] == pytest.approx(4.0 - 2.05)  # m1's rebalance_begin
    assert t["convergence_s"] == pytest.approx(5.3 - 4.0)
    assert t["resumed_s"] == pytest.approx(5.35 - 2.05)  # m1's first record at or after 5.3
    assert t["gap_s"] == pytest.approx(4.65 - 2.0)  # m0's last record before, m1's first after


def test_zombie_batch_overlaps_the_new_owner(analysed: dict[str, Any]) -> None:
    u = unit(analysed, "zombie")
    (t,) = u["triggers"]
    # m0's stretch after the pause is [5.05, 5.25], inside m1's [4.65, 6.15]
    assert (t["overlaps"], t["overlap_s"]) == (1, pytest.approx(0.2))
    assert (u["overlaps"], u["overlap_s"]) == (1, pytest.approx(0.2))
    assert u["startup"]["overlaps"] == 0


def test_zombie_duplicates_and_commits(analysed: dict[str, Any]) -> None:
    u = unit(analysed, "zombie")
    # 6..10 by m0 before the pause and by m1; 11 and 12 by both after it
    assert (u["duplicates"], u["duplicate_deliveries"], u["duplicates_cross_member"]) == (7, 7, 7)
    assert u["triggers"][0]["duplicates"] == 7
    # m0's commit at 5.2: m1's claim (4.5) is the newer one, and generation 1 < 2
    assert u["commits_non_owner"] == 1 and u["commits_stale_generation"] == 1
    assert (u["produced"], u["processed"], u["lost"]) == (22, 22, 0)


# -- a member killed mid-batch (legacy_zk event shapes) --------------------------------------------
def test_crash_mid_batch_latency_parts(analysed: dict[str, Any]) -> None:
    (t,) = unit(analysed, "crash")["triggers"]
    assert t["action"] == "crash" and t["targets"] == ["m0"]
    # owned once again when m1 claims both at 8.4 (quiet until 11.0)
    assert t["latency_s"] == pytest.approx(6.4)
    assert t["detection_s"] == pytest.approx(6.0)  # m1's watch at 8.0
    assert t["convergence_s"] == pytest.approx(0.4)
    assert t["resumed_s"] == pytest.approx(6.5)  # both partitions have a record at 8.5
    assert t["gap_s"] == pytest.approx(8.5 - 1.9)


def test_crash_herd_counts(analysed: dict[str, Any]) -> None:
    (t,) = unit(analysed, "crash")["triggers"]
    assert (
        t["watches"],
        t["zk_requests"],
        t["conflicts"],
        t["failed_attempts"],
        t["rebalance_attempts"],
    ) == (1, 3, 0, 0, 1)
    assert t["zk_requests_by_op"] == {"create": 1, "getChildren": 2}
    assert t["zk_packets"] == 160 - 100  # mntr after t0 to the next sample
    assert t["broker_requests"] is None  # no broker reports in this unit: not measured, not zero


def test_crash_redelivery_is_duplicate_not_loss(analysed: dict[str, Any]) -> None:
    u = unit(analysed, "crash")
    # m0 processed p0 6..9 past its commit (6); m1 starts from 6 again
    assert (u["duplicates"], u["duplicates_cross_member"], u["lost"]) == (4, 4, 0)
    assert (u["overlaps"], u["commits_non_owner"]) == (0, 0)
    assert u["commits_stale_generation"] is None  # legacy commits carry no generation


# -- a lost record ---------------------------------------------------------------------------------------
def test_lost_record_is_counted_and_alerted(analysed: dict[str, Any]) -> None:
    u = unit(analysed, "lost")
    assert (u["produced"], u["processed"], u["lost"], u["lost_sample"]) == (5, 4, 1, [[0, 3]])
    assert (u["duplicates"], u["duplicate_deliveries"], u["duplicates_cross_member"]) == (1, 1, 0)
    assert u["triggers"] == []
    assert any(a.startswith("LOST 1 produced records in coordinator lost") for a in analysed["alerts"])


# -- a trigger that never settles ------------------------------------------------------------------------
def test_never_settling_trigger_is_reported(analysed: dict[str, Any]) -> None:
    (t,) = unit(analysed, "never")["triggers"]
    assert t["settled"] is False and t["t1_s"] is None
    assert t["latency_s"] is None and t["convergence_s"] is None and t["resumed_s"] is None
    assert t["detection_s"] == pytest.approx(0.5)  # m1's first attempt at 2.5
    # herd window runs to the end of the unit when it never settles
    assert (t["failed_attempts"], t["conflicts"], t["rebalance_attempts"]) == (3, 3, 3)
    assert any("never" in a and "#1 leave" in a for a in analysed["alerts"])
    a = agg(analysed, "never", "#1 leave", "latency_s")
    assert (a["n"], a["never"], a["p50"], a["max"]) == (1, 1, None, None)


# -- the joiner rule and statistics over repetitions ------------------------------------------------------
def test_join_waits_for_the_joiner_and_a_handover(analysed: dict[str, Any]) -> None:
    lat = [unit(analysed, "reps", r)["triggers"][0]["latency_s"] for r in range(4)]
    assert lat[:3] == [pytest.approx(2.0), pytest.approx(3.0), pytest.approx(4.0)] and lat[3] is None
    assert unit(analysed, "reps", 0)["triggers"][0]["detection_s"] == pytest.approx(1.6)  # m0's revoke


def test_percentiles_treat_never_as_infinite_and_ci_uses_finite_values(analysed: dict[str, Any]) -> None:
    a = agg(analysed, "reps", "#1 join", "latency_s")
    # values 2, 3, 4, +inf: p50 interpolates 3 and 4; p95 / p99 / max reach the never
    assert (a["n"], a["k"], a["never"]) == (4, 3, 1)
    assert a["p50"] == pytest.approx(3.5) and a["p95"] is None and a["p99"] is None and a["max"] is None
    # mean 3, sample sd 1, t(0.975, 2) = 4.302653
    half = 4.302653 / math.sqrt(3)
    assert a["mean"] == pytest.approx(3.0)
    assert a["ci95"] == [pytest.approx(3.0 - half, abs=1e-5), pytest.approx(3.0 + half, abs=1e-5)]
    assert "1 of 4 never" in a["ci_note"]
    d = agg(analysed, "reps", "#1 join", "detection_s")
    assert (d["n"], d["p50"], d["p99"], d["max"]) == (
        4,
        pytest.approx(1.6),
        pytest.approx(1.6),
        pytest.approx(1.6),
    )


def test_single_repetition_says_n_1(analysed: dict[str, Any]) -> None:
    a = agg(analysed, "crash", "#1 crash", "latency_s")
    assert a["ci95"] is None and a["ci_note"] == "n=1" and a["p50"] == pytest.approx(6.4)


# -- partition growth --------------------------------------------------------------------------------------
def test_growth_settles_when_new_partitions_are_owned(analysed: dict[str, Any]) -> None:
    (t,) = unit(analysed, "growth")["triggers"]
    assert t["latency_s"] == pytest.approx(0.6)  # p1 exists from 2.0, owned from 2.6
    assert t["resumed_s"] == pytest.approx(0.9)  # p1's first record at 2.9


# -- broker-side events -----------------------------------------------------------------------------------
def test_broker_detection_and_request_attribution(analysed: dict[str, Any]) -> None:
    (t,) = unit(analysed, "broker")["triggers"]
    assert t["latency_s"] == pytest.approx(0.4)
    assert t["detection_s"] == pytest.approx(0.08)  # the broker's group_state; m0's revoke is the target's
    # window [2.0, 2.4]: the report at 3.0 covers [2.0, 3.0], 40 % of it in the window
    assert t["broker_requests_by_api"] == {
        "Fetch": pytest.approx(4.0),
        "JoinGroup": pytest.approx(0.8),
        "SyncGroup": pytest.approx(0.8),
    }
    assert t["broker_requests"] == pytest.approx(5.6) and t["broker_group_requests"] == pytest.approx(1.6)
    assert (t["group_rebalances"], t["rebalance_attempts"]) == (1, 1)
    assert t["zk_packets"] is None


def test_broker_side_commits_decide_and_stale_ones_are_flagged(analysed: dict[str, Any]) -> None:
    u = unit(analysed, "broker")
    assert (u["commits_non_owner"], u["commits_stale_generation"]) == (1, 1)
    assert u["triggers"][0]["commits_non_owner"] == 1


# -- inputs --------------------------------------------------------------------------------------------------
def test_empty_history_gives_units_from_the_manifest(spark: Any, tmp_path: Path) -> None:
    from harness.analysis.analyze import analyze
    from harness.analysis.load import load_run

    run = write_run(
        tmp_path,
        [],
        manifest_units=[
            {
                "unit": "c0-coordinator-r0",
                "case": "default",
                "impl": "coordinator",
                "repetition": 0,
                "failed": "group not stable",
            }
        ],
    )
    m = analyze(spark, load_run(run))
    assert [(u["case"], u["events"], u["triggers"]) for u in m["units"]] == [("default", 0, [])]
    assert m["aggregates"] == []
    assert any("failed: group not stable" in a for a in m["alerts"])


def test_run_dir_without_history_is_a_one_line_error(tmp_path: Path) -> None:
    from harness.analysis import analyze_run

    with pytest.raises(ConfigError, match="has no history.parquet"):
        analyze_run(tmp_path)


def test_corrupt_history_is_a_one_line_error(tmp_path: Path) -> None:
    from harness.analysis import analyze_run

    (tmp_path / "history.parquet").write_bytes(b"PAR1 this is not parquet")
    with pytest.raises(ConfigError, match="not a readable Parquet file") as e:
        analyze_run(tmp_path)
    assert "\n" not in str(e.value)
