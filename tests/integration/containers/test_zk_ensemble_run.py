"""``herdlab run --backend containers`` with ``zookeeper.servers=3``: the legacy group on an ensemble of
three ZooKeeper containers survives the nemesis killing and pausing the ZooKeeper leader, as on the
local backend (``tests/integration/test_zookeeper_ensemble.py``'s run test, here with containers)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from harness.cluster.containers import ContainersOptions
from harness.history.schema import read_parquet
from harness.images import ImageNames
from harness.run.runner import RunOptions, run_scenario
from harness.scenario import load_scenario
from tests.support.runs import FAST

pytestmark = pytest.mark.containers


def test_a_containers_run_with_three_zookeeper_servers_survives_a_leader_kill_and_a_leader_pause(
    tmp_path: Path, images: ImageNames, baseline: Any
) -> None:
    """The members (processes) get all three servers; each leader fault completes with another
    leader, the killed server is restarted and the paused one resumed, the group ends settled and
    every produced record was processed; nothing of the run is left in the engine (``baseline``)."""
    timeline = (
        'timeline=[{at="1s",action="kill_zk_leader",downtime="2s"},'
        '{at="5s",action="pause_zk_leader",duration="3s"}]'
    )
    extra = ["zookeeper.servers=3", "group.members=3", "topic.partitions=3", timeline]
    s = load_scenario("herd", [*FAST, 'implementations=["legacy_zk"]', *extra])
    options = RunOptions(backend="containers", out=tmp_path, containers=ContainersOptions(images=images))
    result = run_scenario(s, options)
    (unit,) = result.units
    assert "failed" not in unit, unit.get("failed")
    events = read_parquet(result.run_dir / "history.parquet")
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
    # each server's log was saved where the local ensemble keeps it
    unit_dir = result.run_dir / "units" / unit["unit"]
    logs = sorted(unit_dir.glob("cluster/zookeeper/zk-*/zookeeper.log"))
    assert len(logs) == 3 and all(p.read_text().strip() for p in logs)
