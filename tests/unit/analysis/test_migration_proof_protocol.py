"""The migration proof (harness.analysis.migration) of the classic-to-consumer migration on hand-made histories
whose answers are worked out by hand here: the kinds a switch moves between are the members' group protocols.

Every unit is a coordinator unit. Members ``m*`` / ``r*`` are classic-protocol coordinator members (their
``started`` names no group protocol); ``k*`` are coordinator members under the consumer group protocol: their
``ready`` says impl coordinator, their ``started`` ``group_protocol = "consumer"``, and the nemesis started them
with ``member_kind = "consumer"``. No unit has broker events, so member commits (store kafka, the default of both
kinds) are the kafka store's. Times are integer milliseconds; every unit's origin is its ``stable`` event at
1000 ms, so a time of T ms reads (T - 1000) / 1000 s.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, cast

import pytest

from tests.support.histories import UnitHistory, write_run

pytestmark = pytest.mark.slow

COORD, CONSUMER = "coordinator", "consumer"


@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    """The test session's Spark (``spark_session`` is get-or-create: one JVM for every module)."""
    from harness.analysis.spark import spark_session

    yield spark_session()


def step(u: UnitHistory, ms: int, action: str, targets: list[str], n: int = 1, **kw: Any) -> None:
    """A migration step as the runner writes it: stop_member is a trigger, start_member is not."""
    u.action(
        ms,
        action,
        targets,
        complete_ms=ms + 100,
        trigger=action == "stop_member",
        migration=kw.pop("migration", "switch"),
        migration_step=n,
        **kw,
    )


def consumer_member(u: UnitHistory, ms: int, name: str) -> None:
    """``name`` boots as a coordinator member and starts under the consumer group protocol."""
    u.at(ms, "ready", name, impl=COORD)
    u.at(ms + 10, "started", name, impl=COORD, group_protocol=CONSUMER)


def rolling() -> UnitHistory:
    """A rolling switch to the consumer protocol, 2 partitions.

    m0 owns p0 and processes 0..9 (1000..1900), m1 owns p1 and processes 0..9 (1000..1900). Commits: m0 p0 10
    at 2000, m1 p1 7 at 2000. Switch step 1: stop m0 at 3000 (revoked 3050), start k0 at 3500, k0 assigned p0
    at 3700 and processes 10..14 (3800..4200); stop m1 at 5000 (revoked 5050), start k1 at 5500, k1 assigned
    p1 at 5700 and resumes at the commit: 7..14 (5800..6500). Produced 0..14 on both.
    """
    u = UnitHistory("rolling", impl=COORD, partitions=2)
    u.unit_start(0, ["m0", "m1"]).at(0, "ready", "m0", impl=COORD).at(0, "ready", "m1", impl=COORD)
    u.joined(100, "m0", 0, generation=1, member="M0").joined(100, "m1", 1, generation=1, member="M1")
    u.stable(1000)
    u.produced(0, range(15), 900, 10).produced(1, range(15), 900, 10)
    u.records("m0", 0, range(10), 1000, 100).records("m1", 1, range(10), 1000, 100)
    u.at(2000, "commit", "m0", topic=u.topic, partition=0, offset=10)
    u.at(2000, "commit", "m1", topic=u.topic, partition=1, offset=7)
    step(u, 3000, "stop_member", ["m0"])
    u.revoked(3050, "m0", 0).stopped(3060, "m0")
    step(u, 3500, "start_member", ["k0"], member_kind=CONSUMER)
    consumer_member(u, 3550, "k0")
    u.joined(3700, "k0", 0, generation=2, member="K0")
    u.records("k0", 0, range(10, 15), 3800, 100)
    step(u, 5000, "stop_member", ["m1"])
    u.revoked(5050, "m1", 1).stopped(5060, "m1")
    step(u, 5500, "start_member", ["k1"], member_kind=CONSUMER)
    consumer_member(u, 5550, "k1")
    u.joined(5700, "k1", 1, generation=3, member="K1")
    u.records("k1", 1, range(7, 15), 5800, 100)
    u.settling_end(9000)
    return u


