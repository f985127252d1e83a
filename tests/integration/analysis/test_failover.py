"""The failover figures of the checker (harness.analysis.failover) on hand-made histories whose answers
are worked out by hand here, exactly to the event contract (harness.kernel.events, "Failover fields").

All units live in one run directory and are analysed once. Times are integer milliseconds; every
unit's origin is its ``stable`` event at 1000 ms. Broker ``broker-N`` has broker id N; the group is
``g``, its offsets partition 7 of ``__consumer_offsets``. Settle window: 1 s.

A run without a failover fault has no failover figures and no failover definitions: the regression
fixture's real runs without one (herd-small, split-brain, migration, coordinators) compare every key and
the definitions (test_regression_fixture.py); an untargeted session failure outside any fault window
counts as before (test_checker.py, tests/unit/analysis/test_control_families.py).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.support.histories import UnitHistory, write_run

# failover: opt-in (CI runs it in its migration-or-failover step), keeping the default run under 12 minutes
pytestmark = [pytest.mark.slow, pytest.mark.failover]

OT = "__consumer_offsets"


def broker(u: UnitHistory, ms: int, n: int, kind: str, **kw: Any) -> None:
    u.at(ms, kind, f"broker-{n}", broker_id=n, **kw)


def coordinator_start(u: UnitHistory) -> None:
    """Broker 1 is elected leader of offsets partition 7 (epoch 1) and loads it at 500."""
    broker(
        u,
        400,
        1,
        "partition_state",
        topic=OT,
        partition=7,
        leader=1,
        leader_epoch=1,
        isr=[1, 2, 3],
        controller_epoch=1,
        zk_version=0,
        reason="new_partition",
    )
    broker(u, 450, 1, "coordinator_load", offsets_partition=7, phase="begin", leader_epoch=1)
    broker(
        u, 500, 1, "coordinator_load", offsets_partition=7, phase="end", leader_epoch=1, groups=0, offsets=0
    )


def takeover(u: UnitHistory) -> None:
    """Broker 2 (the controller) sees broker 1 gone at 16100, elects itself leader of p7 at 16300
    (epoch 2), loads it 16310..16800 and serves g at 17000 (JoinGroup; other group and another
    broker's answers before it do not count)."""
    broker(u, 16100, 2, "broker_change", live=[2, 3], dead=[1], added=[], controller_epoch=2)
    broker(
        u,
        16300,
        2,
        "partition_state",
        topic=OT,
        partition=7,
        leader=2,
        leader_epoch=2,
        isr=[2, 3],
        controller_epoch=2,
        zk_version=1,
        reason="offline",
    )
    broker(u, 16310, 2, "coordinator_load", offsets_partition=7, phase="begin", leader_epoch=2)
    broker(
        u,
        16800,
        2,
        "coordinator_load",
        offsets_partition=7,
        phase="end",
        leader_epoch=2,
        groups=1,
        offsets=2,
        duration_ms=490.0,
    )
    broker(u, 16900, 2, "group_served", group="other", offsets_partition=7, api="JoinGroup", generation=1)
    broker(u, 17000, 2, "group_served", group="g", offsets_partition=7, api="JoinGroup", generation=2)


def commit(u: UnitHistory, ms: int, n: int, p: int, offset: int, epoch: int) -> None:
    broker(
        u,
        ms,
        n,
        "commit",
        group="g",
        member="A",
        topic=u.topic,
        partition=p,
        offset=offset,
        generation=1,
        offsets_partition=7,
        leader_epoch=epoch,
    )


def snapshot(u: UnitHistory, ms: int, label: str, offsets: dict[str, int], **kw: Any) -> None:
    u.at(ms, "offsets_snapshot", "harness", role="harness", group="g", label=label, offsets=offsets, **kw)


def kill() -> UnitHistory:
    """Every step present. a owns p0, b p1. Produced p0 0..39 (900..4800) and 40..49 (11000..11900),
    p1 0..39 (900..4800). a processes p0 0..39 (1000..4900), b p1 0..39; after the failover a
    processes p0 40..49 but 45 from 17100 (every 100 ms: 40@17100, 41@17200 ... 49@17900, 45
    skipped) and 41 again at 18500. Broker 1 accepts commits p0 35 (7000), p0 40 (8000), p1 30
    (8500). kill_coordinator of broker 1 (#1): invoke 10000, complete 10100; b's heartbeat fails at
    12000; restart_coordinator (#2) 14000..14500 (no trigger). takeover() 16100..17000; the group
    rebalances at 17050 (generation 2). Broker 2 accepts p0 50 at 19000 (epoch 2: current). The
    harness reads g's offsets after #2 at 20000: p0 40, p1 30. Settling ends at 25000. The controller
    also drops dead broker 1 from the ISR of t-kill/1, which broker 3 keeps leading (epoch 4 -> 5 at
    16200, leader 3 again); broker 3 acknowledges a produce there at 16250 under epoch 4: not deposed
    (the newer epoch names the same leader)."""
    u = UnitHistory("kill", partitions=2)
    u.unit_start(0, ["a", "b"]).ready(0, "a").ready(0, "b")
    coordinator_start(u)
    u.joined(100, "a", 0, generation=1, member="A").joined(100, "b", 1, generation=1, member="B")
    u.stable(1000)
    u.produced(0, range(40), 900, 100).produced(0, range(40, 50), 11000, 100).produced(1, range(40), 900, 100)
    u.records("a", 0, range(40), 1000, 100).records("b", 1, range(40), 1000, 100)
    commit(u, 7000, 1, 0, 35, 1)
    commit(u, 8000, 1, 0, 40, 1)
    commit(u, 8500, 1, 1, 30, 1)
    u.action(10000, "kill_coordinator", [], complete_ms=10100, broker_id=1, offsets_partition=7, group="g")
    u.at(12000, "heartbeat_error", "b", error="NOT_COORDINATOR")
    u.action(
        14000,
        "restart_coordinator",
        [],
        complete_ms=14500,
        trigger=False,
        broker_id=1,
        offsets_partition=7,
        group="g",
    )
    takeover(u)
    broker(
        u,
        16200,
        2,
        "partition_state",
        topic=u.topic,
        partition=1,
        leader=3,
        leader_epoch=5,
        isr=[3, 2],
        controller_epoch=2,
        zk_version=4,
        reason="offline",
    )
    broker(
        u,
        16250,
        3,
        "produce_ack",
        topic=u.topic,
        partition=1,
        base_offset=40,
        count=1,
        acks=-1,
        leader_epoch=4,
    )
    broker(u, 17050, 2, "group_state", from_state="Stable", to_state="PreparingRebalance", generation=2)
    u.at(17060, "rebalance_begin", "a", generation=1, member="A").at(
        17060, "rebalance_begin", "b", generation=1, member="B"
    )
    u.joined(17080, "a", 0, generation=2, member="A").joined(17080, "b", 1, generation=2, member="B")
    u.records("a", 0, [o for o in range(40, 50) if o != 45], 17100, 100)
    u.records("a", 0, [41], 18500, 100)
    commit(u, 19000, 2, 0, 50, 2)
    snapshot(u, 20000, "after:2", {"t-kill/0": 40, "t-kill/1": 30}, broker_id=2, error=None)
    u.settling_end(25000)
    return u


def pause() -> UnitHistory:
    """The zombie. a owns p0; produced and processed 0..29 (900..3800 / 1000..3900). Partition
    t-pause/0 has leader 3, epoch 3 since 400. Broker 1 accepts p0 20 at 9000 (epoch 1, current).
    pause_coordinator of broker 1 (#1): 10000..10100; takeover() 16100..17000; broker 3 refuses a
    stale fetch at 17200; resume_coordinator (#2) 19900..20000. The resumed zombie acknowledges a
    commit of p0 25 at 20500 with epoch 1 although epoch 2 was written at 16300 (deposed), refuses
    two commits NOT_COORDINATOR at 21000 and 21100 and unloads p7 at 21500: it acted as coordinator
    20000..21500 beside broker 2 (acting since 16800): 1.5 s, one episode. Broker 3 acknowledges a
    produce on t-pause/0 with its current epoch 3 at 20600 (not deposed). The harness reads g's
    offsets after #2 at 22000: p0 20 (the zombie's commit is not visible)."""
    u = UnitHistory("pause", partitions=1)
    u.unit_start(0, ["a"]).ready(0, "a")
    coordinator_start(u)
    broker(
        u,
        400,
        1,
        "partition_state",
        topic=u.topic,
        partition=0,
        leader=3,
        leader_epoch=3,
        isr=[3, 1, 2],
        controller_epoch=1,
        zk_version=0,
        reason="new_partition",
    )
    u.joined(100, "a", 0, generation=1, member="A")
    u.stable(1000)
    u.produced(0, range(30), 900, 100).records("a", 0, range(30), 1000, 100)
    commit(u, 9000, 1, 0, 20, 1)
    u.action(10000, "pause_coordinator", [], complete_ms=10100, broker_id=1, offsets_partition=7, group="g")
    takeover(u)
    broker(u, 17200, 3, "fenced", what="fetch", error="FENCED_LEADER_EPOCH", topic=u.topic, partition=0)
    u.action(
        19900,
        "resume_coordinator",
        [],
        complete_ms=20000,
        trigger=False,
        broker_id=1,
        offsets_partition=7,
        group="g",
    )
    commit(u, 20500, 1, 0, 25, 1)
    broker(
        u,
        20600,
        3,
        "produce_ack",
        topic=u.topic,
        partition=0,
        base_offset=30,
        count=1,
        acks=-1,
        leader_epoch=3,
    )
    broker(u, 21000, 1, "fenced", what="commit", error="NOT_COORDINATOR", group="g")
    broker(u, 21100, 1, "fenced", what="commit", error="NOT_COORDINATOR", group="g")
    broker(u, 21500, 1, "coordinator_load", offsets_partition=7, phase="unload", leader_epoch=1)
    snapshot(u, 22000, "after:2", {"t-pause/0": 20}, broker_id=2, error=None)
    u.settling_end(25000)
    return u


def cut() -> UnitHistory:
    """The coordinator never comes back: broker 1 is cut from ZooKeeper (#1, 10000..10100) and no
    broker_change ever reports it. It accepted p0 40 (8000) and p1 30 (8500) before; the harness's
    end snapshot (24000, broker 1 answering) returns p0 40 and p1 20: p1 is lost."""
    u = UnitHistory("cut", partitions=2)
    u.unit_start(0, ["a", "b"]).ready(0, "a").ready(0, "b")
    coordinator_start(u)
    u.joined(100, "a", 0, generation=1, member="A").joined(100, "b", 1, generation=1, member="B")
    u.stable(1000)
    u.produced(0, range(20), 900, 100).produced(1, range(20), 900, 100)
    u.records("a", 0, range(20), 1000, 100).records("b", 1, range(20), 1000, 100)
    commit(u, 8000, 1, 0, 40, 1)
    commit(u, 8500, 1, 1, 30, 1)
    u.action(10000, "cut_coordinator", [], complete_ms=10100, broker_id=1, offsets_partition=7, group="g")
    snapshot(u, 24000, "end", {"t-cut/0": 40, "t-cut/1": 20}, broker_id=1, error=None)
    u.settling_end(25000)
    return u


def zk() -> UnitHistory:
    """legacy_zk, the ZooKeeper leader killed (#1: invoke 5000, a new leader serves at 5400; restarted
    by #2 at 8000..8500, no trigger). m2 was SUSPENDED at 3000 (before the fault: an untargeted
    session failure). m1 is SUSPENDED at 5050, its session expires at 5200 (LOST), it rebalances from
    5300 and owns p0 again at 5500. Settling ends at 9000 (the fault's window: 5000..9000)."""
    u = UnitHistory("zk", impl="legacy_zk", partitions=2)
    u.unit_start(0, ["m1", "m2"]).ready(0, "m1").ready(0, "m2")
    u.joined(100, "m1", 0).joined(100, "m2", 1)
    u.stable(1000)
    u.produced(0, range(10), 900, 100).records("m1", 0, range(10), 1000, 100)
    u.at(3000, "zk_state", "m2", state="SUSPENDED")
    u.action(5000, "kill_zk_leader", [], complete_ms=5400, old_leader=0, new_leader=2, elected_s=0.4)
    u.at(5050, "zk_state", "m1", state="SUSPENDED").at(5200, "zk_state", "m1", state="LOST")
    u.at(5300, "rebalance_begin", "m1")
    u.revoked(5300, "m1", 0)
    u.joined(5500, "m1", 0)
    u.action(8000, "restart_zk_server", [], complete_ms=8500, trigger=False, server=0)
    u.settling_end(9000)
    return u


@pytest.fixture(scope="module")
def analysed(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    from harness.analysis.analyze import analyze
    from harness.analysis.load import load_run

    run = write_run(tmp_path_factory.mktemp("failover"), [kill(), pause(), cut(), zk()], settle_window_s=1.0)
    return analyze(spark, load_run(run))


def unit(m: dict[str, Any], case: str) -> dict[str, Any]:
    (u,) = [u for u in m["units"] if u["case"] == case]
    return u


def test_kill_every_step_present(analysed: dict[str, Any]) -> None:
    (f,) = unit(analysed, "kill")["failover"]["faults"]
    assert (f["action"], f["action_id"], f["broker_id"], f["offsets_partition"], f["group"]) == (
        "kill_coordinator",
        1,
        1,
        7,
        "g",
    )
    # t0 = complete 10100 -> 9.1 s after stable; detection 16100 - 10100 = 6.0; election 16300 - 16100
    # = 0.2; loading 16800 - 16300 = 0.5; rejoin 17000 - 16800 = 0.2; failover 17000 - 10100 = 6.9
    assert f["t0_s"] == 9.1
    assert (f["detection_s"], f["election_s"], f["loading_s"], f["rejoin_s"]) == (6.0, 0.2, 0.5, 0.2)
    assert (f["failover_s"], f["new_coordinator"]) == (6.9, 2)
    # last commits before 10100: p0 40 (8000), p1 30; the snapshot after #2 returns both
    assert (f["offsets_lost"], f["offsets_lost_partitions"], f["offsets_snapshot"]) == (0, [], "after:2")
    # p0 45 produced at 11500 (in the window 10000..25000) never processed, 49 was: lost 1; 41
    # delivered again at 18500: one duplicate in the window
    assert (f["records_lost"], f["reprocessed"]) == (1, 1)
    assert f["deposed_acceptances"] == {"commit": 0, "produce": 0}
    # broker 1 acted 500..10100 (killed), broker 2 from 16800: never both
    assert f["double_coordinator_s"] == 0.0
    assert unit(analysed, "kill")["failover"]["double_coordinator"] == {"seconds": 0.0, "episodes": 0}


def test_session_trouble_in_a_fault_window_is_the_faults_not_an_untargeted_failure(
    analysed: dict[str, Any],
) -> None:
    u = unit(analysed, "kill")
    assert u["session_failures"] == 0  # b's heartbeat error at 12000 lies in the kill's window
    assert u["failover"]["faults"][0]["session_failures"] == 1
    z = unit(analysed, "zk")
    assert z["session_failures"] == 1  # m2's SUSPENDED at 3000, before the fault; m1's two are the fault's
    assert z["failover"]["faults"][0]["session_failures"] == 2


def test_pause_zombie_deposed_commit_and_double_coordinator_time(analysed: dict[str, Any]) -> None:
    fo = unit(analysed, "pause")["failover"]
    (f,) = fo["faults"]
    assert (f["detection_s"], f["election_s"], f["loading_s"], f["rejoin_s"], f["failover_s"]) == (
        6.0,
        0.2,
        0.5,
        0.2,
        6.9,
    )
    # the commit at 20500 carries epoch 1 after epoch 2 was written at 16300; broker 3's produce
    # carries its current epoch 3; broker 1's commit at 9000 preceded the new epoch
    assert f["deposed_acceptances"] == {"commit": 1, "produce": 0}
    assert fo["deposed_acceptances"] == {"commit": 1, "produce": 0}
    # broker 1: 500..10100 (paused at 10100), 20000 (resumed)..21500 (unload); broker 2 16800..25000
    assert f["double_coordinator_s"] == 1.5
    assert fo["double_coordinator"] == {"seconds": 1.5, "episodes": 1}
    assert fo["fenced"] == {"commit/NOT_COORDINATOR": 2, "fetch/FENCED_LEADER_EPOCH": 1}
    assert (f["offsets_lost"], f["offsets_snapshot"]) == (0, "after:2")
    name = "coordinator pause rep 0: fault #1 pause_coordinator (broker 1)"
    assert (
        f"{name}: a deposed leader or coordinator acknowledged 1 commits and 0 produce requests"
        in analysed["alerts"]
    )
    assert f"{name}: two brokers acted as coordinator of the group for 1.500 s" in analysed["alerts"]


def test_cut_that_never_recovers_is_never_and_loses_an_offset(analysed: dict[str, Any]) -> None:
    (f,) = unit(analysed, "cut")["failover"]["faults"]
    assert (f["detection_s"], f["election_s"], f["loading_s"], f["rejoin_s"]) == ("never", None, None, None)
    assert (f["failover_s"], f["new_coordinator"]) == ("never", None)
    # committed p0 40, p1 30 before 10100; the end snapshot returns p1 20 < 30
    assert (f["offsets_lost"], f["offsets_lost_partitions"], f["offsets_snapshot"]) == (1, ["t-cut/1"], "end")
    name = "coordinator cut rep 0: fault #1 cut_coordinator (broker 1)"
    assert f"{name} lost 1 committed offsets (t-cut/1)" in analysed["alerts"]
    assert f"{name}: the group was never served again (failover never)" in analysed["alerts"]


def test_zookeeper_leader_kill_row(analysed: dict[str, Any]) -> None:
    (f,) = unit(analysed, "zk")["failover"]["faults"]
    # election 5400 - 5000 = 0.4 s; m1's session expired at 5200 and it rebalanced at 5300 < 9000
    assert (f["kind"], f["zk_election_s"], f["sessions_lost"]) == ("zookeeper", 0.4, ["m1"])
    assert f["session_rebalances"] == {"in_window": 1, "after_window": 0}
    (t,) = unit(analysed, "zk")["triggers"]
    assert (t["action"], t["window_end_s"]) == ("kill_zk_leader", 8.0)


def test_summary_and_alerts_do_not_invalidate(analysed: dict[str, Any]) -> None:
    s = analysed["failover"]
    c = s["coordinator"]["faults"]
    assert (c["kill_coordinator"]["failover_s"], c["pause_coordinator"]["failover_s"]) == ([6.9], [6.9])
    assert (c["cut_coordinator"]["never"], c["cut_coordinator"]["offsets_lost"]) == (1, 1)
    assert s["coordinator"]["double_coordinator"] == {"seconds": 1.5, "episodes": 1}
    assert s["legacy_zk"]["faults"]["kill_zk_leader"]["zk_election_s"] == [0.4]
    terms = [d[0] for d in analysed["definitions"]]
    assert "failover time and its parts" in terms and "deposed acceptances" in terms
    # the only reason the run is invalid is the kill unit's lost record, not a failover figure
    assert analysed["verdict"]["reasons"] == ["1 records lost in 1 unit (coordinator kill rep 0)"]


def test_the_report_renders_the_checkers_table(analysed: dict[str, Any], tmp_path: Path) -> None:
    from harness.report import render_report

    lines = render_report(tmp_path, analysed)["markdown"].read_text().splitlines()
    i = lines.index("## Coordinator failover")
    # implementations in the run's order (coordinator, legacy_zk), then case: cut, kill, pause, zk
    assert lines[i + 6 : i + 10] == [
        "| coordinator | cut rep 0: #1 cut_coordinator (broker 1) | never | — | — | — | never | 1 (t-cut/1) | 0 | "
        "0 | 0 | 0.000 s | — |",
        "| coordinator | kill rep 0: #1 kill_coordinator (broker 1) | 6.000 s | 0.200 s | 0.500 s | 0.200 s | "
        "6.900 s | 0 | 1 | 1 | 0 | 0.000 s | — |",
        "| coordinator | pause rep 0: #1 pause_coordinator (broker 1) | 6.000 s | 0.200 s | 0.500 s | 0.200 s | "
        "6.900 s | 0 | 0 | 0 | 1 commit, 0 produce | 1.500 s | — |",
        "| legacy_zk | zk rep 0: #1 kill_zk_leader | — | 0.400 s | — | — | — | — | 0 | 0 | 0 | 0.000 s | 1 (m1) |",
    ]
