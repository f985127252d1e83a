"""Scenario overrides (``--set`` values) that shrink a built-in scenario to a test's size: one
repetition, no matrix, short sessions, settle windows and drains, a small produce rate."""

from __future__ import annotations

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
