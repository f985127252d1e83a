"""The failover figures' pure part (harness.analysis.failover_verdict) on events written by hand.

Times are integer milliseconds (``ms``); every expected figure is worked out in the test's comment.
"""

from __future__ import annotations

from typing import Any

from harness.analysis.failover_verdict import (
    NEVER,
    Step,
    acting_intervals,
    alert_lines,
    clipped_s,
    double_episodes,
    end_step,
    failover_parts,
    fault_spans,
    offsets_lost,
    pick_snapshot,
    steps_of,
    summary,
    zk_entry,
)

MS = 1_000_000
OT = "__consumer_offsets"


def ev(t: int, **kw: Any) -> dict[str, Any]:
    return {"ts_ns": t * MS, **kw}


def kill(complete: int | None = 10100) -> Step:
    return Step(
        "kill_coordinator",
        3,
        10000 * MS,
        None if complete is None else complete * MS,
        broker_id=1,
        offsets_partition=7,
        group="g",
    )


CHANGES = [
    ev(5000, dead=[]),
    ev(9000, dead=[1]),  # before t0: not the detection
    ev(12000, dead=[2]),  # another broker
    ev(16100, dead="[1]"),  # as collected from the JSON extra
]
STATES = [
    ev(16050, topic=OT, partition=7, leader=2),  # before the detection
    ev(16150, topic=OT, partition=7, leader=-1),  # offline: no leader yet
    ev(16200, topic=OT, partition=3, leader=3),  # another offsets partition
    ev(16250, topic="t", partition=7, leader=3),  # the workload topic
    ev(16300, topic=OT, partition=7, leader=2, leader_epoch=5),
]
LOADS = [
    ev(16310, broker_id=2, offsets_partition=7, phase="begin"),
    ev(16400, broker_id=3, offsets_partition=7, phase="end"),  # not the new leader
    ev(16800, broker_id=2, offsets_partition=7, phase="end"),
]
SERVED = [
    ev(16850, broker_id=2, group="other"),
    ev(16900, broker_id=3, group="g"),
    ev(17000, broker_id=2, group="g"),
]


def test_every_step_present_gives_the_parts_and_their_sum() -> None:
    f = failover_parts(kill(), CHANGES, STATES, LOADS, SERVED)
    # detection 16100 - 10100 = 6.0; election 16300 - 16100 = 0.2; loading 16800 - 16300 = 0.5;
    # rejoin 17000 - 16800 = 0.2; failover 17000 - 10100 = 6.9
    assert (f["detection_s"], f["election_s"], f["loading_s"], f["rejoin_s"]) == (6.0, 0.2, 0.5, 0.2)
    assert (f["failover_s"], f["new_coordinator"]) == (6.9, 2)


def test_a_missing_step_is_never_and_the_parts_after_it_are_empty() -> None:
    f = failover_parts(kill(), CHANGES, STATES, [], SERVED)
    assert (f["detection_s"], f["election_s"], f["loading_s"], f["rejoin_s"]) == (6.0, 0.2, NEVER, None)
    assert f["failover_s"] == NEVER
    f = failover_parts(kill(), CHANGES[:3], STATES, LOADS, SERVED)  # B never reported dead
    assert (f["detection_s"], f["election_s"], f["failover_s"], f["new_coordinator"]) == (
        NEVER,
        None,
        NEVER,
        None,
    )
    f = failover_parts(kill(complete=None), CHANGES, STATES, LOADS, SERVED)  # no t0
    assert (f["detection_s"], f["election_s"], f["failover_s"]) == (NEVER, None, NEVER)


