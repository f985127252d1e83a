"""End to end: the built-in classic-to-consumer migration scenarios on the local backend with herdlab's broker,
run and analysed as ``herdlab run`` does, each asserting the verdict the scenario exists to show and, from the
history alone, what the run did: classic librdkafka members ``m*`` replaced one by one by librdkafka members
``k*`` with ``group.protocol=consumer`` (and, on the way back, by classic members ``r*``); the broker converted
the group at the first consumer-protocol member and back at the last one's leave."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.support.migration import run_migration

pytestmark = [pytest.mark.migration, pytest.mark.slow]


def _switch(metrics: dict[str, Any], n: int) -> dict[str, Any]:
    (unit,) = metrics["units"]
    return unit["migration"]["switches"][n]


def _clean(switch: dict[str, Any]) -> None:
    assert switch["verdict"] == "clean", switch
    assert sorted(p["partition"] for p in switch["partitions"]) == [0, 1, 2]
    for p in switch["partitions"]:
        assert p["lost"] == 0 and p["overlap_episodes"] == 0, p
        assert p["reprocessed"] <= p["window"], p
        assert p["kafka_committed"] is not None and p["taken_over_s"] is not None, p


def _conversions(events: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return [(e["from_type"], e["to_type"]) for e in events if e["kind"] == "group_converted"]


def test_a_rolling_switch_to_the_consumer_protocol_is_clean(tmp_path: Path) -> None:
    events, metrics, members = run_migration("migration-consumer", tmp_path)
    assert sorted(members) == ["k0", "k1", "k2", "m0", "m1", "m2"]
    for name, es in members.items():
        protocols = {e.get("group_protocol") for e in es if e["kind"] == "started"}
        assert protocols == ({"consumer"} if name.startswith("k") else {None}), (name, protocols)
    assert _conversions(events) == [("classic", "consumer")]
    m = metrics["migration"]
    assert (m["expect"], m["verdict"], m["as_expected"]) == ("clean", "clean", True)
    switch = _switch(metrics, 0)
    assert (switch["action"], switch["from"], switch["to"]) == ("switch", "coordinator", "consumer")
    _clean(switch)


def test_the_way_back_to_the_classic_protocol_is_clean(tmp_path: Path) -> None:
    events, metrics, _members = run_migration("migration-consumer-back", tmp_path)
    assert _conversions(events) == [("classic", "consumer"), ("consumer", "classic")]
    m = metrics["migration"]
    assert (m["verdict"], m["as_expected"]) == ("clean", True)
    back = _switch(metrics, 1)
    assert (back["action"], back["from"], back["to"]) == ("rollback", "consumer", "coordinator")
    _clean(_switch(metrics, 0))
    _clean(back)


def test_a_paused_classic_zombie_during_the_switch_is_an_overlap(tmp_path: Path) -> None:
    events, metrics, _members = run_migration("migration-consumer-zombie", tmp_path)
    assert _conversions(events)[0] == ("classic", "consumer")
    m = metrics["migration"]
    assert (m["expect"], m["verdict"], m["as_expected"]) == ("overlap", "overlap", True)
    switch = _switch(metrics, 0)
    assert (switch["from"], switch["to"]) == ("coordinator", "consumer")
    parts = switch["partitions"]
    assert all(p["lost"] == 0 for p in parts), parts
    assert sum(p["overlap_episodes"] for p in parts) >= 1, parts
