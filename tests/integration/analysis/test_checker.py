"""The checker (harness.analysis) on hand-made histories whose answers are worked out by hand here.

All units live in one run directory and are analysed once (units are independent by construction:
every job is keyed by case, implementation and repetition). Times are integer milliseconds; each
unit's docstring gives the timeline, each test the arithmetic behind its expected figures.
Settle window: 1 s. Origin of the reported times: the unit's ``stable`` event (1000 ms).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from harness.kernel.errors import ConfigError
from tests.support.histories import UnitHistory, write_run

pytestmark = pytest.mark.slow


def zombie() -> UnitHistory:
    """Coordinator, one partition. a owns p0 (generation 1), b owns nothing.

    a processes offsets 0..9 at 1000..1900 and, after the pause's invoke (2000) but before it took
    effect (complete 2100), 10 and 11 at 2000 and 2050. The broker reacts at 8000 (generation 2),
    serves b's JoinGroup (8050) and SyncGroup (8150); b begins at 8100 and gets p0 at 8200, then
    processes 12..77 except 40 from 8300, every 100 ms. a is resumed at 12000, processes 12 and 13
    at 12100 and 12200, commits p0 at 12250 (generation 1, accepted by the broker) and revokes at
    12300. Steady traffic: one broker report at 5000 (Heartbeat 10, OffsetCommit 2, JoinGroup 1).
    b has a heartbeat error at 9000 (untargeted), a one at 12150 (targeted); the producer refreshes
    its metadata at 9100 (workload, not coordination). Settling ends at
    15000; a Metadata request at 16000 belongs to no trigger. Produced: offsets 0..79.
    """
    u = UnitHistory("zombie", partitions=1)
    u.unit_start(0, ["a", "b"]).ready(0, "a").ready(0, "b")
    u.joined(100, "a", 0, generation=1, member="A").joined(100, "b", generation=1, member="B")
    u.stable(1000)
    u.produced(0, range(80), 900, 100)
    u.records("a", 0, range(10), 1000, 100)
    u.action(2000, "pause", ["a"], complete_ms=2100)
    u.records("a", 0, [10, 11], 2000, 50)
    u.at(
        5000,
        "broker_request",
        "broker-0",
        interval_s=1.0,
        requests={"Heartbeat": 10, "OffsetCommit": 2, "JoinGroup": 1},
    )
    u.at(8000, "group_state", "broker-0", from_state="Stable", to_state="PreparingRebalance", generation=2)
    u.at(8050, "group_request", "broker-0", api="JoinGroup").at(
        8150, "group_request", "broker-0", api="SyncGroup"
    )
    u.at(8100, "rebalance_begin", "b", generation=1, member="B")
    u.joined(8200, "b", 0, generation=2, member="B")
    u.records("b", 0, [o for o in range(12, 78) if o != 40], 8300, 100)
    u.at(9000, "heartbeat_error", "b", error="timeout")
    u.at(9100, "group_request", "broker-0", api="Metadata", client="herdlab-producer")
    u.action(12000, "resume", ["a"], trigger=False)
    u.records("a", 0, [12, 13], 12100, 100)
    u.at(12150, "heartbeat_error", "a", error="rebalance in progress")
    u.at(12250, "commit", "broker-0", member="A", partition=0, offset=14, generation=1)
    u.revoked(12300, "a", 0, generation=1, member="A")
    u.settling_end(15000)
    u.at(16000, "group_request", "broker-0", api="Metadata")
    return u


def legacy() -> UnitHistory:
    """legacy_zk, one partition. a owns p0, b and c own nothing; a processes 0..49 at 1000..10800.

    expire b at 2000 is skipped. c is crashed at 4000 (complete 4050); mntr before it: 100 packets.
    Nobody reacts until a's and b's watches at 10000. a: rebalance_begin 10000, getChildren twice
    (10010, 10020), an offset write (steady, 10060), revoked p0 10100, delete owner (10050), create
    owner (10290), assigned p0 and rebalance_end ok at 10300. b: rebalance_begin 10005, a conflict
    and a failed attempt at 10200, rebalance_begin 10250, and a failed last attempt (it gives up)
    at 10400. mntr before the next trigger
    (11990): 160. a is paused at 12000 (complete 12010, resumed 13000): nobody reacts before the
    settling ends at 14000 (mntr 170). In the drain a processes 50 and 51 at 15000 and 15200, b
    processes 52 at 15100. Produced: 0..52.
    """
    u = UnitHistory("legacy", impl="legacy_zk", partitions=1)
    u.unit_start(0, ["a", "b", "c"])
    u.joined(100, "a", 0).joined(100, "b").joined(100, "c").stable(1000)
    u.produced(0, range(53), 900, 100)
    u.records("a", 0, range(50), 1000, 200)
    u.action(2000, "expire", ["b"], skipped="ZooKeeper sessions exist only on the legacy side")
    u.mntr(3990, "invoke:2", 100).action(4000, "crash", ["c"], complete_ms=4050)
    for m in ("a", "b"):
        u.at(10000, "watch", m, path="/consumers/g/ids")
    u.at(10000, "rebalance_begin", "a").at(10005, "rebalance_begin", "b")
    u.at(10010, "zk_request", "a", op="get_children", path="/consumers/g/ids")
    u.at(10020, "zk_request", "a", op="get_children", path="/brokers/topics/t")
    u.at(10050, "zk_request", "a", op="delete", path="/consumers/g/owners/t/0")
    u.at(10060, "zk_request", "a", op="set", path="/consumers/g/offsets/t/0")
    u.revoked(10100, "a", 0)
    u.at(10200, "conflict", "b", path="/consumers/g/owners/t/0")
    u.at(10200, "rebalance_end", "b", outcome="failed", gave_up=False).at(10250, "rebalance_begin", "b")
    u.at(10290, "zk_request", "a", op="create", path="/consumers/g/owners/t/0")
    u.joined(10300, "a", 0).at(10400, "rebalance_end", "b", outcome="failed", gave_up=True)
    u.mntr(11990, "invoke:3", 160).action(12000, "pause", ["a"], complete_ms=12010)
    u.action(13000, "resume", ["a"], trigger=False)
    u.mntr(14000, "settling_end", 170).settling_end(14000)
    u.records("a", 0, [50, 51], 15000, 200).records("b", 0, [52], 15100, 100)
    return u


@pytest.fixture(scope="module")
def analysed(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    from harness.analysis.analyze import analyze
    from harness.analysis.load import load_run

    run = write_run(tmp_path_factory.mktemp("handmade"), [zombie(), legacy()], settle_window_s=1.0)
    return analyze(spark, load_run(run))


def unit(m: dict[str, Any], case: str, rep: int = 0) -> dict[str, Any]:
    (u,) = [u for u in m["units"] if u["case"] == case and u["repetition"] == rep]
    return u


# -- the paused zombie (coordinator) -----------------------------------------------------------------
def test_pause_latency_runs_from_invoke_to_the_takeover(analysed: dict[str, Any]) -> None:
    (t,) = unit(analysed, "zombie")["triggers"]
    # t0 = invoke 2000 -> 1.0 s after stable; reaction 8000 (broker); t1 = 8200 (b owns p0 alone:
    # a is not live from its pause's complete at 2100 until its resume at 12000, 3.8 s later)
    assert (t["outcome"], t["t0_s"], t["t1_s"]) == ("settled", 1.0, 7.2)
    assert (t["latency_s"], t["detection_s"], t["convergence_s"]) == (6.2, 6.0, 0.2)


def test_records_between_invoke_and_effect_open_no_phantom_overlap(analysed: dict[str, Any]) -> None:
    u = unit(analysed, "zombie")
    (t,) = u["triggers"]
    # a: [1000, 2100] (closed by the pause taking effect), then [12100, 12300] (closed by its
    # revocation); b: [8300, 14700]. One episode: [12100, 12300] = 0.2 s. (Closing a's first
    # interval only at its next record, 12100, would have given [1000, 12100] and 3.8 s more.)
    assert (t["overlap_episodes"], t["overlap_s"]) == (1, 0.2)
    assert (u["overlap_episodes"], u["overlap_s"]) == (1, 0.2)


def test_herd_counts_coordination_exactly_and_steady_traffic_as_a_rate(analysed: dict[str, Any]) -> None:
    u = unit(analysed, "zombie")
    (t,) = u["triggers"]
    # JoinGroup 8050 and SyncGroup 8150 are in [2000, 15000); Metadata at 16000 is not, the
    # producer's at 9100 is workload traffic; the
    # report's JoinGroup 1 is a counter, not an event: coordination traffic is the events.
    assert t["broker_requests_by_api"] == {"JoinGroup": 1, "SyncGroup": 1}
    assert (t["broker_group_requests"], t["coordination_requests"]) == (2, 2)
    assert (t["rebalance_attempts"], t["group_rebalances"], t["watches"], t["zk_requests"]) == (1, 0, 0, 0)
    # steady: from stable (1000) to settling_end (15000) = 14 s: Heartbeat 10/14, OffsetCommit 2/14
    assert u["steady"]["window_s"] == 14.0
    assert u["steady"]["broker_per_s"] == {"Heartbeat": round(10 / 14, 3), "OffsetCommit": round(2 / 14, 3)}


def test_zombie_duplicates_commits_and_completeness(analysed: dict[str, Any]) -> None:
    u = unit(analysed, "zombie")
    (t,) = u["triggers"]
    # offsets 12 and 13 were processed by b (8300, 8400) and by a (12100, 12200)
    assert (u["duplicates"], u["duplicates_cross_member"], t["duplicates"]) == (2, 2, 2)
    # a's commit at 12250: b's claim (since 8200) began after a's (since 100), so b owns p0; the
    # group was at generation 2 (8000) and the commit carries 1
    assert (t["commits_non_owner"], t["commits_stale_generation"]) == (1, 1)
    # produced 0..79; the highest processed offset is 77: 40 below it is lost, 78 and 79 not drained
    assert (u["produced"], u["processed"], u["lost"], u["not_drained"]) == (80, 77, 1, 2)
    assert u["lost_sample"] == [[0, 40]]


def test_session_failures_count_only_untargeted_members_after_stable(analysed: dict[str, Any]) -> None:
    u = unit(analysed, "zombie")
    assert (u["session_failures"], u["session_failures_startup"]) == (1, 0)  # b at 9000; a was paused


# -- legacy: skipped, a crash of a member that owned nothing, no effect, the drain ----------------------
def test_skipped_and_no_effect_are_outcomes(analysed: dict[str, Any]) -> None:
    expire, _, pause = unit(analysed, "legacy")["triggers"]
    assert (expire["outcome"], expire["latency_s"], expire["zk_requests"]) == ("skipped", None, None)
    assert expire["reason"] == "ZooKeeper sessions exist only on the legacy side"
    assert (pause["outcome"], pause["latency_s"], pause["detection_s"]) == ("no_effect", None, None)


def test_crash_of_a_member_that_owned_nothing_is_measured_from_t0_to_after_the_reaction(
    analysed: dict[str, Any],
) -> None:
    _, t, _ = unit(analysed, "legacy")["triggers"]
    # t0 4000, reaction 10000, t1 10300 (a owns p0 again; next change: none before 12000)
    assert (t["outcome"], t["latency_s"], t["detection_s"], t["convergence_s"]) == ("settled", 6.3, 6.0, 0.3)


def test_legacy_herd_excludes_offset_writes_and_counts_packets_between_window_edges(
    analysed: dict[str, Any],
) -> None:
    u = unit(analysed, "legacy")
    _, t, _ = u["triggers"]
    # get_children x2, delete, create; the offset write at 10060 is steady state
    assert t["zk_requests_by_op"] == {"create": 1, "delete": 1, "get_children": 2}
    assert (t["zk_requests"], t["coordination_requests"], t["broker_group_requests"]) == (4, 4, None)
    assert (t["watches"], t["conflicts"], t["failed_attempts"], t["rebalance_attempts"]) == (2, 1, 2, 3)
    assert t["gave_up"] == 1  # b's second attempt (10400) was its last
    assert t["zk_packets"] == 160 - 100  # the sample before this invoke to the next one's
    # one offset write between stable (1000) and settling_end (14000): 1 / 13 s
    assert u["steady"]["zk_commits_per_s"] == round(1 / 13, 3)


def test_overlaps_after_the_settling_phase_belong_to_the_drain_not_the_last_trigger(
    analysed: dict[str, Any],
) -> None:
    u = unit(analysed, "legacy")
    # a: [15000, 15200], b: [15100, 15100]: one episode of 0 s at 15100, after settling_end 14000
    assert (u["drain"]["overlap_episodes"], u["drain"]["overlap_s"]) == (1, 0.0)
    assert (u["triggers"][2]["overlap_episodes"], u["overlap_episodes"]) == (0, 0)
    assert (u["lost"], u["not_drained"]) == (0, 0)


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