def test_steps_pair_by_action_id_and_the_end_step_is_the_same_brokers() -> None:
    evs = [
        ev(
            10000,
            kind="invoke",
            action="kill_coordinator",
            action_id=3,
            broker_id=1,
            offsets_partition=7,
            group="g",
        ),
        ev(10100, kind="complete", action="kill_coordinator", action_id=3, broker_id=1),
        ev(12000, kind="invoke", action="restart_coordinator", action_id=4, broker_id=2),
        ev(12100, kind="complete", action="restart_coordinator", action_id=4, broker_id=2),
        ev(13000, kind="invoke", action="restart_coordinator", action_id=5, broker_id=1),
        ev(13900, kind="complete", action="restart_coordinator", action_id=5, broker_id=1),
        ev(14000, kind="invoke", action="pause_coordinator", action_id=6),
        ev(14000, kind="skipped", action="pause_coordinator", action_id=6),
    ]
    steps = steps_of(evs)
    assert [(s.action_id, s.complete_ns, s.skipped) for s in steps] == [
        (3, 10100 * MS, False),
        (4, 12100 * MS, False),
        (5, 13900 * MS, False),
        (6, None, True),
    ]
    assert (steps[0].broker_id, steps[0].offsets_partition, steps[0].group) == (1, 7, "g")
    e = end_step(steps[0], steps)
    assert e is not None and e.action_id == 5  # #4 restarted broker 2


def test_snapshot_after_the_end_step_by_label_else_by_time() -> None:
    end = Step("restart_coordinator", 5, 13000 * MS, 13900 * MS, broker_id=1)
    snaps = [
        ev(14000, group="other", label="after:5"),
        ev(14500, group="g", label="after:2"),
        ev(15000, group="g", label="after:5"),
        ev(30000, group="g", label="end"),
    ]
    assert pick_snapshot(snaps, kill(), end) == snaps[2]
    no_label = [s for s in snaps if s["label"] != "after:5"]
    assert pick_snapshot(no_label, kill(), end) == snaps[1]  # the first of g at or after 13900
    assert pick_snapshot(snaps[3:], kill(), None) == snaps[3]  # no end step: the first after t0


def test_offsets_lost_are_committed_partitions_returned_lower_minus_one_or_not_at_all() -> None:
    committed = {("t", 0): 40, ("t", 1): 30, ("t", 2): 12, ("t", 3): 5}
    snap = ev(15000, label="after:5", offsets={"t/0": 40, "t/1": 25, "t/3": 7})
    # t/0 same, t/1 25 < 30 lost, t/2 absent lost, t/3 7 >= 5 kept
    assert offsets_lost(committed, snap) == {
        "count": 2,
        "partitions": ["t/1", "t/2"],
        "snapshot": "after:5",
        "note": None,
    }
    assert offsets_lost({("t", 0): 3}, ev(1, label="end", offsets='{"t/0": -1}'))["count"] == 1
    failed = offsets_lost(committed, ev(1, label="end", offsets={}, error="COORDINATOR_NOT_AVAILABLE"))
    assert (failed["count"], failed["note"]) == (
        None,
        "no coordinator answered the snapshot: COORDINATOR_NOT_AVAILABLE",
    )
    assert offsets_lost(committed, None)["count"] is None


def test_a_resumed_zombie_acting_beside_the_new_coordinator_is_double_coordinator_time() -> None:
    """Broker 1 loads p7 at 1000, is paused at 10100 (complete), resumed at 20000 and unloads at
    21500; broker 2 loads p7 at 16800 and acts until the unit's end (30000). Broker 3 loads p5."""
    loads = [
        ev(1000, broker_id=1, offsets_partition=7, phase="end"),
        ev(2000, broker_id=3, offsets_partition=5, phase="end"),
        ev(16800, broker_id=2, offsets_partition=7, phase="end"),
        ev(21500, broker_id=1, offsets_partition=7, phase="unload"),
    ]
    steps = [
        Step("pause_coordinator", 3, 10000 * MS, 10100 * MS, broker_id=1),
        Step("resume_coordinator", 4, 19900 * MS, 20000 * MS, broker_id=1),
    ]
    iv = acting_intervals(loads, steps, 7, 30000 * MS)
    assert iv == {1: [(1000 * MS, 10100 * MS), (20000 * MS, 21500 * MS)], 2: [(16800 * MS, 30000 * MS)]}
    eps = double_episodes(iv)
    assert eps == [(20000 * MS, 21500 * MS)]  # 1.5 s, one episode
    spans = fault_spans([steps[0]])
    assert spans == [(3, 10100 * MS, 4_000_000_000_000_000_000)]
    assert clipped_s(eps, spans[0][1], spans[0][2]) == 1.5
    assert clipped_s(eps, 21000 * MS, 40000 * MS) == 0.5


