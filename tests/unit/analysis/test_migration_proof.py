"""The migration proof (harness.analysis.migration) on hand-made histories whose answers are worked
out by hand here.

Every unit is a legacy_zk unit whose members are switched to coordinator members (and back, for the
rollback) by nemesis steps labelled ``migration`` / ``migration_step`` as the runner writes them. All
units live in one run and are analysed once. Times are integer milliseconds; every unit's origin
is its ``stable`` event at 1000 ms, so a time of T ms reads (T - 1000) / 1000 s. Member ``m*`` /
``r*`` are legacy members, ``c*`` coordinator members.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness.analysis.migration_verdict import expect_of, partition_entry, summary, worst
from tests.support.histories import UnitHistory, write_run

pytestmark = pytest.mark.slow

LEGACY, COORD = "legacy_zk", "coordinator"


@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    """The test session's Spark (``spark_session`` is get-or-create: one JVM for every module)."""
    from harness.analysis.spark import spark_session

    yield spark_session()


def switch(u: UnitHistory, ms: int, action: str, targets: list[str], step: int = 1, **kw: Any) -> None:
    """A switch step as the runner writes it: stop_member is a trigger, start_member is not."""
    u.action(
        ms,
        action,
        targets,
        complete_ms=ms + 100,
        trigger=action == "stop_member",
        migration=kw.pop("migration", "switch"),
        migration_step=step,
        **kw,
    )


def clean() -> UnitHistory:
    """All at once, 2 partitions, no broker events (member commits with store kafka count).

    m0 owns p0 and processes 0..9 (1000..1900); m1 owns p1 and processes 0..9 (1000..1900).
    Commits: p0 kafka 8 at 2000, zookeeper 10 at 2500; p1 zookeeper 6 at 2000 (an older event
    without ``store``: a legacy member's is ZooKeeper's), kafka 8 at 2500. Switch (step 1): stop m0
    and m1 at 3000, start c0 and c1 at 3600 (c0's ready says impl=coordinator; c1's says nothing:
    the step's member_kind). Both assigned at 3800; c0 processes p0 10..19, c1 p1 8..19 from 3900.
    c0 commits p0 20 at 5500 (after the takeover: not counted). Produced 0..19 on both.
    """
    u = UnitHistory("clean", impl=LEGACY, partitions=2)
    u.unit_start(0, ["m0", "m1"]).ready(0, "m0").ready(0, "m1")
    u.joined(100, "m0", 0).joined(100, "m1", 1).stable(1000)
    u.produced(0, range(20), 900, 10).produced(1, range(20), 900, 10)
    u.records("m0", 0, range(10), 1000, 100).records("m1", 1, range(10), 1000, 100)
    u.at(2000, "commit", "m0", topic=u.topic, partition=0, offset=8, store="kafka")
    u.at(2000, "commit", "m1", topic=u.topic, partition=1, offset=6)
    u.at(2500, "commit", "m0", topic=u.topic, partition=0, offset=10, store="zookeeper")
    u.at(2500, "commit", "m1", topic=u.topic, partition=1, offset=8, store="kafka")
    switch(u, 3000, "stop_member", ["m0", "m1"])
    u.revoked(3050, "m0", 0).revoked(3050, "m1", 1).stopped(3060, "m0").stopped(3060, "m1")
    switch(u, 3600, "start_member", ["c0", "c1"], member_kind=COORD)
    u.at(3650, "ready", "c0", impl=COORD).ready(3650, "c1")
    u.joined(3800, "c0", 0, generation=1, member="C0").joined(3800, "c1", 1, generation=1, member="C1")
    u.records("c0", 0, range(10, 20), 3900, 100).records("c1", 1, range(8, 20), 3900, 100)
    u.at(5500, "commit", "c0", topic=u.topic, partition=0, offset=20, store="kafka")
    u.settling_end(8000)
    return u


