"""The built-in ``coordinator-failover`` scenario end to end for the coordinator implementation, as ``herdlab
run`` does it (three replicating brokers, three ZooKeeper servers, the PySpark checker, the report).

What a user relies on, checked against the history itself (worked out here from the raw events, not read back
from the checker): the killed coordinator's group moves to another broker, which returns every offset the
group committed before the kill; nothing acknowledged is lost; and the checker's failover row for the kill
agrees with those events (its parts add up to the failover, its new coordinator is the broker that served the
group, its offsets lost is 0).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.support.migration import run_migration

pytestmark = pytest.mark.failover


def test_the_coordinator_failover_scenario_moves_the_group_and_keeps_every_committed_offset(
    tmp_path: Path,
) -> None:
    history, metrics, _ = run_migration(
        "coordinator-failover", tmp_path / "out", overrides=('implementations=["coordinator"]',)
    )

    def of(kind: str, **match: Any) -> list[dict[str, Any]]:
        return [e for e in history if e["kind"] == kind and all(e.get(k) == v for k, v in match.items())]

    kill_invoke = of("invoke", action="kill_coordinator")[0]
    killed = kill_invoke["broker_id"]
    t0 = of("complete", action="kill_coordinator")[0]["ts_ns"]
    # the last offset per partition the broker acknowledged before the kill
    committed: dict[int, int] = {}
    for e in sorted(of("commit", role="broker"), key=lambda e: e["ts_ns"]):
        if e["ts_ns"] < t0:
            committed[e["partition"]] = e["offset"]
    assert committed, "no commit was acknowledged before the kill"
    # what the group's coordinator returned once the killed broker was back (the first snapshot after the kill)
    snap = min((e for e in of("offsets_snapshot") if e["ts_ns"] > t0), key=lambda e: e["ts_ns"])
    assert snap.get("error") is None
    for p, offset in committed.items():
        assert snap["offsets"][f"failover/{p}"] >= offset  # never behind an acknowledged commit
    # someone other than the killed broker loaded the group's partition and served the group
    served = [e for e in of("group_served", group="failover") if e["ts_ns"] > t0]
    assert served and served[0]["broker_id"] != killed

    (unit,) = metrics["units"]
    kill_row = next(f for f in unit["failover"]["faults"] if f["action"] == "kill_coordinator")
    parts = [kill_row[k] for k in ("detection_s", "election_s", "loading_s", "rejoin_s")]
    assert all(isinstance(x, float) for x in parts), kill_row
    assert abs(sum(parts) - kill_row["failover_s"]) < 0.01
    assert kill_row["new_coordinator"] == served[0]["broker_id"]
    assert kill_row["offsets_lost"] == 0
    assert kill_row["records_lost"] == 0
    assert "Coordinator failover" in metrics["summary_md"]