def test_a_killed_coordinator_stops_acting_at_the_kill() -> None:
    loads = [
        ev(1000, broker_id=1, offsets_partition=7, phase="end"),
        ev(16800, broker_id=2, offsets_partition=7, phase="end"),
        ev(25000, broker_id=1, offsets_partition=7, phase="begin"),  # restarted: a follower loads nothing
    ]
    iv = acting_intervals(loads, [kill()], 7, 30000 * MS)
    assert iv == {1: [(1000 * MS, 10100 * MS)], 2: [(16800 * MS, 30000 * MS)]}
    assert double_episodes(iv) == []
    # touching intervals are not an overlap
    assert double_episodes({1: [(0, 5)], 2: [(5, 9)]}) == []


def test_zookeeper_leader_fault_election_sessions_lost_and_their_rebalances() -> None:
    """kill_zk_leader invoked at 5000, complete (a new leader serves) 5400; its window ends 9000.
    m1 loses its session at 5200 and rebalances at 5300 (in the window); m4 loses it at 8000 and
    rebalances at 9100 (after); m2's loss at 4000 and m3's at 9500 lie outside the window."""
    f = Step("kill_zk_leader", 2, 5000 * MS, 5400 * MS)
    lost = [ev(5200, source="m1"), ev(4000, source="m2"), ev(9500, source="m3"), ev(8000, source="m4")]
    rebal = [ev(4100, source="m2"), ev(5300, source="m1"), ev(9100, source="m4")]
    common: dict[str, Any] = {
        "origin": 1000 * MS,
        "records_lost": 0,
        "reprocessed": 2,
        "deposed": {},
        "double_s": 0.0,
        "session_failures": 3,
    }
    e = zk_entry(
        f,
        window_end=9000 * MS,
        impl="legacy_zk",
        lost_sessions=lost,
        broker_changes=[],
        rebalances=rebal,
        **common,
    )
    # election 5400 - 5000 = 0.4 s; t0 = (5400 - 1000) / 1000 = 4.4 s after the origin
    assert (e["zk_election_s"], e["t0_s"], e["sessions_lost"]) == (0.4, 4.4, ["m1", "m4"])
    assert e["session_rebalances"] == {"in_window": 1, "after_window": 1}
    # the broker side (the classic and the consumer protocol alike): brokers reported dead in the window
    # are its lost sessions
    for impl in ("coordinator", "consumer"):
        e = zk_entry(
            f,
            window_end=9000 * MS,
            impl=impl,
            lost_sessions=[],
            broker_changes=[ev(6000, dead=[2]), ev(9100, dead=[3])],
            rebalances=[],
            **common,
        )
        assert e["sessions_lost"] == ["broker-2"]


def failover_unit(impl: str, faults: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "impl": impl,
        "case": "failover",
        "repetition": 0,
        "failover": {
            "faults": faults,
            "double_coordinator": {"seconds": 1.5, "episodes": 1},
            "fenced": {"commit/NOT_COORDINATOR": 2},
        },
    }


def fault(action: str, **kw: Any) -> dict[str, Any]:
    f: dict[str, Any] = {
        "action": action,
        "action_id": 3,
        "kind": "coordinator",
        "broker_id": 1,
        "failover_s": 6.9,
        "offsets_lost": 0,
        "offsets_lost_partitions": [],
        "deposed_acceptances": {"commit": 0, "produce": 0},
        "double_coordinator_s": 0.0,
    }
    f.update(kw)
    return f