def replay() -> UnitHistory:
    """All at once, 1 partition, offsets not carried. The unit has broker events (a group_state),
    so the broker's commit events are the kafka store's truth: m0's own commit event with store
    kafka is not counted, and the broker committed nothing on p0 before the takeover.

    m0 processes 0..9 (1000..1900), commits zookeeper 10 at 2000 (and a member-side kafka 10).
    Switch: stop m0 at 3000, start c0 at 3500 (ready impl=coordinator 3550), assigned 3800; c0
    starts from the earliest offset: 0..14 from 3900. The broker records c0's commit of 15 at 5400
    (after the takeover). Produced 0..14.
    """
    u = UnitHistory("replay", impl=LEGACY, partitions=1)
    u.unit_start(0, ["m0"]).ready(0, "m0").joined(100, "m0", 0).stable(1000)
    u.produced(0, range(15), 900, 10)
    u.records("m0", 0, range(10), 1000, 100)
    u.at(2000, "commit", "m0", topic=u.topic, partition=0, offset=10, store="zookeeper")
    u.at(2000, "commit", "m0", topic=u.topic, partition=0, offset=10, store="kafka")
    switch(u, 3000, "stop_member", ["m0"])
    u.revoked(3050, "m0", 0).stopped(3060, "m0")
    switch(u, 3500, "start_member", ["c0"], member_kind=COORD)
    u.at(3550, "ready", "c0", impl=COORD)
    u.at(3700, "group_state", "broker-0", from_state="Empty", to_state="PreparingRebalance", generation=1)
    u.joined(3800, "c0", 0, generation=1, member="C0")
    u.records("c0", 0, range(15), 3900, 100)
    u.at(5400, "commit", "broker-0", topic=u.topic, partition=0, offset=15, member="C0", generation=1)
    u.settling_end(8000)
    return u


def mixed() -> UnitHistory:
    """Rolling, 2 partitions: KIP-125's mixed group. Broker commit events (the kafka store).

    m0 owns p0 and processes p0 0..29 (1000..3900); m1 owns p1 and processes p1 0..9
    (1000..1900); m0 also processes p1 5 and 6 at 1500 and 1600 and gives p1 up at 1700 (a
    legacy-only overlap with m1: same kind, not the migration's). Broker commits: p0 12 at 2000, p0 15 and p1 8 at 2500, p0 30
    at 4800 (c0's, after the takeover). ZooKeeper commits: m0 p0 15 at 2500, m1 p1 10 at 2900.
    Switch step 1, rolling: stop m1 at 3000, start c0 at 3500 (ready 3550); the coordinator group
    has only c0, which gets p0 and p1 at 3700 and processes p0 20..29 (3800..4700) and p1 10..14
    (3800..4200) while m0 still holds p0 until its revocation at 4000. Then stop m0 at 5000,
    start c1 at 5500 (ready 5550, assigned nothing). Produced p0 0..29, p1 0..14.
    """
    u = UnitHistory("mixed", impl=LEGACY, partitions=2)
    u.unit_start(0, ["m0", "m1"]).ready(0, "m0").ready(0, "m1")
    u.joined(100, "m0", 0).joined(100, "m1", 1).stable(1000)
    u.produced(0, range(30), 900, 10).produced(1, range(15), 900, 10)
    u.records("m0", 0, range(30), 1000, 100).records("m1", 1, range(10), 1000, 100)
    u.records("m0", 1, [5, 6], 1500, 100).revoked(1700, "m0", 1)
    u.at(2000, "commit", "broker-0", topic=u.topic, partition=0, offset=12, member="", generation=-1)
    u.at(2500, "commit", "broker-0", topic=u.topic, partition=0, offset=15, member="", generation=-1)
    u.at(2500, "commit", "broker-0", topic=u.topic, partition=1, offset=8, member="", generation=-1)
    u.at(2500, "commit", "m0", topic=u.topic, partition=0, offset=15, store="zookeeper")
    u.at(2900, "commit", "m1", topic=u.topic, partition=1, offset=10, store="zookeeper")
    switch(u, 3000, "stop_member", ["m1"])
    u.revoked(3050, "m1", 1).stopped(3060, "m1")
    switch(u, 3500, "start_member", ["c0"], member_kind=COORD)
    u.at(3550, "ready", "c0", impl=COORD)
    u.joined(3700, "c0", 0, 1, generation=1, member="C0")
    u.records("c0", 0, range(20, 30), 3800, 100).records("c0", 1, range(10, 15), 3800, 100)
    u.revoked(4000, "m0", 0)
    u.at(4800, "commit", "broker-0", topic=u.topic, partition=0, offset=30, member="C0", generation=1)
    switch(u, 5000, "stop_member", ["m0"])
    u.stopped(5060, "m0")
    switch(u, 5500, "start_member", ["c1"], member_kind=COORD)
    u.at(5550, "ready", "c1", impl=COORD)
    u.settling_end(9000)
    return u


