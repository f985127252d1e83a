"""One ``herd`` run with ``zookeeper.servers=3`` whose nemesis kills the ZooKeeper leader (restarting it 2 s
later) and then pauses the new leader for 3 s, and what every backend's run must show afterwards. Shared by
the local (``tests/integration/test_zookeeper_ensemble.py``) and containers
(``tests/integration/containers/test_zk_ensemble_run.py``) run tests."""

from __future__ import annotations

from typing import Any

from harness.history.schema import read_parquet
from harness.run.runner import RunOptions, run_scenario
from harness.scenario import load_scenario
from tests.support.runs import FAST

TIMELINE = 'timeline=[{at="1s",action="kill_zk_leader",downtime="2s"},{at="5s",action="pause_zk_leader",duration="3s"}]'


def run_leader_faults(impl: str, options: RunOptions) -> tuple[Any, dict[str, Any], list[dict[str, Any]]]:
    """Run the scenario for ``impl``; ``(result, its one unit, its history)``, the unit not failed."""
    extra = ["zookeeper.servers=3", "group.members=3", "topic.partitions=3", TIMELINE]
    result = run_scenario(load_scenario("herd", [*FAST, f'implementations=["{impl}"]', *extra]), options)
    (unit,) = result.units
    assert "failed" not in unit, unit.get("failed")
    return result, unit, read_parquet(result.run_dir / "history.parquet")


def assert_the_group_survived_the_leader_faults(unit: dict[str, Any], events: list[dict[str, Any]]) -> None:
    """Each fault completed with another leader; the killed server was restarted and the paused one resumed
    (the same servers); mntr always summed two or three servers; every produced record was processed and
    the group ended settled."""
    done = {
        e["action"]: e
        for e in events
        if e["kind"] == "complete" and e.get("action") in ("kill_zk_leader", "pause_zk_leader")
    }
    assert set(done) == {"kill_zk_leader", "pause_zk_leader"}
    for e in done.values():
        assert e["old_leader"] != e["new_leader"] and e["elected_s"] > 0
    ends = sorted(
        (e["action"], e["server"])
        for e in events
        if e["kind"] == "complete" and e.get("action") in ("restart_zk_server", "resume_zk_server")
    )
    assert ends == sorted(
        [
            ("restart_zk_server", done["kill_zk_leader"]["old_leader"]),
            ("resume_zk_server", done["pause_zk_leader"]["old_leader"]),
        ]
    )
    mntr = [e for e in events if e["kind"] == "zk_mntr"]
    assert mntr and all(e["counters"]["servers"] in (2, 3) for e in mntr)
    produced = {(e["partition"], e["offset"]) for e in events if e["kind"] == "produced"}
    processed = {(e["partition"], e["offset"]) for e in events if e["kind"] == "record"}
    assert produced and produced <= processed
    assert unit["settled_at_end"]