def test_summary_per_implementation_and_action_and_none_without_faults() -> None:
    units = [
        failover_unit(
            "coordinator", [fault("kill_coordinator"), fault("pause_coordinator", failover_s=NEVER)]
        ),
        failover_unit(
            "coordinator",
            [
                fault(
                    "kill_coordinator",
                    failover_s=5.0,
                    offsets_lost=1,
                    deposed_acceptances={"commit": 1, "produce": 2},
                )
            ],
        ),
        failover_unit(
            "legacy_zk",
            [{"action": "kill_zk_leader", "action_id": 1, "kind": "zookeeper", "zk_election_s": 0.4}],
        ),
        {"impl": "legacy_zk", "case": "other", "repetition": 0},
    ]
    s = summary(units)
    assert s is not None
    k = s["coordinator"]["faults"]["kill_coordinator"]
    assert (k["n"], k["never"], k["failover_s"], k["offsets_lost"]) == (2, 0, [6.9, 5.0], 1)
    assert k["deposed_acceptances"] == {"commit": 1, "produce": 2}
    assert s["coordinator"]["faults"]["pause_coordinator"]["never"] == 1
    assert s["coordinator"]["fenced"] == {"commit/NOT_COORDINATOR": 4}
    assert s["coordinator"]["double_coordinator"] == {"seconds": 3.0, "episodes": 2}
    assert s["legacy_zk"]["faults"]["kill_zk_leader"]["zk_election_s"] == [0.4]
    assert summary([{"impl": "legacy_zk", "case": "c", "repetition": 0}]) is None


def test_alerts_name_the_fault() -> None:
    out = {
        "units": [
            failover_unit(
                "coordinator",
                [
                    fault(
                        "pause_coordinator",
                        offsets_lost=1,
                        offsets_lost_partitions=["t/1"],
                        deposed_acceptances={"commit": 1, "produce": 0},
                        double_coordinator_s=1.5,
                    ),
                    fault("cut_coordinator", action_id=5, broker_id=2, failover_s=NEVER),
                ],
            )
        ]
    }
    assert alert_lines(out) == [
        "coordinator failover rep 0: fault #3 pause_coordinator (broker 1) lost 1 committed offsets (t/1)",
        "coordinator failover rep 0: fault #3 pause_coordinator (broker 1): a deposed leader or coordinator "
        "acknowledged 1 commits and 0 produce requests",
        "coordinator failover rep 0: fault #3 pause_coordinator (broker 1): two brokers acted as coordinator "
        "of the group for 1.500 s",
        "coordinator failover rep 0: fault #5 cut_coordinator (broker 2): the group was never served again "
        "(failover never)",
    ]
    assert alert_lines({"units": [failover_unit("coordinator", [fault("kill_coordinator")])]}) == []
    zk = {"action": "kill_zk_leader", "action_id": 1, "kind": "zookeeper", "zk_election_s": 0.4}
    assert alert_lines({"units": [failover_unit("legacy_zk", [zk])]}) == []
    zk["session_rebalances"] = {"in_window": 1, "after_window": 2}
    assert alert_lines({"units": [failover_unit("legacy_zk", [zk])]}) == [
        "legacy_zk failover rep 0: fault #1 kill_zk_leader: 2 members that lost their session began their "
        "rebalance after the fault's window (not measured in it)"
    ]


def test_a_later_faults_events_are_not_this_faults_and_a_comeback_is_served_again() -> None:
    # The next fault starts at 15000: the detection at 16100 and everything after belong to it, so this
    # kill's detection is never. The group is still served again before 15000 by broker 1 itself (it came
    # back before the controller saw it gone): failover 14600 - 10100 = 4.5 s, by broker 1.
    served = [ev(14600, broker_id=1, group="g"), *SERVED]
    f = failover_parts(kill(), CHANGES, STATES, LOADS, served, until=15000 * MS)
    assert (f["detection_s"], f["election_s"], f["failover_s"], f["new_coordinator"]) == (NEVER, None, 4.5, 1)
    # without that comeback the group was not served within the span: never
    f = failover_parts(kill(), CHANGES, STATES, LOADS, SERVED, until=15000 * MS)
    assert (f["detection_s"], f["failover_s"], f["new_coordinator"]) == (NEVER, NEVER, None)