def lost() -> UnitHistory:
    """All at once, 1 partition: the new owner skips an acknowledged offset.

    m0 processes 0..9 (1000..1900), commits zookeeper 10 at 2000. Switch: stop m0 at 3000, start
    c0 at 3500 (ready 3550), assigned 3800; c0 processes 11..15 from 3900: 10 is never processed.
    Produced 0..15.
    """
    u = UnitHistory("lost", impl=LEGACY, partitions=1)
    u.unit_start(0, ["m0"]).ready(0, "m0").joined(100, "m0", 0).stable(1000)
    u.produced(0, range(16), 900, 10)
    u.records("m0", 0, range(10), 1000, 100)
    u.at(2000, "commit", "m0", topic=u.topic, partition=0, offset=10, store="zookeeper")
    switch(u, 3000, "stop_member", ["m0"])
    u.revoked(3050, "m0", 0).stopped(3060, "m0")
    switch(u, 3500, "start_member", ["c0"], member_kind=COORD)
    u.at(3550, "ready", "c0", impl=COORD)
    u.joined(3800, "c0", 0, generation=1, member="C0")
    u.records("c0", 0, range(11, 16), 3900, 100)
    u.settling_end(8000)
    return u


def rollback() -> UnitHistory:
    """A switch (step 1) and its rollback (step 2), 1 partition, no broker events.

    m0 processes 0..4 (1000..1400), commits zookeeper 5 at 1900. Switch: stop m0 at 2000, start c0
    at 2300 (ready 2350), assigned 2500; c0 processes 5..9 (2600..3000) and commits (store kafka)
    10 at 4900. Rollback: stop c0 at 5000, start r0 at 5300 (ready 5350: impl legacy_zk, the unit's),
    assigned 5500; r0 resumes at 10: 10..14 (5600..6000). Produced 0..14.
    """
    u = UnitHistory("rollback", impl=LEGACY, partitions=1)
    u.unit_start(0, ["m0"]).ready(0, "m0").joined(100, "m0", 0).stable(1000)
    u.produced(0, range(15), 900, 10)
    u.records("m0", 0, range(5), 1000, 100)
    u.at(1900, "commit", "m0", topic=u.topic, partition=0, offset=5, store="zookeeper")
    switch(u, 2000, "stop_member", ["m0"])
    u.revoked(2050, "m0", 0).stopped(2060, "m0")
    switch(u, 2300, "start_member", ["c0"], member_kind=COORD)
    u.at(2350, "ready", "c0", impl=COORD)
    u.joined(2500, "c0", 0, generation=1, member="C0")
    u.records("c0", 0, range(5, 10), 2600, 100)
    u.at(4900, "commit", "c0", topic=u.topic, partition=0, offset=10, store="kafka")
    switch(u, 5000, "stop_member", ["c0"], step=2, migration="rollback")
    u.revoked(5050, "c0", 0).stopped(5060, "c0")
    switch(u, 5300, "start_member", ["r0"], step=2, migration="rollback", member_kind=LEGACY)
    u.at(5350, "ready", "r0", impl=LEGACY)
    u.joined(5500, "r0", 0)
    u.records("r0", 0, range(10, 15), 5600, 100)
    u.settling_end(8000)
    return u


def plain() -> UnitHistory:
    """No migration step: the unit gets no ``migration`` entry."""
    u = UnitHistory("plain", impl=LEGACY, partitions=1)
    u.unit_start(0, ["m0"]).ready(0, "m0").joined(100, "m0", 0).stable(1000)
    u.produced(0, range(5), 900, 10).records("m0", 0, range(5), 1000, 100)
    u.settling_end(3000)
    return u


