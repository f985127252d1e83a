"""The consumer protocol's readings of the definitions (KIP-848, impl ``consumer``) on hand-made units.

Three units, impl consumer, settle window 1 s, settling ends at 6000. Times in ms, reported from the
origin (``stable`` at 1000). Heartbeats are ``group_request`` events of ConsumerGroupHeartbeat written
as herdlab's broker writes them (``broker-0``) or, in front of a third-party broker, the Kafka tap
(``tap``): ``member``, ``member_epoch`` (the request's), ``epoch`` (the response's), ``change``,
``error``.

``join`` and ``join-tap``: P = 3. A (member a) owns p0 and p2, B (member b) owns p1, both at member
epoch 1 since 150 (live from then). Each heartbeats every second at the old epoch without a change
(A at 600, 1100, 2100; B at 1200, 2200). A join of c: invoke 2000, c ready at 2500 (t0), complete 2510.
In the window [2500, 6000), the exchanges (member: request epoch -> response epoch, change):

====  ======  ===========  ======  ==================================================
ms    member  epochs       change  why
====  ======  ===========  ======  ==================================================
2550  C       (FindCoordinator, a coordination API)
2600  C       0 -> 2       true    joins; the group epoch moves to 2 (p2 still A's)
3000  X       5 -> 0       true    an unknown member: error UNKNOWN_MEMBER_ID
3100  A       1 -> 1       true    told to give up p2 (an assignment in the response)
3200  B       1 -> 2       true    moves to epoch 2 (nothing of B's moves)
3300  A       1 -> 2       true    reports p2 revoked (a revoked p2 at 3150)
3600  C       2 -> 2       true    gets p2 (c assigned p2 at 3650: c live, t1)
4100  A       2 -> 2       false   steady, then B 4200, C 4600, A 5100, B 5200, C 5600
====  ======  ===========  ======  ==================================================

plus A at 6100 (after settling_end, steady). herdlab's broker also writes ``group_state`` (epoch 2)
and ``target_assignment`` (epoch 2) at 2600; the tap cannot see them. Records: a processes p0 every
100 ms from 1000 to 5900 and p2 every 200 ms from 1000 to 3000; b processes p1 every 200 ms from 1000
to 2400 and from 2800 to 5800; c processes p2 every 200 ms from 3700 to 5900. Commits the broker
accepted (``commit``, role broker, ``generation`` = the member epoch):

* 2900 A p2 at epoch 1: A's current epoch (its exchange at 2100) is 1, A owns p2: neither;
* 3400 A p0 at epoch 1: A's current epoch (its exchange at 3300) is 2: stale (the group-generation
  rule would not see it: the highest generation members were assigned in until 3650 is 1);
* 3500 B p1 at epoch 2: B's current epoch is 2 (3200): neither;
* 3700 A p2 at epoch 2: not stale, but p2 is c's since 3650: from a non-owner.

``cut``: P = 2, herdlab's broker. a owns p0, b owns p1 (epoch 1, since 150). a is cut from the broker
(invoke 2050, a trigger; complete 2060, from when a is no longer live) but goes on processing p0, one record every 100 ms, offsets
0..19 at 1000..2900, until its client gives p0 up as lost at 3000. The broker fenced A: b's heartbeat at
2700 (1 -> 2, change) gives b p0, assigned at 2700, and b processes p0 from offset 15, every 100 ms
from 2800 to 3900 (offsets 15..26).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, cast

import pytest

from tests.support.histories import UnitHistory, ns, write_run

pytestmark = pytest.mark.slow

HB = "ConsumerGroupHeartbeat"


def hb(
    u: UnitHistory, ms: int, broker: str, member: str, req: int, epoch: int, change: bool, **kw: Any
) -> None:
    """One ConsumerGroupHeartbeat exchange as the broker (or the tap) writes it."""
    u.at(
        ms,
        "group_request",
        broker,
        api=HB,
        group="g",
        member=member,
        member_epoch=req,
        epoch=epoch,
        change=change,
        **kw,
    )


def commit(u: UnitHistory, ms: int, broker: str, member: str, p: int, offset: int, epoch: int) -> None:
    """A commit the broker accepted (OffsetCommit v9: the member epoch as the generation)."""
    u.at(
        ms,
        "commit",
        broker,
        group="g",
        topic=u.topic,
        member=member,
        partition=p,
        offset=offset,
        generation=epoch,
    )


def join(case: str, broker: str) -> UnitHistory:
    u = UnitHistory(case, impl="consumer", partitions=3, gap_s=1.0)
    u.unit_start(0, ["a", "b"]).ready(0, "a").ready(0, "b")
    hb(u, 100, broker, "A", 0, 1, True)
    hb(u, 100, broker, "B", 0, 1, True)
    u.joined(150, "a", 0, 2, generation=1, member="A").joined(150, "b", 1, generation=1, member="B")
    hb(u, 600, broker, "A", 1, 1, False)  # before stable: not in the steady phase
    u.stable(1000)
    u.at(1500, "broker_request", broker, interval_s=1.0, requests={HB: 2})
    for ms, m in ((1100, "A"), (1200, "B"), (2100, "A"), (2200, "B")):
        hb(u, ms, broker, m, 1, 1, False)
    trigger = {"action": "join", "action_id": 1, "targets": ["c"], "trigger": True}
    u.at(2000, "invoke", "nemesis", **trigger)
    u.ready(2500, "c")
    u.at(2510, "complete", "nemesis", **trigger, ready_ns={"c": ns(2500)})
    u.at(2550, "group_request", broker, api="FindCoordinator", group="g")
    hb(u, 2600, broker, "C", 0, 2, True)
    if broker != "tap":  # the broker's own events: a tap sees requests only
        u.at(2600, "group_state", broker, group="g", state="assigning", epoch=2)
        u.at(2600, "target_assignment", broker, group="g", epoch=2, members=3, partitions_moved=1)
    hb(u, 3000, broker, "X", 5, 0, True, error="UNKNOWN_MEMBER_ID")
    hb(u, 3100, broker, "A", 1, 1, True)
    u.at(3150, "rebalance_begin", "a", lost=False, generation=1, member="A")
    u.revoked(3150, "a", 2, generation=1, member="A")
    hb(u, 3200, broker, "B", 1, 2, True)
    hb(u, 3300, broker, "A", 1, 2, True)
    hb(u, 3600, broker, "C", 2, 2, True)
    u.joined(3650, "c", 2, generation=2, member="C")
    for ms, m in ((4100, "A"), (4200, "B"), (4600, "C"), (5100, "A"), (5200, "B"), (5600, "C")):
        hb(u, ms, broker, m, 2, 2, False)
    commit(u, 2900, broker, "A", 2, 10, 1)
    commit(u, 3400, broker, "A", 0, 25, 1)
    commit(u, 3500, broker, "B", 1, 12, 2)
    commit(u, 3700, broker, "A", 2, 11, 2)
    u.records("a", 0, range(50), 1000, 100).records("a", 2, range(11), 1000, 200)
    u.records("b", 1, range(8), 1000, 200).records("b", 1, range(8, 24), 2800, 200)
    u.records("c", 2, range(11, 23), 3700, 200)
    u.settling_end(6000)
    hb(u, 6100, broker, "A", 2, 2, False)  # after settling_end: not in the steady phase
    return u


def cut() -> UnitHistory:
    u = UnitHistory("cut", impl="consumer", partitions=2, gap_s=1.0)
    u.unit_start(0, ["a", "b"]).ready(0, "a").ready(0, "b")
    hb(u, 100, "broker-0", "A", 0, 1, True)
    hb(u, 100, "broker-0", "B", 0, 1, True)
    u.joined(150, "a", 0, generation=1, member="A").joined(150, "b", 1, generation=1, member="B")
    u.stable(1000)
    u.at(1500, "broker_request", "broker-0", interval_s=1.0, requests={HB: 2})
    u.action(2050, "cut", ["a"], complete_ms=2060, target="broker")
    hb(u, 2700, "broker-0", "B", 1, 2, True)
    u.joined(2700, "b", 0, generation=2, member="B")
    u.at(3000, "rebalance_begin", "a", lost=True, generation=1, member="A")
    u.at(3000, "revoked", "a", topic=u.topic, partition=0, lost=True, generation=1, member="A")
    u.records("a", 0, range(20), 1000, 100)
    u.records("b", 0, range(15, 27), 2800, 100)
    u.settling_end(6000)
    return u


@pytest.fixture(scope="module")
def analysed(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    from harness.analysis.analyze import analyze
    from harness.analysis.load import load_run

    units = [join("join", "broker-0"), join("join-tap", "tap"), cut()]
    run = write_run(tmp_path_factory.mktemp("consumer"), units, settle_window_s=1.0)
    manifest_path = Path(run) / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    for c in manifest["cases"]:
        c["params"] = {"cluster.broker": "tansu" if c["label"] == "join-tap" else "herdlab"}
    manifest_path.write_text(json.dumps(manifest))
    return cast(dict[str, Any], analyze(spark, load_run(run)))


def trigger(m: dict[str, Any], case: str) -> dict[str, Any]:
    (u,) = [u for u in m["units"] if u["case"] == case]
    (t,) = u["triggers"]
    return t


def unit(m: dict[str, Any], case: str) -> dict[str, Any]:
    (u,) = [u for u in m["units"] if u["case"] == case]
    return u


@pytest.mark.parametrize("case", ["join", "join-tap"])
def test_a_join_settles_when_the_joiner_s_first_reconciliation_completes(
    analysed: dict[str, Any], case: str
) -> None:
    t = trigger(analysed, case)
    # t0 = c's ready (2500: 1.5 s after the origin); c is live from its first assigned (3650), when
    # every partition is owned once (p0 a, p1 b, p2 c) for the settle window: t1 = 3650
    assert (t["outcome"], t["t0_s"], t["t1_s"], t["latency_s"]) == ("settled", 1.5, 2.65, 1.15)
    # the first reaction: herdlab's group_state at 2600; behind the tap, a's revocation at 3150
    assert t["detection_s"] == (0.1 if case == "join" else 0.65)


@pytest.mark.parametrize("case", ["join", "join-tap"])
def test_herd_counts_the_heartbeats_that_carry_the_change_and_rounds_are_new_epochs_reached(
    analysed: dict[str, Any], case: str
) -> None:
    t = trigger(analysed, case)
    # change=true exchanges in [2500, 6000): C 2600, X 3000 (an error), A 3100, B 3200, A 3300, C 3600 = 6;
    # the six steady ones (4100 .. 5600) are not in the herd; plus C's FindCoordinator: 7
    assert t["broker_requests_by_api"] == {HB: 6, "FindCoordinator": 1}
    assert t["broker_group_requests"] == 7 and t["coordination_requests"] == 7
    # the starting epoch is 1 (every exchange before 2500 answered 1); the change exchanges without error
    # answered 2, 1, 2, 2, 2: one new epoch reached, whichever source wrote them
    assert t["rebalance_rounds"] == 1
    # the broker's target_assignment events: one (2600); behind the tap not measured
    assert t["group_rebalances"] == (1 if case == "join" else None)


@pytest.mark.parametrize("case", ["join", "join-tap"])
def test_steady_heartbeats_are_a_rate_per_live_member_second(analysed: dict[str, Any], case: str) -> None:
    u = unit(analysed, case)
    # change=false in [1000, 6000): 1100 1200 2100 2200 (A, B), 4100 4200 4600 5100 5200 5600: 10 (600 is
    # before stable, 6100 after settling_end). Member-seconds: a and b live all of it (5 s each), c from
    # 3650 (2.35 s): 12.35
    assert u["steady"]["heartbeats"] == 10
    assert u["steady"]["heartbeats_per_member_s"] == round(10 / 12.35, 6) == 0.809717
    assert u["heartbeats_per_member_s"] == 0.809717


@pytest.mark.parametrize("case", ["join", "join-tap"])
def test_partitions_the_change_did_not_move_never_stopped(analysed: dict[str, Any], case: str) -> None:
    t = trigger(analysed, case)
    # owned at t0: p0, p2 (a), p1 (b); past t1 (3650) still with their owner: p0 and p1
    assert (t["undisturbed_partitions"], t["undisturbed_fraction"]) == (2, round(2 / 3, 6))
    # their longest gap in [2500, 3650]: p1 from the edge 2500 to b's record at 2800 (p0: 100 ms)
    assert t["undisturbed_gap_s"] == 0.3
    # p2 moved without overlap: a's last record 3000, its revocation 3150, c's first record 3700
    assert (t["overlap_episodes"], t["overlap_s"]) == (0, 0.0)


@pytest.mark.parametrize("case", ["join", "join-tap"])
def test_a_commit_below_the_member_s_current_epoch_is_stale(analysed: dict[str, Any], case: str) -> None:
    t, u = trigger(analysed, case), unit(analysed, case)
    # 3400 A at epoch 1 after A reached 2 (3300): stale; 3700 A's p2, c's since 3650: from a non-owner
    assert (t["commits_stale_generation"], t["commits_non_owner"]) == (1, 1)
    assert (u["commits_stale_generation"], u["commits_non_owner"]) == (1, 1)


def test_a_member_cut_from_its_coordinator_overlaps_until_it_gives_its_partition_up(
    analysed: dict[str, Any],
) -> None:
    t = trigger(analysed, "cut")
    # t0 = the cut (2050, 1.05 s); b gets p0 at 2700: owned once (a is not live): t1 = 2700
    assert (t["outcome"], t["t0_s"], t["t1_s"]) == ("settled", 1.05, 1.7)
    # a's interval of p0 after the cut (the cut closed the one before, at 2060): 2100 .. its loss at 3000; b's: 2800 .. 3900. One episode
    # [2800, 3000]: 0.2 s; offsets 15..19 processed by both
    assert (t["overlap_episodes"], t["overlap_s"], t["duplicates"]) == (1, 0.2, 5)
    # the epoch moved once (b: 1 -> 2); p1 never stopped, p0 did
    assert t["rebalance_rounds"] == 1
    assert (t["undisturbed_partitions"], t["undisturbed_fraction"]) == (1, 0.5)
