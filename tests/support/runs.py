"""Runs in tests: scenario overrides (``--set`` values) that shrink a built-in scenario to a test's size
(:data:`FAST`: one repetition, no matrix, short sessions, settle windows and drains, a small produce
rate), and a cluster several runs share (:class:`SharedCluster`)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from harness.run.runner import RunOptions
from harness.scenario import load_scenario

FAST = [
    "repetitions=1",
    "matrix={}",
    "settle_window=1s",
    "stable_timeout=60s",
    "drain=20s",
    "workload.rate=100",
    "group.coordinator.session_timeout_ms=3000",
    "group.coordinator.heartbeat_interval_ms=300",
    "group.coordinator.min_session_timeout_ms=1000",
    "group.coordinator.initial_rebalance_delay_ms=0",
    "group.coordinator.auto_commit_interval_ms=500",
    "group.legacy_zk.zookeeper_session_timeout_ms=3000",
    "group.legacy_zk.rebalance_backoff_ms=500",
    "group.legacy_zk.rebalance_max_retries=10",
    "group.legacy_zk.auto_commit_interval_ms=500",
]


@dataclass(frozen=True)
class SharedCluster:
    """A ZooKeeper and a broker that several runs of one test module share (the ``shared_cluster``
    fixture of ``tests/integration/conftest.py``), used through ``herdlab run``'s ``external`` backend:
    each run gets a topic and group of its own there, so runs do not see each other's members."""

    zookeeper: str
    bootstrap: str

    def options(self, out: Path) -> RunOptions:
        """Run options that put a run's units on this cluster and its results under ``out``."""
        return RunOptions(out=out, backend="external", zookeeper=self.zookeeper, bootstrap=self.bootstrap)


def fast_broker_args() -> list[str]:
    """The broker options a ``local`` run of a scenario shrunk by :data:`FAST` would start its broker with
    (the runner derives them from ``group.coordinator``): a shared broker must behave the same."""
    c = load_scenario("herd", FAST).group.coordinator
    return [
        "--group-initial-rebalance-delay-ms",
        str(c.initial_rebalance_delay_ms),
        "--group-min-session-timeout-ms",
        str(c.min_session_timeout_ms),
        "--no-auto-create-topics",
    ]