def back() -> UnitHistory:
    """A switch to the consumer protocol (step 1) and the rollback to the classic one (step 2), 1 partition.

    m0 processes 0..4 (1000..1400), commits 5 at 1900. Switch: stop m0 at 2000, start k0 at 2300, assigned
    2500; k0 processes 5..9 (2600..3000) and commits 10 at 4900. Rollback: stop k0 at 5000, start r0 at 5300
    (a classic member: ready impl coordinator, no group protocol), assigned 5500; r0 resumes at 10: 10..14
    (5600..6000). Produced 0..14.
    """
    u = UnitHistory("back", impl=COORD, partitions=1)
    u.unit_start(0, ["m0"]).at(0, "ready", "m0", impl=COORD).joined(100, "m0", 0, generation=1).stable(1000)
    u.produced(0, range(15), 900, 10)
    u.records("m0", 0, range(5), 1000, 100)
    u.at(1900, "commit", "m0", topic=u.topic, partition=0, offset=5)
    step(u, 2000, "stop_member", ["m0"])
    u.revoked(2050, "m0", 0).stopped(2060, "m0")
    step(u, 2300, "start_member", ["k0"], member_kind=CONSUMER)
    consumer_member(u, 2350, "k0")
    u.joined(2500, "k0", 0, generation=2, member="K0")
    u.records("k0", 0, range(5, 10), 2600, 100)
    u.at(4900, "commit", "k0", topic=u.topic, partition=0, offset=10)
    step(u, 5000, "stop_member", ["k0"], n=2, migration="rollback")
    u.revoked(5050, "k0", 0).stopped(5060, "k0")
    step(u, 5300, "start_member", ["r0"], n=2, migration="rollback", member_kind=COORD)
    u.at(5350, "ready", "r0", impl=COORD).started(5360, "r0", impl=COORD)
    u.joined(5500, "r0", 0, generation=3, member="R0")
    u.records("r0", 0, range(10, 15), 5600, 100)
    u.settling_end(8000)
    return u


def unsafe() -> UnitHistory:
    """A rolling switch whose new member is given a partition a classic member still processes, and that starts
    it from nothing committed (what a broker without the online migration, or a switch without commits, would
    show), 1 partition.

    m0 owns p0 and processes 0..19 (1000..2900), commits nothing. Switch: stop m0 at 2000 (its stop is slow:
    revoked 3000, stopped 3060), start k0 at 2300, assigned p0 at 2500, processes from 0: 0..24 (2600..5000).
    Produced 0..24.
    """
    u = UnitHistory("unsafe", impl=COORD, partitions=1)
    u.unit_start(0, ["m0"]).at(0, "ready", "m0", impl=COORD).joined(100, "m0", 0, generation=1).stable(1000)
    u.produced(0, range(25), 900, 10)
    u.records("m0", 0, range(20), 1000, 100)
    step(u, 2000, "stop_member", ["m0"])
    step(u, 2300, "start_member", ["k0"], member_kind=CONSUMER)
    consumer_member(u, 2350, "k0")
    u.joined(2500, "k0", 0, generation=1, member="K0")
    u.records("k0", 0, range(25), 2600, 100)
    u.revoked(3000, "m0", 0).stopped(3060, "m0")
    u.settling_end(8000)
    return u


