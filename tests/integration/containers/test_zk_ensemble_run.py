"""``herdlab run --backend containers`` with ``zookeeper.servers=3``: the legacy group on an ensemble of
three ZooKeeper containers survives the nemesis killing and pausing the ZooKeeper leader, as on the
local backend (``tests/integration/test_zookeeper_ensemble.py``'s run test, here with containers)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from harness.cluster.containers import ContainersOptions
from harness.images import ImageNames
from harness.run.runner import RunOptions
from tests.support.zk_leader_runs import assert_the_group_survived_the_leader_faults, run_leader_faults

pytestmark = pytest.mark.containers


def test_a_containers_run_with_three_zookeeper_servers_survives_a_leader_kill_and_a_leader_pause(
    tmp_path: Path, images: ImageNames, baseline: Any
) -> None:
    """The members (processes) get all three servers; each leader fault completes with another
    leader, the killed server is restarted and the paused one resumed, the group ends settled and
    every produced record was processed; nothing of the run is left in the engine (``baseline``)."""
    options = RunOptions(backend="containers", out=tmp_path, containers=ContainersOptions(images=images))
    result, unit, events = run_leader_faults("legacy_zk", options)
    assert_the_group_survived_the_leader_faults(unit, events)
    # each server's log was saved where the local ensemble keeps it
    unit_dir = result.run_dir / "units" / unit["unit"]
    logs = sorted(unit_dir.glob("cluster/zookeeper/zk-*/zookeeper.log"))
    assert len(logs) == 3 and all(p.read_text().strip() for p in logs)