@pytest.fixture(scope="module")
def analysed(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    from harness.analysis.analyze import analyze
    from harness.analysis.load import load_run

    units = [clean(), replay(), mixed(), lost(), rollback(), plain()]
    run = write_run(tmp_path_factory.mktemp("migration"), units, settle_window_s=1.0)
    return analyze(spark, load_run(run))


def unit(m: dict[str, Any], case: str) -> dict[str, Any]:
    (u,) = [u for u in m["units"] if u["case"] == case]
    return u


def part(m: dict[str, Any], case: str, p: int, switch_index: int = 0) -> dict[str, Any]:
    (e,) = [
        e for e in unit(m, case)["migration"]["switches"][switch_index]["partitions"] if e["partition"] == p
    ]
    return e


FIGURES = (
    "taken_over_s",
    "zookeeper_committed",
    "kafka_committed",
    "committed",
    "processed_last",
    "resumed",
    "resumed_at",
    "window",
    "reprocessed",
    "lost",
    "overlap_episodes",
    "overlap_s",
    "verdict",
)


def figures(e: dict[str, Any]) -> dict[str, Any]:
    return {k: e[k] for k in FIGURES}


def test_clean_all_at_once_switch_resumes_at_the_committed_offsets(analysed: dict[str, Any]) -> None:
    (s,) = unit(analysed, "clean")["migration"]["switches"]
    # t_S: the stop's invoke 3000 -> 2.0 s; one stop step: all at once
    assert {k: s[k] for k in ("step", "action", "mode", "from", "to", "t_s")} == {
        "step": 1,
        "action": "switch",
        "mode": "all_at_once",
        "from": LEGACY,
        "to": COORD,
        "t_s": 2.0,
    }
    # p0: taken over at 3800 -> 2.8 s; zk 10 (2500), kafka 8 (2000): committed 10; m0's last
    # offset 9: window 9 + 1 - 10 = 0; c0 resumes at 10 and reprocesses nothing
    assert figures(part(analysed, "clean", 0)) == {
        "taken_over_s": 2.8,
        "zookeeper_committed": 10,
        "kafka_committed": 8,
        "committed": 10,
        "processed_last": 9,
        "resumed": [{"member": "c0", "offset": 10}],
        "resumed_at": 10,
        "window": 0,
        "reprocessed": 0,
        "lost": 0,
        "overlap_episodes": 0,
        "overlap_s": 0.0,
        "verdict": "clean",
    }
    # p1: zk 6 (the commit without store), kafka 8: committed 8; m1's last 9: window 9 + 1 - 8 = 2;
    # c1 (kind from its start step's member_kind) resumes at 8: reprocesses 8 and 9, 2 <= 2: clean
    assert figures(part(analysed, "clean", 1)) == {
        "taken_over_s": 2.8,
        "zookeeper_committed": 6,
        "kafka_committed": 8,
        "committed": 8,
        "processed_last": 9,
        "resumed": [{"member": "c1", "offset": 8}],
        "resumed_at": 8,
        "window": 2,
        "reprocessed": 2,
        "lost": 0,
        "overlap_episodes": 0,
        "overlap_s": 0.0,
        "verdict": "clean",
    }
    assert part(analysed, "clean", 0)["topic"] == "t-clean"
    assert s["verdict"] == unit(analysed, "clean")["migration"]["verdict"] == "clean"


def test_offsets_not_carried_replay_beyond_the_window(analysed: dict[str, Any]) -> None:
    e = part(analysed, "replay", 0)
    # zk 10; the unit has broker events and the broker committed nothing before the takeover
    # (3800): kafka None; committed 10, m0's last 9: window 0; c0 starts at 0 and processes 0..9
    # again: reprocessed 10 = processed_last + 1 > window 0
    assert figures(e) == {
        "taken_over_s": 2.8,
        "zookeeper_committed": 10,
        "kafka_committed": None,
        "committed": 10,
        "processed_last": 9,
        "resumed": [{"member": "c0", "offset": 0}],
        "resumed_at": 0,
        "window": 0,
        "reprocessed": 10,
        "lost": 0,
        "overlap_episodes": 0,
        "overlap_s": 0.0,
        "verdict": "replay",
    }
    assert unit(analysed, "replay")["migration"]["verdict"] == "replay"


def test_mixed_rolling_switch_counts_cross_kind_overlap_only(analysed: dict[str, Any]) -> None:
    (s,) = unit(analysed, "mixed")["migration"]["switches"]
    assert (s["mode"], s["t_s"]) == ("rolling", 2.0)  # two stop steps; the first invoke at 3000
    # p0: c0 assigned at 3700 -> 2.7 s. Broker commits before 3700: 12 (2000), 15 (2500); the
    # one at 4800 is later. zk 15. m0's offsets before 3700: 0..26 (offset i at 1000 + 100 i):
    # window 26 + 1 - 15 = 12. c0 resumes at 20 and processes 20..29, all of which m0 processed:
    # reprocessed 10. m0's interval on p0 [1000, revoked 4000] and c0's [3800, 4700] overlap in
    # [3800, 4000]: one episode of 0.2 s -> overlap.
    assert figures(part(analysed, "mixed", 0)) == {
        "taken_over_s": 2.7,
        "zookeeper_committed": 15,
        "kafka_committed": 15,
        "committed": 15,
        "processed_last": 26,
        "resumed": [{"member": "c0", "offset": 20}],
        "resumed_at": 20,
        "window": 12,
        "reprocessed": 10,
        "lost": 0,
        "overlap_episodes": 1,
        "overlap_s": 0.2,
        "verdict": "overlap",
    }
    # p1: zk 10 (2900), broker 8 (2500): committed 10; legacy last 9: window 0; c0 resumes at 10.
    # m0's p1 records (1500, 1600) overlap m1's interval: legacy with legacy, not counted here.
    assert figures(part(analysed, "mixed", 1)) == {
        "taken_over_s": 2.7,
        "zookeeper_committed": 10,
        "kafka_committed": 8,
        "committed": 10,
        "processed_last": 9,
        "resumed": [{"member": "c0", "offset": 10}],
        "resumed_at": 10,
        "window": 0,
        "reprocessed": 0,
        "lost": 0,
        "overlap_episodes": 0,
        "overlap_s": 0.0,
        "verdict": "clean",
    }
    # the unit's own split-brain totals see both episodes (startup 1500 and the window of 3000)
    assert unit(analysed, "mixed")["overlap_episodes"] == 2
    assert s["verdict"] == unit(analysed, "mixed")["migration"]["verdict"] == "overlap"


def test_a_skipped_acknowledged_offset_is_lost_with_an_alert(analysed: dict[str, Any]) -> None:
    e = part(analysed, "lost", 0)
    # zk 10, m0's last 9: window 0; c0 resumes at 11: 10 acknowledged, never processed, below 15
    assert figures(e) == {
        "taken_over_s": 2.8,
        "zookeeper_committed": 10,
        "kafka_committed": None,
        "committed": 10,
        "processed_last": 9,
        "resumed": [{"member": "c0", "offset": 11}],
        "resumed_at": 11,
        "window": 0,
        "reprocessed": 0,
        "lost": 1,
        "overlap_episodes": 0,
        "overlap_s": 0.0,
        "verdict": "lost",
    }
    assert "LOST records across the migration of legacy_zk lost rep 0 (p0: 1)" in analysed["alerts"]


def test_a_rollback_is_a_switch_from_coordinator_to_legacy(analysed: dict[str, Any]) -> None:
    first, back = unit(analysed, "rollback")["migration"]["switches"]
    assert (first["step"], first["action"], first["from"], first["to"], first["t_s"]) == (
        1,
        "switch",
        LEGACY,
        COORD,
        1.0,
    )
    assert (back["step"], back["action"], back["mode"], back["from"], back["to"], back["t_s"]) == (
        2,
        "rollback",
        "all_at_once",
        COORD,
        LEGACY,
        4.0,
    )
    # switch: c0 assigned at 2500 -> 1.5 s; zk 5 (1900), no kafka commit yet; m0's last 4: window 0
    assert figures(part(analysed, "rollback", 0, 0)) == {
        "taken_over_s": 1.5,
        "zookeeper_committed": 5,
        "kafka_committed": None,
        "committed": 5,
        "processed_last": 4,
        "resumed": [{"member": "c0", "offset": 5}],
        "resumed_at": 5,
        "window": 0,
        "reprocessed": 0,
        "lost": 0,
        "overlap_episodes": 0,
        "overlap_s": 0.0,
        "verdict": "clean",
    }
    # rollback: r0 assigned at 5500 -> 4.5 s; zk 5 (m0's, 1900), kafka 10 (c0's, 4900):
    # committed 10; c0's last 9: window 0; r0 resumes at 10, reprocesses nothing c0 processed
    assert figures(part(analysed, "rollback", 0, 1)) == {
        "taken_over_s": 4.5,
        "zookeeper_committed": 5,
        "kafka_committed": 10,
        "committed": 10,
        "processed_last": 9,
        "resumed": [{"member": "r0", "offset": 10}],
        "resumed_at": 10,
        "window": 0,
        "reprocessed": 0,
        "lost": 0,
        "overlap_episodes": 0,
        "overlap_s": 0.0,
        "verdict": "clean",
    }


def test_run_summary_and_units_without_a_switch(analysed: dict[str, Any]) -> None:
    assert "migration" not in unit(analysed, "plain")
    # the hand-made manifest has no [migration] table: expect clean
    assert analysed["migration"] == {
        "expect": "clean",
        "verdict": "lost",
        "units": {
            "legacy_zk clean rep 0": "clean",
            "legacy_zk replay rep 0": "replay",
            "legacy_zk mixed rep 0": "overlap",
            "legacy_zk lost rep 0": "lost",
            "legacy_zk rollback rep 0": "clean",
        },
        "as_expected": False,
    }
    assert (
        "migration verdict lost, expected clean (legacy_zk replay rep 0: replay, legacy_zk mixed rep 0: "
        "overlap, legacy_zk lost rep 0: lost)"
    ) in analysed["alerts"]


# -- the pure part -------------------------------------------------------------------------------
def entry(**kw: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "topic": "t",
        "partition": 0,
        "taken_over_s": 1.0,
        "zookeeper_committed": None,
        "kafka_committed": None,
        "processed_last": None,
        "resumed": [],
        "reprocessed": 0,
        "lost": 0,
        "overlap_episodes": 0,
        "overlap_s": 0.0,
    }
    return partition_entry(**{**base, **kw})


def test_window_and_verdict_rules() -> None:
    # nothing committed: the window is every processed offset, 0..4 -> 5
    assert entry(processed_last=4)["window"] == 5
    assert entry(processed_last=4, reprocessed=5)["verdict"] == "clean"
    assert entry(processed_last=4, reprocessed=6)["verdict"] == "replay"
    # nothing processed: window 0; a commit ahead of the processed offsets never makes it negative
    assert entry()["window"] == 0
    assert entry(processed_last=4, kafka_committed=9)["window"] == 0
    # committed is the larger store's: 7 vs 3 -> 7; window 9 + 1 - 7 = 3
    e = entry(processed_last=9, zookeeper_committed=3, kafka_committed=7)
    assert (e["committed"], e["window"]) == (7, 3)
    assert entry(taken_over_s=None)["verdict"] == "not_taken_over"
    assert entry(taken_over_s=None, lost=1, overlap_episodes=1)["verdict"] == "lost"
    assert entry(overlap_episodes=1, reprocessed=9)["verdict"] == "overlap"
    assert entry(resumed=[{"member": "c1", "offset": 4}, {"member": "c0", "offset": 7}])["resumed_at"] == 4
    assert worst(["clean", "replay", "not_taken_over"]) == "not_taken_over"
    assert worst(["replay", "overlap"]) == "overlap" and worst([]) == "clean"


def test_summary_and_expectation() -> None:
    units = [
        {"impl": LEGACY, "case": "a", "repetition": 0, "migration": {"verdict": "replay"}},
        {"impl": LEGACY, "case": "a", "repetition": 1, "migration": {"verdict": "replay"}},
        {"impl": LEGACY, "case": "b", "repetition": 0},
    ]
    assert summary(units, "replay") == {
        "expect": "replay",
        "verdict": "replay",
        "units": {"legacy_zk a rep 0": "replay", "legacy_zk a rep 1": "replay"},
        "as_expected": True,
    }
    assert summary(units[2:], "clean") is None
    assert expect_of({"scenario": {"migration": {"expect": "overlap"}}}) == "overlap"
    assert expect_of({"scenario": {"name": "x"}}) == "clean"


def test_write_run_keeps_a_members_own_impl_beside_the_units(tmp_path: Path) -> None:
    """The merge keeps the unit's implementation in the column and the member's own in extra."""
    from harness.history.schema import read_parquet

    u = UnitHistory("k", impl=LEGACY)
    u.at(0, "ready", "c0", impl=COORD).at(1, "ready", "m0", impl=LEGACY)
    run = write_run(tmp_path, [u])
    import pyarrow.parquet as pq

    rows = pq.read_table(run / "history.parquet").to_pylist()
    assert [(r["source"], r["impl"], r["extra"]) for r in rows] == [
        ("c0", LEGACY, '{"impl":"coordinator"}'),
        ("m0", LEGACY, None),
    ]
    # the Python view keeps the unit's implementation (events are filtered by unit with it)
    assert [e["impl"] for e in read_parquet(run / "history.parquet")] == [LEGACY, LEGACY]
