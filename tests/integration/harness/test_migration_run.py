"""End to end: the three built-in migration scenarios on the local backend, run and analysed as
``herdlab run`` does (:func:`run_scenario`, then the PySpark checker and the report), each asserting
the verdict the scenario exists to show, and from the history alone what the run did.

One group across the switch: legacy_zk members ``m*`` (ZooKeeper-era rebalancing, offsets in
ZooKeeper and/or the broker) replaced by kafka-python members ``c*`` of the same group id on the same
topic and cluster. Each run takes about a minute (3 members, 3 partitions, bounces 7 s apart, a
rolling switch 3 s apart).
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from tests.support.migration import run_migration

pytestmark = [pytest.mark.migration, pytest.mark.slow]


def _assert_history(
    events: list[dict[str, Any]], members: dict[str, list[dict[str, Any]]], actions: list[str]
) -> None:
    """In their own histories every m* member wrote impl legacy_zk, every c* member impl coordinator,
    on ready and started; the nemesis invoked the migration steps labelled with their action and
    1-based index (``actions``: the unit's migration actions in order); every produced record was
    processed."""
    assert sorted(members) == ["c0", "c1", "c2", "m0", "m1", "m2"]
    for name, es in members.items():
        want = "legacy_zk" if name.startswith("m") else "coordinator"
        for kind in ("ready", "started"):
            seen = {e.get("impl") for e in es if e["kind"] == kind}
            assert seen == {want}, (name, kind, seen)
    invokes = [e for e in events if e["kind"] == "invoke"]
    assert invokes and all(e.get("migration") and e.get("migration_step") for e in invokes)
    steps = sorted({(e["migration_step"], e["migration"]) for e in invokes})
    assert steps == list(enumerate(actions, start=1))
    coordinator_starts = [e for e in invokes if e.get("member_kind") == "coordinator"]
    assert sorted(t for e in coordinator_starts for t in e["targets"]) == ["c0", "c1", "c2"]
    produced = {(e["partition"], e["offset"]) for e in events if e["kind"] == "produced"}
    processed = {(e["partition"], e["offset"]) for e in events if e["kind"] == "record"}
    assert produced and produced <= processed, f"{len(produced - processed)} produced records never processed"


def _partitions(metrics: dict[str, Any]) -> list[dict[str, Any]]:
    """The per-partition proof of the unit's one switch (legacy_zk -> coordinator), which the report
    shows in its Migration proof section."""
    assert "Migration proof" in metrics["summary_md"]
    (unit,) = metrics["units"]
    (switch,) = unit["migration"]["switches"]
    assert (switch["action"], switch["from"], switch["to"]) == ("switch", "legacy_zk", "coordinator")
    parts = switch["partitions"]
    assert sorted(p["partition"] for p in parts) == [0, 1, 2]
    return parts


def test_the_documented_migration_loses_nothing_and_replays_no_more_than_the_uncommitted_window(
    tmp_path: Path,
) -> None:
    events, metrics, members = run_migration("migration", tmp_path)
    _assert_history(events, members, ["set_property", "set_property", "switch"])
    # the bounces started the legacy members with kafka storage, dual commit on, then off
    props = [e.get("props") for e in events if e["kind"] == "invoke" and e.get("migration") == "set_property"]
    on = {"offsets.storage": "kafka", "dual.commit.enabled": "true"}
    off = {"offsets.storage": "kafka", "dual.commit.enabled": "false"}
    assert [p for p in props if p] == [on] * 3 + [off] * 3
    stores = {e.get("store") for e in events if e["kind"] == "commit" and str(e["source"]).startswith("m")}
    assert stores == {"zookeeper", "kafka"}
    m = metrics["migration"]
    assert (m["expect"], m["verdict"], m["as_expected"]) == ("clean", "clean", True)
    _assert_switch_settled(metrics)
    for p in _partitions(metrics):
        assert p["lost"] == 0, p
        assert _count(p["reprocessed"]) <= p["window"], p
        assert p["kafka_committed"] is not None and p["taken_over_s"] is not None, p


def test_a_switch_without_carried_offsets_replays_what_the_legacy_members_had_committed(
    tmp_path: Path,
) -> None:
    events, metrics, members = run_migration("migration-no-dual-commit", tmp_path)
    _assert_history(events, members, ["switch"])
    # from the history alone: no broker offsets, so every coordinator member's first record on each
    # partition is offset 0 (auto.offset.reset earliest), though the legacy members had gone further
    legacy_last: dict[int, int] = defaultdict(lambda: -1)
    first_new: dict[int, int] = {}
    for e in events:
        if e["kind"] != "record":
            continue
        if str(e["source"]).startswith("m"):
            legacy_last[e["partition"]] = max(legacy_last[e["partition"]], e["offset"])
        else:
            first_new.setdefault(e["partition"], e["offset"])
    assert sorted(first_new) == [0, 1, 2]
    assert all(first_new[p] == 0 < legacy_last[p] for p in range(3)), (first_new, dict(legacy_last))
    m = metrics["migration"]
    assert (m["expect"], m["verdict"], m["as_expected"]) == ("replay", "replay", True)
    _assert_switch_settled(metrics)
    parts = _partitions(metrics)
    assert all(p["lost"] == 0 for p in parts)
    assert any(_count(p["reprocessed"]) > p["window"] for p in parts), parts
    assert all(p["kafka_committed"] is None for p in parts), parts


def test_a_rolling_switch_makes_a_mixed_group_that_owns_partitions_twice(tmp_path: Path) -> None:
    events, metrics, members = run_migration("migration-mixed", tmp_path)
    _assert_history(events, members, ["set_property", "switch"])
    m = metrics["migration"]
    assert (m["expect"], m["verdict"], m["as_expected"]) == ("overlap", "overlap", True)
    parts = _partitions(metrics)
    assert all(p["lost"] == 0 for p in parts), parts
    assert any(p["overlap_episodes"] > 0 for p in parts), parts


def _assert_switch_settled(metrics: dict[str, Any]) -> None:
    """The all-at-once switch's trigger (the stop of every legacy member) settled: its window closes
    once the coordinator members that replaced them own every partition once."""
    (unit,) = metrics["units"]
    (t,) = [t for t in unit["triggers"] if t["targets"] == ["m0", "m1", "m2"]]
    assert (t["action"], t["outcome"]) == ("stop_member", "settled"), t


def _count(reprocessed: Any) -> int:
    """``reprocessed`` as a number of offsets (the contract's distinct offsets, a count or a list)."""
    return len(reprocessed) if isinstance(reprocessed, list) else int(reprocessed)
