"""A :class:`harness.run.rig.RigSpec` for tests: one unit on the local backend, topic ``t``, group ``g``."""

from __future__ import annotations

from pathlib import Path

from harness.cluster.containers import ContainersOptions
from harness.run.plan import Plan
from harness.run.rig import RigSpec
from harness.scenario.model import Scenario


def local_rig_spec(scenario: Scenario, impl: str, plan: Plan, partitions: int, root: Path) -> RigSpec:
    """The unit's spec with its events, logs and cluster directories under ``root`` (not created)."""
    return RigSpec(
        scenario=scenario,
        impl=impl,
        plan=plan,
        topic="t",
        group="g",
        partitions=partitions,
        events_dir=root / "events",
        logs_dir=root / "logs",
        cluster_dir=root / "cluster",
        backend="local",
        zookeeper=None,
        bootstrap=None,
        zk_tick_ms=200,
        containers=ContainersOptions(),
        labels={},
    )
