"""End to end: a migration rolled back. A scenario written here (3 legacy_zk members, 3 partitions)
moves its offsets to the broker (``set_property`` offsets.storage=kafka with dual commit, a rolling
bounce), switches to coordinator members all at once, then rolls back all at once: the coordinator
members ``c*`` are replaced by legacy members ``r*`` started with the earlier properties (kafka
storage, dual commit on). Run and analysed as ``herdlab run`` does (:func:`run_scenario`, the PySpark
checker, the report), like the built-in scenarios in ``test_migration_run.py``; about a minute.

Worked out by hand: the ``c*`` members commit to the broker only, so when the ``r*`` members start,
ZooKeeper still holds the offsets the ``m*`` members dual-committed before the switch and the broker
holds the later ones of the ``c*`` members; 0.8.2.2's fetch rule with dual commit takes the larger
of the two, so the ``r*`` members resume where the ``c*`` members committed (no record lost, nothing
replayed beyond the uncommitted window) rather than at the stale ZooKeeper offsets.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.support.migration import run_migration

pytestmark = [pytest.mark.migration, pytest.mark.slow]

# The bounce restarts one member every 7 s (as in the built-in `migration`: a legacy stop and restart
# settles in 1.5 to 3.5 s, plus the 2 s settle window); the switch comes after the last restart has
# settled; the rollback 15 s after the switch: the coordinator members took 7.8 s from the switch to own
# every partition in a run here (start, the broker's 3 s initial rebalance delay, the join), and they
# must own and commit for a while before they are stopped, else the broker holds no offsets of theirs.
SCENARIO = """
name = "migration-rollback"
description = "ZooKeeper -> Kafka offsets (dual commit), switch to coordinator members, roll back"
implementations = ["legacy_zk"]
repetitions = 1
settle_window = "2s"
drain = "8s"

[topic]
name = "migration"
partitions = 3

[workload]
rate = 60

[group]
id = "migration"
members = 3

[group.legacy_zk]
auto_commit_interval_ms = 1000
auto_offset_reset = "smallest"

[group.coordinator]
auto_commit_interval_ms = 1000

[migration]
expect = "clean"

[[timeline]]
at = "5s"
action = "set_property"
properties = { "offsets.storage" = "kafka", "dual.commit.enabled" = true }
interval = "7s"
downtime = "0.5s"

[[timeline]]
at = "26s"
action = "switch"
mode = "all_at_once"
downtime = "0.5s"

