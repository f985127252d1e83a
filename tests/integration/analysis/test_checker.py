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

from harness.analysis.startup import DEFINITION
from harness.kernel.errors import ConfigError
from tests.support.histories import UnitHistory, ns, write_run

pytestmark = pytest.mark.slow
STARTUP_TEXT = DEFINITION[1]


def zombie() -> UnitHistory:
    """Coordinator, one partition. a owns p0 (generation 1), b owns nothing.

    a processes offsets 0..9 at 1000..1900 and, after the pause's invoke (2000) but before it took
    effect (complete 2100), 10 and 11 at 2000 and 2050. The broker reacts at 8000 (generation 2),
    serves b's JoinGroup (8050) and SyncGroup (8150); b begins at 8100 and gets p0 at 8200, then
    processes 12..77 except 40 from 8300, every 100 ms. a is resumed at 12000, processes 12 and 13
    at 12100 and 12200, commits p0 at 12250 (generation 1, accepted by the broker) and revokes at
    12300. Steady traffic: one broker report at 5000 (Heartbeat 10, OffsetCommit 2, JoinGroup 1).
    b has a heartbeat error at 9000 (untargeted), a one at 12150 (targeted); the broker expires a's
    session at 8000 (a targeted member) and b's at 9050 (untargeted) and removes b on a leave at 14500
    (not a failure); the producer refreshes
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
    u.at(8000, "member_removed", "broker-0", member="A", reason="expired", generation=1)
    u.at(8050, "group_request", "broker-0", api="JoinGroup").at(
        8150, "group_request", "broker-0", api="SyncGroup"
    )
    u.at(8100, "rebalance_begin", "b", generation=1, member="B")
    u.joined(8200, "b", 0, generation=2, member="B")
    u.records("b", 0, [o for o in range(12, 78) if o != 40], 8300, 100)
    u.at(9000, "heartbeat_error", "b", error="timeout")
    u.at(9050, "member_removed", "broker-0", member="B", reason="expired", generation=2)
    u.at(9100, "group_request", "broker-0", api="Metadata", client="herdlab-producer")
    u.action(12000, "resume", ["a"], trigger=False)
    u.records("a", 0, [12, 13], 12100, 100)
    u.at(12150, "heartbeat_error", "a", error="rebalance in progress")
    u.at(12250, "commit", "broker-0", member="A", partition=0, offset=14, generation=1)
    u.revoked(12300, "a", 0, generation=1, member="A")
    u.at(14500, "member_removed", "broker-0", member="B", reason="leave", generation=2)
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


IDS, OWN = "/consumers/g/ids", "/consumers/g/owners/t"


def bench_shaped(case: str, settling_end_ms: int = 16000) -> UnitHistory:
    """legacy_zk in the shape ``herdlab bench legacy_zk`` writes, P = 2: a owns p0, v (the victim) p1.

    A join of ``joiner`` (invoke 3000, ready 3500 = t0) and a crash of v (invoke 8000; a and the
    joiner take over after v's session expired). mntr samples: idle:1 at 1000 (100 packets),
    invoke:1 at 3000 (140), idle:2 at 6000 (300), invoke:2 at 8000 (340), settling_end at 16000
    (500). Settling ends at ``settling_end_ms``; a teardown delete at 16500 belongs to no trigger.
    """
    u = UnitHistory(case, impl="legacy_zk", partitions=2)
    u.unit_start(0, ["a", "v"]).ready(10, "a").ready(20, "v")
    u.joined(100, "a", 0).joined(110, "v", 1).stable(200)

    def zk(ms: int, source: str, op: str, path: str) -> None:
        u.at(ms, "zk_request", source, op=op, path=path)

    # -- join: the window [3500, 8000)
    u.mntr(1000, "idle:1", 100).mntr(3000, "invoke:1", 140)
    join = {"action": "join", "action_id": 1, "targets": ["joiner"], "trigger": True}
    u.at(3000, "invoke", "nemesis", **join)
    zk(3200, "a", "get", "/brokers/ids")  # before t0 (the joiner's ready): not the join's
    u.ready(3500, "joiner")
    u.at(3510, "complete", "nemesis", **join, ready_ns={"joiner": ns(3500)})
    zk(3600, "joiner", "create", f"{IDS}/joiner")
    u.at(3620, "rebalance_begin", "joiner").at(3630, "rebalance_end", "joiner", outcome="ok")
    u.at(3700, "watch", "a", path=IDS)  # the first reaction
    zk(3701, "a", "exists", IDS)
    zk(3702, "a", "get_children", IDS)
    u.at(3710, "watch", "v", path=IDS).at(3800, "rebalance_begin", "a")
    for ms, m in ((3801, "a"), (3802, "v"), (3803, "joiner")):
        zk(ms, "a", "get", f"{IDS}/{m}")
    zk(3804, "a", "delete", f"{OWN}/0")
    u.revoked(3805, "a", 0).at(3810, "rebalance_begin", "v")
    zk(3811, "v", "delete", f"{OWN}/1")
    u.revoked(3812, "v", 1)
    zk(3900, "a", "create", f"{OWN}/0")
    zk(3901, "a", "set", "/consumers/g/offsets/t/0")  # an offset write: steady state
    u.assigned(3902, "a", 0).at(3903, "rebalance_end", "a", outcome="ok")
    zk(3950, "v", "create", f"{OWN}/1")
    u.at(3951, "conflict", "v", partition=1)
    u.at(3952, "rebalance_end", "v", outcome="conflict")  # a failed attempt
    u.at(4100, "rebalance_begin", "v")
    zk(4200, "v", "create", f"{OWN}/1")
    u.assigned(4201, "v", 1)  # owned once again: t1 of the join
    u.at(4202, "rebalance_end", "v", outcome="ok")
    # -- crash of v: the window [8000, settling end)
    u.mntr(6000, "idle:2", 300).mntr(8000, "invoke:2", 340)
    crash = {"action": "crash", "action_id": 2, "targets": ["v"], "trigger": True}
    u.at(8000, "invoke", "nemesis", **crash)
    u.at(8100, "complete", "nemesis", **crash, exit_code=-9)  # p1 unowned from here
    u.at(14000, "watch", "a", path=IDS).at(14001, "watch", "joiner", path=IDS)
    for ms, m in ((14002, "joiner"), (14004, "a")):
        zk(ms, m, "exists", IDS)
        zk(ms + 1, m, "get_children", IDS)
    u.at(14100, "rebalance_begin", "a").at(14110, "rebalance_begin", "joiner")
    zk(14120, "a", "get", f"{IDS}/a")
    zk(14121, "a", "get", f"{IDS}/joiner")
    zk(14140, "a", "delete", f"{OWN}/0")
    u.revoked(14150, "a", 0)
    zk(14200, "a", "create", f"{OWN}/0")
    u.assigned(14201, "a", 0).at(14202, "rebalance_end", "a", outcome="ok")
    zk(14300, "joiner", "create", f"{OWN}/1")
    u.assigned(14301, "joiner", 1)  # t1 of the crash
    u.at(14302, "rebalance_end", "joiner", outcome="ok")
    u.mntr(16000, "settling_end", 500).settling_end(settling_end_ms)
    zk(16500, "a", "delete", f"{OWN}/0")  # teardown: after the settling phase
    return u


def resumption() -> UnitHistory:
    """``bench_shaped`` with records around each trigger's t1, inside and outside t1's 100 ms bucket.

    The join settles at t1 = 4201 (bucket [4200, 4300)), its window ends at 8000, P1 = 2: p0 has
    records at 4200 (t1's bucket, before t1), 4290 (t1's bucket, after it) and 4400; p1 at 4199 (the
    bucket before) and 4220 (t1's bucket, after it). The crash settles at t1 = 14301 (bucket
    [14300, 14400)), its window ends at the settling end, 16000: p0 has records at 14250 and 14350,
    p1 at 14300 (t1's bucket, before t1) and 16100 (after the window)."""
    u = bench_shaped("resumption")
    u.records("a", 0, [0], 4200, 0).records("a", 0, [1], 4290, 0).records("a", 0, [2], 4400, 0)
    u.records("v", 1, [0], 4199, 0).records("v", 1, [1], 4220, 0)
    u.records("a", 0, [3], 14250, 0).records("a", 0, [4], 14350, 0)
    u.records("joiner", 1, [3], 14300, 0).records("joiner", 1, [4], 16100, 0)
    return u


def ghost() -> UnitHistory:
    """Coordinator, one partition. a joins with p0 at 100 and processes offsets 0..9 at 1000..1900;
    g, a process that never logged a control event (no unit_start of it, no ready, no assignment),
    processes offsets 5, 6 and 7 at 1550, 1650 and 1750. Stable at 1000, no trigger, settling ends
    at 3000. Produced: offsets 0..9."""
    u = UnitHistory("ghost", partitions=1)
    u.unit_start(0, ["a"]).ready(0, "a")
    u.joined(100, "a", 0, generation=1, member="A")
    u.stable(1000)
    u.produced(0, range(10), 900, 10)
    u.records("a", 0, range(10), 1000, 100)
    u.records("g", 0, [5, 6, 7], 1550, 100)
    u.settling_end(3000)
    return u


# -- split brain: processing intervals cut by silence, and each episode's records ----------------------
# Every unit here has a processing gap bound of 500 ms in the manifest (as the runner writes it) but
# ``derived``, whose bound the analysis derives from the manifest's scenario.

GAP_S = 0.5


def stray() -> UnitHistory:
    """Coordinator, one partition: a record after a cut, ten seconds of silence, a record before the revoke.

    m0 owns p0 and processes offsets 0..89 every 100 ms from 1000 (the last at 9900). It is cut off
    from the broker (invoke 9950, complete 10000) and processes one more record it had fetched,
    offset 90, at 10004. m1 gets p0 at 15640 and processes offsets 88..132 every 100 ms from 15779
    (the last at 20179). The cut heals at 19900; m0 processes offset 91 at 20084 and revokes p0 at
    20087. Settling ends at 25000."""
    u = UnitHistory("stray", partitions=1, gap_s=GAP_S)
    u.unit_start(0, ["m0", "m1"]).ready(0, "m0").ready(0, "m1")
    u.joined(100, "m0", 0, generation=1, member="M0").joined(100, "m1", generation=1, member="M1")
    u.stable(1000)
    u.records("m0", 0, range(90), 1000, 100)
    u.action(9950, "cut", ["m0"], complete_ms=10000, target="broker")
    u.records("m0", 0, [90], 10004, 0)
    u.joined(15640, "m1", 0, generation=2, member="M1")
    u.records("m1", 0, range(88, 133), 15779, 100)
    u.action(19900, "heal", ["m0"], trigger=False)
    u.records("m0", 0, [91], 20084, 0)
    u.revoked(20087, "m0", 0, generation=1, member="M0")
    u.settling_end(25000)
    return u


def cut_zombie() -> UnitHistory:
    """legacy_zk, one partition: a member cut off from ZooKeeper keeps processing at the workload's rate.

    a owns p0 and processes offsets 0..220 every 50 ms from 1000 (the last at 12000). It is cut off
    from ZooKeeper at 3000 (complete 3000) and goes on processing; the cut heals at 11950 and a
    revokes p0 at 12010. b takes p0 over at 9000 and processes offsets 150..248 every 50 ms from
    9100 (the last at 14000). Settling ends at 16000."""
    u = UnitHistory("cut-zombie", impl="legacy_zk", partitions=1, gap_s=GAP_S)
    u.unit_start(0, ["a", "b"])
    u.joined(100, "a", 0).joined(100, "b").stable(1000)
    u.records("a", 0, range(221), 1000, 50)
    u.action(3000, "cut", ["a"], target="zookeeper")
    u.joined(9000, "b", 0)
    u.records("b", 0, range(150, 249), 9100, 50)
    u.action(11950, "heal", ["a"], trigger=False)
    u.revoked(12010, "a", 0)
    u.settling_end(16000)
    return u


def alternating() -> UnitHistory:
    """Coordinator, one partition: two members process it by turns, each within the bound.

    a processes offsets 0..9 every 200 ms from 1000 (the last at 2800), b offsets 10..19 every
    200 ms from 1100 (the last at 2900). No trigger; settling ends at 5000."""
    u = UnitHistory("alternating", partitions=1, gap_s=GAP_S)
    u.unit_start(0, ["a", "b"]).ready(0, "a").ready(0, "b")
    u.joined(100, "a", 0, generation=1, member="A").joined(100, "b", generation=1, member="B")
    u.stable(1000)
    for i in range(10):
        u.records("a", 0, [i], 1000 + 200 * i, 0).records("b", 0, [10 + i], 1100 + 200 * i, 0)
    u.settling_end(5000)
    return u


def gaps() -> UnitHistory:
    """Coordinator, two partitions: a silence just above the bound on p0, one equal to it on p1.

    b processes p0's offsets 100..129 and p1's 200..229 every 100 ms from 1050 (the last at 3950).
    a processes p0's offsets 0..10 every 100 ms from 1000 (the last at 2000) and, after 501 ms of
    silence, 11..21 from 2501 (the last at 3501); p1's offsets 0..10 from 1000 and, after exactly
    500 ms, 11..21 from 2500 (the last at 3500). No trigger; settling ends at 5000."""
    u = UnitHistory("gaps", partitions=2, gap_s=GAP_S)
    u.unit_start(0, ["a", "b"]).ready(0, "a").ready(0, "b")
    u.joined(100, "a", 0, 1, generation=1, member="A").joined(100, "b", generation=1, member="B")
    u.stable(1000)
    u.records("b", 0, range(100, 130), 1050, 100).records("b", 1, range(200, 230), 1050, 100)
    u.records("a", 0, range(11), 1000, 100).records("a", 0, range(11, 22), 2501, 100)
    u.records("a", 1, range(11), 1000, 100).records("a", 1, range(11, 22), 2500, 100)
    u.settling_end(5000)
    return u


def derived() -> UnitHistory:
    """Coordinator, one partition, no bound in the manifest: the analysis derives it from the
    manifest's scenario (the defaults: 200 records a second, kafka-python's 500 ms fetch wait and the
    members' 200 ms poll window: max(10 x 1 / 200, 0.5 + 0.2) = 0.7 s).

    a processes offsets 0..4 every 100 ms from 1000 (the last at 1400) and 5..9 from 2100 (700 ms of
    silence; the last at 2500), then 10..14 from 3201 (701 ms; the last at 3601). b processes offsets
    0..29 every 100 ms from 1050 (the last at 3950). No trigger; settling ends at 5000."""
    u = UnitHistory("derived", partitions=1)
    u.unit_start(0, ["a", "b"]).ready(0, "a").ready(0, "b")
    u.joined(100, "a", 0, generation=1, member="A").joined(100, "b", generation=1, member="B")
    u.stable(1000)
    u.records("b", 0, range(30), 1050, 100)
    u.records("a", 0, range(5), 1000, 100).records("a", 0, range(5, 10), 2100, 100)
    u.records("a", 0, range(10, 15), 3201, 100)
    u.settling_end(5000)
    return u


@pytest.fixture(scope="module")
def analysed(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    from harness.analysis.analyze import analyze
    from harness.analysis.load import load_run

    units = [
        zombie(),
        legacy(),
        bench_shaped("bench"),
        bench_shaped("bench-never", settling_end_ms=15000),
        resumption(),
        ghost(),
        stray(),
        cut_zombie(),
        alternating(),
        gaps(),
        derived(),
    ]
    run = write_run(tmp_path_factory.mktemp("handmade"), units, settle_window_s=1.0)
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
    # b's heartbeat error at 9000 and its expiry at 9050; a was paused (targeted); a leave is no failure
    assert (u["session_failures"], u["session_failures_startup"]) == (2, 0)


def test_start_up_counts_the_members_ready_before_stable_from_unit_start(analysed: dict[str, Any]) -> None:
    # bench: unit_start 0, a ready at 10, v at 20, stable at 200; the joiner's ready (3500) is after
    # stable: not start-up. Seconds from unit_start: first 0.01, last 0.02, stable 0.2
    assert unit(analysed, "bench")["start_up"] == {
        "members_ready": 2,
        "first_ready_s": 0.01,
        "all_ready_s": 0.02,
        "stable_s": 0.2,
    }
    # zombie: both ready at 0, stable at 1000; the legacy unit's members wrote no ready: no entry
    assert unit(analysed, "zombie")["start_up"]["members_ready"] == 2
    assert unit(analysed, "zombie")["start_up"]["stable_s"] == 1.0
    assert unit(analysed, "legacy")["start_up"] is None
    assert ["start-up", STARTUP_TEXT] in analysed["definitions"]


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


# -- a member with records and no control event ------------------------------------------------------
def test_records_of_a_member_without_control_events_are_measured_under_its_name(
    analysed: dict[str, Any],
) -> None:
    u = unit(analysed, "ghost")
    # the jobs over every record key members by a hash of the name, mapped back to names from the
    # control events and, as g has none, from the records: a: [1000, 1900], g: [1550, 1750]: one
    # episode of 0.2 s before any trigger (startup; dropping g's interval would give none); 5, 6
    # and 7 were processed by a and by g
    assert (u["startup"]["overlap_episodes"], u["startup"]["overlap_s"]) == (1, 0.2)
    assert (u["duplicates"], u["duplicates_cross_member"], u["duplicate_deliveries"]) == (3, 3, 3)
    assert (u["produced"], u["processed"], u["lost"], u["not_drained"]) == (10, 10, 0, 0)


# -- the legacy herd bench's figures ---------------------------------------------------------------------
def test_each_change_is_counted_in_its_trigger_window_beside_the_model(analysed: dict[str, Any]) -> None:
    from harness.bench.legacy_zk_figures import figures
    from legacy_zk.model import HerdModel

    join, crash = unit(analysed, "bench")["triggers"]
    # times from the origin, stable at 200
    assert (join["action"], join["targets"], join["outcome"]) == ("join", ["joiner"], "settled")
    assert (join["t0_s"], join["window_end_s"], join["t1_s"]) == (3.3, 7.8, 4.001)
    assert join["latency_s"] == 0.701 and join["first_notification_s"] == 0.2
    assert join["watches"] == 2  # a and v
    # joiner 1 + a 7 (re-arm 2, registrations 3, delete, create; not the offset write) + v 3
    assert join["zk_requests"] == 11
    assert join["zk_requests_by_op"] == {"create": 4, "delete": 2, "exists": 1, "get": 3, "get_children": 1}
    assert join["owner_writes"] == 5 and join["registration_reads"] == 3
    assert (join["conflicts"], join["failed_attempts"], join["gave_up"]) == (1, 1, 0)
    assert (join["rebalance_attempts"], join["rebalancing_members"]) == (4, 3)
    # packets from the invoke:1 sample (140) to the invoke:2 sample (340) over 5000 ms; idle
    # (140 - 100) / 2000 ms = 0.02/ms: 200 - 100
    assert (join["zk_packets"], join["zk_packets_minus_idle"]) == (200, 200 - 100)
    # 2 members before the join, P = 2, B = 1: 3 after; 9 + 11 x 3 + 6 requests and the leader finders of
    # min(3, 2) = 2 owners, 2 each; 9 + 6 registrations
    assert (join["members_at_invoke"], join["partitions_at_invoke"]) == (2, 2)
    assert figures(join).model == HerdModel(
        members_after=3, notifications=2, zk_requests=52, owner_writes=4, registration_reads=15
    )

    assert (crash["action"], crash["targets"], crash["outcome"]) == ("crash", ["v"], "settled")
    assert (crash["t0_s"], crash["window_end_s"]) == (7.8, 15.8)
    assert crash["latency_s"] == 6.301 and crash["first_notification_s"] == 6.0
    assert (crash["watches"], crash["zk_requests"], crash["owner_writes"], crash["registration_reads"]) == (
        2,
        9,
        3,
        2,
    )
    assert crash["zk_requests_by_op"] == {"create": 2, "delete": 1, "exists": 2, "get": 2, "get_children": 2}
    assert (crash["conflicts"], crash["failed_attempts"]) == (0, 0)
    assert (crash["rebalance_attempts"], crash["rebalancing_members"]) == (2, 2)
    # 340 -> 500 over 8000 ms at the idle (340 - 300) / 2000 ms = 0.02/ms: 160 - 160
    assert (crash["zk_packets"], crash["zk_packets_minus_idle"]) == (160, 0)
    # a, v and the joiner before; 2 survivors: 4 + 11 x 2 + 6 requests and 2 owners' leader finders of 2
    # each, 4 + 4 registrations
    assert (crash["members_at_invoke"], crash["partitions_at_invoke"]) == (3, 2)
    assert figures(crash).model == HerdModel(
        members_after=2, notifications=2, zk_requests=36, owner_writes=4, registration_reads=8
    )


def test_resumed_is_the_last_partition_s_first_record_at_or_after_t1_in_the_window(
    analysed: dict[str, Any],
) -> None:
    join, crash = unit(analysed, "resumption")["triggers"]
    # join: p0's first at or after 4201 is 4290 (4200 shares t1's bucket but precedes it), p1's is
    # 4220 (4199 precedes t1); resumed when the later of them came, 4290, from t0 = 3500
    assert (join["t1_s"], join["resumed_s"]) == (4.001, 0.79)
    # crash: p0 resumed at 14350, p1 never inside the window (14300 < t1, 16100 after its end)
    assert (crash["t1_s"], crash["resumed_s"]) == (14.101, None)


def test_a_change_that_does_not_settle_before_the_settling_end_is_never(analysed: dict[str, Any]) -> None:
    # the joiner's p1 comes at 14301; a settling end at 15000 < 14301 + W leaves no settled instant
    _join, crash = unit(analysed, "bench-never")["triggers"]
    assert crash["outcome"] == "never" and crash["latency_s"] is None and crash["t1_s"] is None
    assert crash["watches"] == 2  # still counted: the window ends at the settling end


def test_a_trigger_without_a_watch_has_no_first_notification(analysed: dict[str, Any]) -> None:
    # the legacy unit's pause (window [12000, 14000)): nobody reacts, nothing is watched or written
    t = unit(analysed, "legacy")["triggers"][2]
    assert (t["first_notification_s"], t["owner_writes"], t["registration_reads"]) == (None, 0, 0)
    assert t["rebalancing_members"] == 0
    # a, b and c live before the pause at 12000 minus c, crashed at 4050: a and b; P = 1
    assert (t["members_at_invoke"], t["partitions_at_invoke"]) == (2, 1)
    # mntr 160 at invoke:3, 170 at settling_end; no idle:3 sample: nothing to subtract
    assert (t["zk_packets"], t["zk_packets_minus_idle"]) == (10, None)
    # the skipped expire has no counts
    skipped = unit(analysed, "legacy")["triggers"][0]
    assert (skipped["owner_writes"], skipped["members_at_invoke"], skipped["first_notification_s"]) == (
        None,
        None,
        None,
    )


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


# -- the published schema: this real document, as metrics.json holds it, conforms --------------------
def test_the_document_conforms_to_the_metrics_schema(analysed: dict[str, Any]) -> None:
    import json

    from harness.analysis.metrics_schema import validate_metrics

    doc = json.loads(json.dumps(analysed, default=str))  # as render_report writes metrics.json
    assert validate_metrics(doc) == []
    doc["verdict"]["valid"] = "yes"
    assert validate_metrics(doc) == ["verdict.valid: 'yes' is not one of [True, False, 'unknown']"]


# -- split brain: processing intervals cut by silence, and each episode's records ----------------------
# Every unit here has a processing gap bound of 500 ms in the manifest (as the runner writes it) but
# ``derived``, whose bound the analysis derives from the manifest's scenario.
def test_a_stray_record_after_a_cut_does_not_bridge_the_silence(analysed: dict[str, Any]) -> None:
    u = unit(analysed, "stray")
    (t,) = u["triggers"]
    # m0: [1000, 10000] (the cut's complete 100 ms after its last record closes it), [10004, 10004]
    # (the stray record, alone: 10 080 ms of silence follow), [20084, 20087] (the revoke, 3 ms after its
    # record); m1: [15779, 20179]. One episode: [20084, 20087] = 0.003 s. (Bridging the silence gave
    # [10004, 20087] and 20087 - 15779 = 4.308 s.)
    assert (t["overlap_episodes"], t["overlap_s"]) == (1, 0.003)
    assert (u["overlap_episodes"], u["overlap_s"]) == (1, 0.003)
    assert u["processing_gap_s"] == GAP_S
    # the episode: m0 processed offset 91 (at 20084), which m1 had processed too (88..132); m1 processed
    # nothing inside it (its records at 20079 and 20179 lie outside). Times from stable (1000).
    (e,) = u["overlaps"]
    assert (e["p"], e["tid"], e["start_s"], e["end_s"], e["duration_s"]) == (
        0,
        t["index"],
        19.084,
        19.087,
        0.003,
    )
    assert e["members"] == [
        {"member": "m0", "records": 1, "offsets": [91, 91], "duplicates": 1},
        {"member": "m1", "records": 0, "offsets": None, "duplicates": 0},
    ]


def test_a_zombie_processing_at_the_workload_s_rate_counts_its_whole_overlap(
    analysed: dict[str, Any],
) -> None:
    u = unit(analysed, "cut-zombie")
    (t,) = u["triggers"]
    # a: [1000, 3000] (its cut closes it; the record at 3000 belongs before the close), then
    # [3050, 12010] (records every 50 ms, closed by the revoke 10 ms after its last); b: [9100, 14000].
    # One episode: [9100, 12010] = 2.91 s
    assert (t["overlap_episodes"], t["overlap_s"]) == (1, 2.91)
    (e,) = u["overlaps"]
    assert (e["start_s"], e["end_s"]) == (8.1, 11.01)
    # inside [9100, 12010]: a's records at 9100..12000, offsets (9100 - 1000) / 50 = 162 .. 220 (59);
    # b's at 9100..12000, offsets 150 .. 150 + 58 = 208 (59). b processed 150..248, so all 59 of a's
    # were b's too; a processed 0..220, so all 59 of b's were a's too.
    assert e["members"] == [
        {"member": "a", "records": 59, "offsets": [162, 220], "duplicates": 59},
        {"member": "b", "records": 59, "offsets": [150, 208], "duplicates": 59},
    ]


def test_two_members_alternating_within_the_bound_make_one_episode(analysed: dict[str, Any]) -> None:
    u = unit(analysed, "alternating")
    # a: [1000, 2800] (gaps of 200 ms), b: [1100, 2900]: one episode [1100, 2800] = 1.7 s, before any
    # trigger. Inside: a's records at 1200..2800 (offsets 1..9), b's at 1100..2700 (offsets 10..18);
    # no offset was processed by both.
    assert (u["startup"]["overlap_episodes"], u["startup"]["overlap_s"]) == (1, 1.7)
    (e,) = u["overlaps"]
    assert (e["tid"], e["start_s"], e["end_s"]) == (-1, 0.1, 1.8)
    assert e["members"] == [
        {"member": "a", "records": 9, "offsets": [1, 9], "duplicates": 0},
        {"member": "b", "records": 9, "offsets": [10, 18], "duplicates": 0},
    ]


def test_a_gap_just_above_the_bound_makes_two_episodes_and_one_equal_to_it_one(
    analysed: dict[str, Any],
) -> None:
    u = unit(analysed, "gaps")
    # b: [1050, 3950] on each partition. p0: a's [1000, 2000] and [2501, 3501] (501 ms > 500 between
    # them): episodes [1050, 2000] (0.95 s) and [2501, 3501] (1.0 s). p1: a's [1000, 3500] (500 ms is
    # not above the bound): one episode [1050, 3500] (2.45 s). Three episodes, 4.4 s.
    assert (u["startup"]["overlap_episodes"], u["startup"]["overlap_s"]) == (3, 4.4)
    by_p = sorted((e["p"], e["start_s"], e["end_s"]) for e in u["overlaps"])
    assert by_p == [(0, 0.05, 1.0), (0, 1.501, 2.501), (1, 0.05, 2.5)]


def test_a_bound_missing_from_the_manifest_is_derived_from_its_scenario(analysed: dict[str, Any]) -> None:
    u = unit(analysed, "derived")
    assert u["processing_gap_s"] == 0.7
    # a: [1000, 2500] (700 ms of silence is not above 0.7 s), [3201, 3601] (701 ms is); b: [1050, 3950].
    # Episodes [1050, 2500] (1.45 s) and [3201, 3601] (0.4 s): 1.85 s.
    assert (u["startup"]["overlap_episodes"], u["startup"]["overlap_s"]) == (2, 1.85)