@pytest.fixture(scope="module")
def analysed(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    from harness.analysis.analyze import analyze
    from harness.analysis.load import load_run

    run = write_run(tmp_path_factory.mktemp("protocol"), [rolling(), back(), unsafe()], settle_window_s=1.0)
    return cast(dict[str, Any], analyze(spark, load_run(run)))


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


def test_a_rolling_switch_to_the_consumer_protocol_moves_from_coordinator_to_consumer(
    analysed: dict[str, Any],
) -> None:
    (s,) = unit(analysed, "rolling")["migration"]["switches"]
    # t_S: the first stop's invoke 3000 -> 2.0 s; two stop steps: rolling; the start steps' member_kind
    assert {k: s[k] for k in ("step", "action", "mode", "from", "to", "t_s")} == {
        "step": 1,
        "action": "switch",
        "mode": "rolling",
        "from": COORD,
        "to": CONSUMER,
        "t_s": 2.0,
    }
    # p0: k0 (kind consumer: its started event, though its ready says coordinator) assigned at 3700 -> 2.7 s;
    # committed 10 (m0's at 2000); m0's last 9: window 9 + 1 - 10 = 0; k0 resumes at 10, reprocesses nothing
    assert figures(part(analysed, "rolling", 0)) == {
        "taken_over_s": 2.7,
        "zookeeper_committed": None,
        "kafka_committed": 10,
        "committed": 10,
        "processed_last": 9,
        "resumed": [{"member": "k0", "offset": 10}],
        "resumed_at": 10,
        "window": 0,
        "reprocessed": 0,
        "lost": 0,
        "overlap_episodes": 0,
        "overlap_s": 0.0,
        "verdict": "clean",
    }
    # p1: k1 assigned at 5700 -> 4.7 s; committed 7 (m1's); m1's last 9: window 9 + 1 - 7 = 3; k1 resumes at
    # 7 and reprocesses 7, 8, 9: 3 <= 3, clean
    assert figures(part(analysed, "rolling", 1)) == {
        "taken_over_s": 4.7,
        "zookeeper_committed": None,
        "kafka_committed": 7,
        "committed": 7,
        "processed_last": 9,
        "resumed": [{"member": "k1", "offset": 7}],
        "resumed_at": 7,
        "window": 3,
        "reprocessed": 3,
        "lost": 0,
        "overlap_episodes": 0,
        "overlap_s": 0.0,
        "verdict": "clean",
    }
    assert unit(analysed, "rolling")["migration"]["verdict"] == "clean"


def test_the_way_back_is_a_rollback_from_consumer_to_coordinator(analysed: dict[str, Any]) -> None:
    first, second = unit(analysed, "back")["migration"]["switches"]
    assert (first["action"], first["from"], first["to"], first["t_s"]) == ("switch", COORD, CONSUMER, 1.0)
    assert (
        second["step"],
        second["action"],
        second["mode"],
        second["from"],
        second["to"],
        second["t_s"],
    ) == (
        2,
        "rollback",
        "all_at_once",
        CONSUMER,
        COORD,
        4.0,
    )
    # switch: k0 assigned at 2500 -> 1.5 s; committed 5 (1900); m0's last 4: window 0; k0 resumes at 5
    assert figures(part(analysed, "back", 0, 0)) == {
        "taken_over_s": 1.5,
        "zookeeper_committed": None,
        "kafka_committed": 5,
        "committed": 5,
        "processed_last": 4,
        "resumed": [{"member": "k0", "offset": 5}],
        "resumed_at": 5,
        "window": 0,
        "reprocessed": 0,
        "lost": 0,
        "overlap_episodes": 0,
        "overlap_s": 0.0,
        "verdict": "clean",
    }
    # rollback: r0 (classic again: kind coordinator) assigned at 5500 -> 4.5 s; committed 10 (k0's, 4900);
    # k0's last 9: window 0; r0 resumes at 10; the offsets it processes (10..14) no consumer member did
    assert figures(part(analysed, "back", 0, 1)) == {
        "taken_over_s": 4.5,
        "zookeeper_committed": None,
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
    assert unit(analysed, "back")["migration"]["verdict"] == "clean"


def test_owners_of_both_protocols_at_once_are_an_overlap_and_a_fresh_start_a_replay(
    analysed: dict[str, Any],
) -> None:
    # k0 assigned at 2500 -> 1.5 s; nothing committed; m0's records before 2500: 0..14 (offset i at
    # 1000 + 100 i; 15 is at 2500): window 14 + 1 = 15; k0 starts at 0 and processes 0..19 again, all of which
    # m0 processed: reprocessed 20 > 15. m0 holds p0 until its revocation at 3000 while k0 processes it from
    # 2600: owners of both protocols at once in [2600, 3000], one episode of 0.4 s -> overlap (worse than
    # replay)
    e = part(analysed, "unsafe", 0)
    assert {k: e[k] for k in ("taken_over_s", "committed", "processed_last", "window", "reprocessed")} == {
        "taken_over_s": 1.5,
        "committed": None,
        "processed_last": 14,
        "window": 15,
        "reprocessed": 20,
    }
    assert (e["overlap_episodes"], e["overlap_s"], e["lost"], e["verdict"]) == (1, 0.4, 0, "overlap")
    assert unit(analysed, "unsafe")["migration"]["verdict"] == "overlap"