[[timeline]]
at = "41s"
action = "rollback"
mode = "all_at_once"
downtime = "0.5s"
"""

LEGACY_PROPS = {"offsets.storage": "kafka", "dual.commit.enabled": "true"}


def test_a_rolled_back_migration_resumes_the_legacy_members_at_the_coordinator_members_commits(
    tmp_path: Path,
) -> None:
    path = tmp_path / "migration-rollback.toml"
    path.write_text(SCENARIO)
    events, metrics, members = run_migration(path, tmp_path / "out")
    _assert_history(events, members)
    _assert_fetch_rule(members)

    m = metrics["migration"]
    assert (m["expect"], m["verdict"], m["as_expected"]) == ("clean", "clean", True)
    assert "Migration proof" in metrics["summary_md"]
    (unit,) = metrics["units"]
    switch, rollback = unit["migration"]["switches"]
    shape = [(s["step"], s["action"], s["mode"], s["from"], s["to"]) for s in (switch, rollback)]
    assert shape == [
        (2, "switch", "all_at_once", "legacy_zk", "coordinator"),
        (3, "rollback", "all_at_once", "coordinator", "legacy_zk"),
    ]
    for s in (switch, rollback):
        assert sorted(p["partition"] for p in s["partitions"]) == [0, 1, 2]
        for p in s["partitions"]:
            assert p["lost"] == 0, (s["action"], p)
            assert p["taken_over_s"] is not None, (s["action"], p)
            assert _count(p["reprocessed"]) <= p["window"], (s["action"], p)
            assert p["verdict"] == "clean", (s["action"], p)

    # the rollback's new owners are the r* members, and each resumed at or after the offset the
    # broker held for the partition when they took over (the coordinator members' commits)
    owners: set[str] = set()
    for p in rollback["partitions"]:
        names = {r["member"] for r in p["resumed"]}
        assert names <= {"r0", "r1", "r2"}, p
        owners |= names
        assert p["kafka_committed"] is not None and p["resumed_at"] is not None, p
        assert p["resumed_at"] >= p["kafka_committed"], p
        assert all(r["offset"] >= p["kafka_committed"] for r in p["resumed"] if r["offset"] is not None), p
    assert owners == {"r0", "r1", "r2"}

    # both all-at-once stops settled: once their replacements owned every partition once
    stops = {tuple(t["targets"]): t for t in unit["triggers"] if t["action"] == "stop_member"}
    for going in (("m0", "m1", "m2"), ("c0", "c1", "c2")):
        assert stops[going]["outcome"] == "settled", stops[going]


def _assert_history(events: list[dict[str, Any]], members: dict[str, list[dict[str, Any]]]) -> None:
    """In their own histories the m* and r* members wrote impl legacy_zk, the c* members impl
    coordinator, on ready and started; the nemesis invoked the steps of the three migration actions,
    the rollback starting r0..r2 as legacy members with the set_property properties; every produced
    record was processed."""
    assert sorted(members) == ["c0", "c1", "c2", "m0", "m1", "m2", "r0", "r1", "r2"]
    for name, es in members.items():
        want = "coordinator" if name.startswith("c") else "legacy_zk"
        for kind in ("ready", "started"):
            seen = {e.get("impl") for e in es if e["kind"] == kind}
            assert seen == {want}, (name, kind, seen)
    invokes = [e for e in events if e["kind"] == "invoke"]
    steps = sorted({(e["migration_step"], e["migration"]) for e in invokes})
    assert steps == [(1, "set_property"), (2, "switch"), (3, "rollback")]
    starts = [e for e in invokes if e["migration"] == "rollback" and e["action"] == "start_member"]
    assert [(e["targets"], e["member_kind"], e["props"]) for e in starts] == [
        (["r0", "r1", "r2"], "legacy_zk", LEGACY_PROPS)
    ]
    produced = {(e["partition"], e["offset"]) for e in events if e["kind"] == "produced"}
    processed = {(e["partition"], e["offset"]) for e in events if e["kind"] == "record"}
    assert produced and produced <= processed, f"{len(produced - processed)} produced records never processed"


def _assert_fetch_rule(members: dict[str, list[dict[str, Any]]]) -> None:
    """Every start-offset read of the r* members used kafka storage with dual commit, read both stores
    and chose the larger offset; at the first read of each partition the broker was ahead of
    ZooKeeper (the coordinator members committed to the broker only), so the broker's offset won."""
    fetches = sorted(
        (e for name in ("r0", "r1", "r2") for e in members[name] if e["kind"] == "offset_fetch"),
        key=lambda e: e["ts_ns"],
    )
    assert fetches
    for e in fetches:
        assert (e["storage"], e["dual"]) == ("kafka", True), e
        assert isinstance(e["zookeeper_offset"], int) and isinstance(e["kafka_offset"], int), e
        assert e["offset"] == max(e["zookeeper_offset"], e["kafka_offset"]), e
    first: dict[int, dict[str, Any]] = {}
    for e in fetches:
        first.setdefault(e["partition"], e)
    assert sorted(first) == [0, 1, 2]
    for e in first.values():
        assert 0 <= e["zookeeper_offset"] < e["kafka_offset"] == e["offset"], e


def _count(reprocessed: Any) -> int:
    """``reprocessed`` as a number of offsets (the contract's distinct offsets, a count or a list)."""
    return len(reprocessed) if isinstance(reprocessed, list) else int(reprocessed)
